"""The memory tool's file index: which entry is which file, one record per user.

The record (kind ``memory_file_index``, id ``files``, partition ``(instance_id, upn)``) holds a
tree for user memory (``user``) and one per agent (``agents``, by the agent's object id): its
files, each an entry id and the text's SHA-256 (or, for whitespace-only text, the text itself),
and its directories. Entries no file names show as files of their own under appended/. Here: the
namespace an index and the caller's visible entries make, and the index a changed namespace
makes; reading and committing the record under its etag is ``memory_file_service``'s.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from memory_core.domain.file_entries import FileEntries
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_files import AGENT_DIR, APPENDED_DIR, FileNode, Namespace, is_agent_path, parents
from memory_core.domain.models import MemoryEntry, sha256_hex
from memory_core.domain.records import Record

INDEX_KIND = "memory_file_index"
INDEX_ID = "files"


def namespace_of(
    caller: Caller, agent: AgentContext | None, record: Record | None, entries: FileEntries[Namespace]
) -> Namespace:
    """The files and directories the index (``record``) and the visible entries of ``entries`` make.

    The caller's visible entries, and the appended files they make, are found once per ``entries``
    (and carried over when they are grown or refreshed): a new index version costs its own files,
    not a walk over every entry."""
    data = record.data if record else {}
    ns = Namespace()
    indexed: list[str] = []
    upn = caller.upn
    for agent_scope in entries.states:
        tree = _tree(data, agent.object_id if agent_scope and agent else None)
        mount = AGENT_DIR + "/" if agent_scope else ""
        appended = mount + APPENDED_DIR + "/"
        own: dict[str, MemoryEntry] = entries.by_visible(agent_scope, ("own", upn), functools.partial(_own, upn))
        named: set[str] = set()
        files_before = len(ns.files)
        for rel, slot in tree["files"].items():
            entry_id = slot.get("entry_id")
            if entry_id is None:
                ns.files[mount + rel] = FileNode(str(slot.get("text") or ""))
            elif entry_id in own:
                ns.files[mount + rel] = FileNode(own[entry_id].content_markdown, entry_id)
                named.add(entry_id)
            else:
                continue
            indexed.append(mount + rel)
        unnamed: dict[str, FileNode] = entries.by_visible(
            agent_scope, ("appended", upn, appended), functools.partial(_appended_file, upn, appended))
        if named and unnamed:
            unnamed = dict(unnamed)
            for entry_id in named:
                unnamed.pop(f"{appended}{entry_id}.md", None)
        if unnamed:  # every appended file has the same parents: found once, not once per entry
            ns.files.update(unnamed)
            ns.dirs.update(parents(appended + "_"))
        ns.dirs.update(mount + d if d else AGENT_DIR for d in tree["dirs"])
        if agent_scope and len(ns.files) > files_before:  # the user's own files never lie under agent/
            ns.dirs.add(AGENT_DIR)
    for rel in indexed:
        ns.dirs.update(parents(rel))
    return ns


def _own(upn: str, entry: MemoryEntry) -> tuple[str, MemoryEntry] | None:
    """An entry ``upn`` wrote, by id (the files show only the caller's own entries)."""
    return (entry.id, entry) if entry.author_upn == upn else None


def _appended_file(upn: str, appended: str, entry: MemoryEntry) -> tuple[str, FileNode] | None:
    """The file under ``appended`` that an entry ``upn`` wrote shows as, when no index names it; none
    for whitespace (it cannot be a file of its own)."""
    if entry.author_upn != upn or not entry.content_markdown.strip():
        return None
    return f"{appended}{entry.id}.md", FileNode(entry.content_markdown, entry.id, True)


def index_data(
    record: Record | None, entries: FileEntries[Namespace], agent: AgentContext | None, after: Namespace
) -> dict[str, Any]:
    """The index ``record`` becomes once the namespace is ``after``: the trees of the scopes ``entries``
    read, rewritten; a file hidden by a pending deletion (a clear, a forget) keeps its place, so that a
    rejection restores it; every other tree (other agents') kept as it was."""
    data: dict[str, Any] = dict(record.data) if record else {"version": 1}
    agents: dict[str, Any] = dict(data.get("agents") or {})
    for agent_scope in entries.states:
        stored, visible = entries.scope_ids(agent_scope), entries.visible_ids(agent_scope)
        old_tree = _tree(data, agent.object_id if agent_scope and agent else None)
        tree = _tree_of(after, agent_scope)
        for rel, slot in old_tree["files"].items():
            held = slot.get("entry_id") in stored and slot.get("entry_id") not in visible
            if held and rel not in tree["files"]:
                tree["files"][rel] = slot
        if agent_scope and agent is not None:
            agents[agent.object_id] = tree
        else:
            data["user"] = tree
    data["agents"] = agents
    return data


def _tree(data: Mapping[str, Any], agent_object_id: str | None) -> dict[str, Any]:
    raw = (data.get("agents") or {}).get(agent_object_id) if agent_object_id else data.get("user")
    raw = raw or {}
    return {"files": dict(raw.get("files") or {}), "dirs": list(raw.get("dirs") or [])}


def _tree_of(ns: Namespace, agent_scope: bool) -> dict[str, Any]:
    """The index tree of one scope: its non-derived files and its directories ("" is the agent mount)."""
    mount = AGENT_DIR + "/" if agent_scope else ""
    files: dict[str, Any] = {}
    for rel, node in ns.files.items():
        if node.derived or is_agent_path(rel) != agent_scope:  # derived first: most files are appended ones
            continue
        local = rel[len(mount):]
        files[local] = (
            {"entry_id": node.entry_id, "sha256": sha256_hex(node.text)}
            if node.entry_id
            else {"entry_id": None, "text": node.text, "sha256": sha256_hex(node.text)}
        )
    if agent_scope:
        dirs = ["" if d == AGENT_DIR else d[len(mount):] for d in ns.dirs if is_agent_path(d)]
    else:
        dirs = [d for d in ns.dirs if not is_agent_path(d)]
    # appended/ is shown while something is in it; it is never kept as a directory of its own.
    return {"files": files, "dirs": sorted(d for d in dirs if d != APPENDED_DIR)}
