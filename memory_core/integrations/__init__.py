"""Optional integrations of memory-core with agent frameworks.

Nothing here is imported by the Function app. Each integration needs its own
extra requirements (for example ``requirements-agent-framework.txt``) and is
imported explicitly, e.g. ``from memory_core.integrations.agent_framework import
MemoryCoreContextProvider``.
"""
