"""The hosted MCP endpoint: get_memory, append_memory and clear_memory over streamable HTTP.

Kept apart like the MCP SDK itself:

- ``tools``: the memory tools, on the server ``server`` shapes (one error path,
  tools only); ``call_targets`` resolves a call's identity and target from trusted
  request headers, ``tool_results`` is what a tool answers (errors included);
- ``backend``: where the tools read and write memory (the service layer in
  process, or any CoreAPI over HTTP);
- ``transport``: the outer ASGI app (POST only, DNS-rebinding protection) and
  the Azure Functions glue that function_app.py routes ``/api/mcp`` to.
"""
