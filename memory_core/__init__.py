"""memory-core: a personalized memory service for AI agents.

The package is laid out by dependency direction:

* ``memory_core.domain`` - models, rules, use cases and the store Protocol.
  It imports nothing from Azure, SQLite, HTTP or MCP.
* ``memory_core.adapters`` - store implementations (SQLite, Cosmos DB).
* ``memory_core.api`` - the HTTP entry points wired by ``function_app.py``.
* ``memory_core.local`` - the local host that serves ``function_app.py``.
* ``memory_core.composition`` - the one place that builds the service.
"""

__version__ = "0.1.0"
