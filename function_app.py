"""Azure Functions entry point (Python v2 programming model).

Only wiring lives here: each route is handed to a function in ``memory_core``.
Nothing is built at import time; the service is composed on the first request.
``EdgeApp`` accepts only functions made by ``memory_core.edge.endpoint``, so
every route passes the same edge (docs/architecture.md).
"""

import azure.functions as func

from memory_core.api import entries, memory_files, operator, rest
from memory_core.api import scopes as agent_scopes
from memory_core.api.openapi import openapi_endpoint
from memory_core.console import handler as console
from memory_core.edge import EdgeApp
from memory_core.mcp import transport as mcp_transport
from memory_core.mcp.authorization import METADATA_ROUTE, oauth_protected_resource

app = EdgeApp(http_auth_level=func.AuthLevel.ANONYMOUS)

# CoreAPI memory endpoints
app.route(route="instances/{instanceId}/memory", methods=["GET"])(rest.get_memory)
app.route(route="instances/{instanceId}/memory/append", methods=["POST"])(rest.append_memory)
app.route(route="instances/{instanceId}/memory/clear", methods=["POST"])(rest.clear_memory)
app.route(route="instances/{instanceId}/memory/export", methods=["GET"])(rest.export_memory)
app.route(route="instances/{instanceId}/memory/import", methods=["POST"])(rest.import_memory)

# Entries, search, and the user's own audit trail and deletion requests
app.route(route="instances/{instanceId}/memory/entries", methods=["GET"])(entries.list_entries)
app.route(route="instances/{instanceId}/memory/entries/{entryId}", methods=["DELETE"])(entries.forget_entry)
# search: POST (the words in the body, preferred: URLs are logged) and GET (the query string, kept for callers)
app.route(route="instances/{instanceId}/memory/search", methods=["GET", "POST"])(entries.search_memory)
app.route(route="instances/{instanceId}/memory/audit", methods=["GET"])(entries.read_own_audit)
app.route(route="instances/{instanceId}/memory/deletions", methods=["GET"])(entries.list_own_deletions)
app.route(route="instances/{instanceId}/memory/agents", methods=["GET"])(agent_scopes.list_agents)

# Claude's memory tool (memory_20250818): one function per command over the file view of memory
app.route(route="instances/{instanceId}/memory/files/view", methods=["POST"])(memory_files.view_file)
app.route(route="instances/{instanceId}/memory/files/create", methods=["POST"])(memory_files.create_file)
app.route(route="instances/{instanceId}/memory/files/str_replace", methods=["POST"])(memory_files.str_replace_file)
app.route(route="instances/{instanceId}/memory/files/insert", methods=["POST"])(memory_files.insert_file)
app.route(route="instances/{instanceId}/memory/files/delete", methods=["POST"])(memory_files.delete_file)
app.route(route="instances/{instanceId}/memory/files/rename", methods=["POST"])(memory_files.rename_file)

# Operator endpoints (operator keys); "admin" routes are reserved by the Functions host
app.route(route="instances/{instanceId}/operator/deletions", methods=["GET"])(operator.list_deletions)
app.route(route="instances/{instanceId}/operator/deletions/{requestId}/approve", methods=["POST"])(
    operator.approve_deletion
)
app.route(route="instances/{instanceId}/operator/deletions/{requestId}/reject", methods=["POST"])(
    operator.reject_deletion
)
app.route(route="instances/{instanceId}/operator/deletions/{requestId}/dismiss", methods=["POST"])(
    operator.dismiss_deletion
)
app.route(route="instances/{instanceId}/operator/orphan-holds", methods=["GET"])(operator.list_orphan_holds)
app.route(route="instances/{instanceId}/operator/orphan-holds/{requestId}/release", methods=["POST"])(
    operator.release_orphan_hold
)
app.route(route="instances/{instanceId}/operator/orphan-holds/release", methods=["POST"])(
    operator.release_named_orphan_hold
)
app.route(route="instances/{instanceId}/operator/purges", methods=["POST"])(operator.request_purge)
app.route(route="instances/{instanceId}/operator/forgets", methods=["POST"])(operator.request_forget)
app.route(route="instances/{instanceId}/operator/sweep", methods=["POST"])(operator.run_sweep)
app.route(route="instances/{instanceId}/operator/hidden-text", methods=["GET"])(operator.scan_hidden_text)
app.route(route="instances/{instanceId}/operator/audit", methods=["GET"])(operator.read_audit)
app.route(route="instances/{instanceId}/operator/agent-settings", methods=["GET"])(operator.get_agent_settings)
app.route(route="instances/{instanceId}/operator/agent-settings", methods=["PUT"])(operator.put_agent_settings)
app.route(route="instances/{instanceId}/operator/agent-settings", methods=["DELETE"])(
    operator.delete_agent_settings
)
app.route(route="instances/{instanceId}/operator/agents", methods=["GET"])(operator.list_agent_settings)
app.route(route="instances/{instanceId}/operator/agent-settings/audit", methods=["GET"])(
    operator.read_agent_settings_audit
)
app.route(route="instances/{instanceId}/operator/legacy-imports", methods=["POST"])(operator.import_legacy)
app.route(route="instances/{instanceId}/operator/legacy-imports/audit", methods=["GET"])(
    operator.read_legacy_import_audit
)

# The hosted MCP endpoint (streamable HTTP, stateless); it serves POST (and OPTIONS);
# GET, DELETE, PUT and PATCH are routed so that the endpoint answers them 405 (Allow: POST), as the protocol asks
app.route(route="mcp", methods=["POST", "OPTIONS", "GET", "DELETE", "PUT", "PATCH"])(mcp_transport.mcp)
# Its OAuth protected resource metadata (RFC 9728), named by every 401 from /api/mcp in entra mode
app.route(route=METADATA_ROUTE, methods=["GET"])(oauth_protected_resource)

# The deletion sweep, on MEMORY_SWEEP_SCHEDULE (NCRONTAB)
app.timer_trigger(schedule="%MEMORY_SWEEP_SCHEDULE%", arg_name="timer", run_on_startup=False)(operator.sweep_timer)

# The API's own description
app.route(route="openapi.json", methods=["GET"])(openapi_endpoint(app))

# The web console (docs/console.md): the page, its public config and its versioned assets; no credential
# (OPTIONS too, so that it is the edge's to answer, with the console's security headers)
app.route(route="console", methods=["GET", "OPTIONS"])(console.console_page)
app.route(route="console/{*path}", methods=["GET", "OPTIONS"])(console.console_asset)
