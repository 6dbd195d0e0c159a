"""The hosted MCP endpoint: get_memory, append_memory and clear_memory over streamable HTTP.

Kept apart like the MCP SDK itself:

- ``tools``: the MCP server, its three tools, and how a call's identity and
  target are resolved from trusted request headers;
- ``backend``: where the tools read and write memory (the service layer in
  process, or any CoreAPI over HTTP);
- ``transport``: the outer ASGI app (POST only, DNS-rebinding protection) and
  the Azure Functions glue that function_app.py routes ``/api/mcp`` to.
"""
