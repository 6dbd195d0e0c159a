"""The wire schemas: JSON documents exchanged over HTTP, shared by api/, mcp/ and the client.

- ``memory``: the CoreAPI memory endpoints' requests and answers;
- ``custody``: entries, search, audit, deletions and operator documents;
- ``agents``: the agents that keep memory about a caller (the console's agent list);
- ``errors``: the one error document ``{"error": {"code", "message", "details"}}``;
- ``json_text``: the one strict JSON decoder for untrusted text.
- ``field_names``: where a validation error is, as every message that names a field spells it.

Nothing here imports HTTP, Azure or MCP: only pydantic and the domain.
"""
