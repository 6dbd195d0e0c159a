"""Reading a FunctionApp's function table more than once.

``FunctionApp.get_functions()`` records the names it has seen and refuses a
second call as "duplicate names"; the Functions worker calls it once while
indexing. The OpenAPI document and the local host read the same table again,
so they clear that record around their call and put it back afterwards.
"""

from __future__ import annotations

import threading

import azure.functions as func
from azure.functions.decorators.core import Trigger
from azure.functions.decorators.function_app import Function

_lock = threading.Lock()


def functions_of(app: func.FunctionApp) -> list[Function]:
    """Every function declared on ``app``, without disturbing the worker's own indexing."""
    with _lock:
        seen = app.functions_bindings
        app.functions_bindings = None
        try:
            return app.get_functions()
        finally:
            app.functions_bindings = seen


def http_methods(trigger: Trigger | None) -> list[str]:
    """The HTTP methods an httpTrigger accepts (GET and POST when none are listed)."""
    methods = getattr(trigger, "methods", None) or ["GET", "POST"]
    return [str(getattr(m, "value", m)).upper() for m in methods]
