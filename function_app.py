"""Azure Functions entry point (Python v2 programming model).

Only wiring lives here: each route is handed to a function in ``memory_core``.
Nothing is built at import time; the service is composed on the first request.
"""

import azure.functions as func

from memory_core.api import rest
from memory_core.api.openapi import openapi_endpoint

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

# CoreAPI memory endpoints
app.route(route="instances/{instanceId}/memory", methods=["GET"])(rest.get_memory)
app.route(route="instances/{instanceId}/memory/append", methods=["POST"])(rest.append_memory)
app.route(route="instances/{instanceId}/memory/clear", methods=["POST"])(rest.clear_memory)
app.route(route="instances/{instanceId}/memory/export", methods=["GET"])(rest.export_memory)
app.route(route="instances/{instanceId}/memory/import", methods=["POST"])(rest.import_memory)

# The API's own description
app.route(route="openapi.json", methods=["GET"])(openapi_endpoint(app))
