"""The names in one directory of the memory tool's namespace, and the names create and rename may not bring into
being: the service's own directories (``refuse_reserved``), and a look-alike of a name beside the new one
(``refuse_lookalike``, the rule ``memory_paths.refuse_lookalike`` states).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from memory_core.domain import memory_paths as texts
from memory_core.domain.memory_paths import MemoryPath

AGENT_DIR = "agent"
"""The calling agent's own memory (agent scope) is mounted at /memories/agent."""

APPENDED_DIR = "appended"
"""Entries written through MCP or REST (not as files) show as appended/<entry id>.md."""

# Names create and rename cannot bring into being: the directories the service shows. A file at appended/ would stand
# at the path of the directory of appended entries, and win in view, hiding every one of them; one at agent/ would be
# stored at the agent tree's own root (an empty name) and never be read back.
_RESERVED = {
    AGENT_DIR: "the calling agent's own memory",
    APPENDED_DIR: "entries written outside the memory tool",
    f"{AGENT_DIR}/{APPENDED_DIR}": "the agent's entries written outside the memory tool",
}

# Where the appended entries show (``file_index.namespace_of``): the only directories holding files no index names.
_APPENDED_DIRS = (APPENDED_DIR, f"{AGENT_DIR}/{APPENDED_DIR}")


def names_in(rel: str, files: Iterable[str], indexed: Iterable[str] | None, dirs: Iterable[str]) -> list[str]:
    """The names of the files and directories directly in directory ``rel`` (not below them), of a namespace's
    ``files``, ``dirs`` and, when it was made from an index, the paths the index names (``indexed``)."""
    # The appended entries (60,000 of them, say) lie only in the appended/ directories: the paths of any other
    # directory are among the index's own (at most the file bound, MAX_FILES) and the directories. One test per
    # path, no more: the names are what a check folds (``lookalike_names.lookalike_of``), and only this directory's.
    paths = itertools.chain(indexed if indexed is not None and rel not in _APPENDED_DIRS else files, dirs)
    if not rel:
        return [path for path in paths if "/" not in path]
    prefix = rel + "/"
    start = len(prefix)
    return [path[start:] for path in paths if path.startswith(prefix) and "/" not in path[start:]]


def refuse_reserved(target: MemoryPath) -> None:
    """``InvalidInput`` for a new name the service's own directories hold."""
    if target.rel in _RESERVED:
        raise texts.reserved_path(target.given, _RESERVED[target.rel])


def refuse_lookalike(target: MemoryPath, exists: Callable[[str], bool], names: Callable[[str], Iterable[str]],
                     moving: str | None = None) -> None:
    """``memory_paths.refuse_lookalike`` for a new name beside the service's own directories."""
    texts.refuse_lookalike(target, exists, names, _RESERVED, moving=moving)
