"""Where in a document a validation error is: pydantic's ``loc`` as the field name a message shows.

One spelling for every message that names a field: the edge's error details (``details[].field``), the MCP
tools' and envelope's refusals, a refused X-USER-IDENTITY or identity claims, and the settings a
configuration error names. Imports nothing (the settings module, which may import only the error family
besides, uses it too), and never reads the value that failed, so no message built from it echoes one.
"""

from __future__ import annotations

from collections.abc import Sequence


def field_name(loc: Sequence[int | str], *, whole: str = "", bracketed_indexes: bool = False) -> str:
    """The members of ``loc`` joined by dots (``entries.0.content``); with ``bracketed_indexes``, list positions
    in brackets instead (``group_ids[1]``). ``whole`` when ``loc`` is empty: the error is about the document itself.
    """
    if bracketed_indexes:
        name = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    else:
        name = ".".join(str(part) for part in loc)
    return name or whole
