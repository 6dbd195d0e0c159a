"""The memory tool's file index: which entry is which file, one record per user.

The record (kind ``memory_file_index``, id ``files``, partition ``(instance_id, upn)``) holds a
tree for user memory (``user``) and one per agent (``agents``, by the agent's object id): its
files, each an entry id and the text's SHA-256 (or, for whitespace-only text, the text itself),
its directories, and when each directory and whitespace-only file was made (``made``). Entries no
file names show as files of their own under appended/. Here: the namespace an index and the
caller's visible entries make, the index a changed namespace makes, and the index without what an
erasure took; reading and committing the record under its etag is ``memory_file_service``'s, and
erasing from it ``service``'s and ``custody``'s.

A directory or a whitespace-only file is no entry, but it is the user's words all the same (a
name) and a model reads it: it follows its scope's custody as an entry made when it was made
would. A clear, an import-replace or a purge hides it at once, pending or not, and a rejection
shows it again; the erasure that executes them takes it out of the index (``erased``). One stored
before stamps were kept counts as made at the start of time for the deletions to come (the next
clear takes it), but not for a clear already done, which it may have been made after.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from memory_core.domain.directory_names import AGENT_DIR, APPENDED_DIR
from memory_core.domain.file_entries import FileEntries
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_files import FileNode, Namespace, is_agent_path, parents
from memory_core.domain.models import EntryKind, MemoryEntry, ScopeState, sha256_hex
from memory_core.domain.records import Record

INDEX_KIND = "memory_file_index"
INDEX_ID = "files"
# When a directory or whitespace-only file stored without a stamp was made, as far as custody knows.
_UNSTAMPED = datetime(1970, 1, 1, tzinfo=UTC)


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
    for agent_scope, state in entries.states.items():
        tree = _tree(data, agent.object_id if agent_scope and agent else None)
        mount = AGENT_DIR + "/" if agent_scope else ""
        appended = mount + APPENDED_DIR + "/"
        own: dict[str, MemoryEntry] = entries.by_visible(agent_scope, ("own", upn), functools.partial(_own, upn))
        shown = functools.partial(_shown, state, entries.visible(agent_scope), upn, tree["made"])
        named: set[str] = set()
        files_before = len(ns.files)
        for rel, slot in tree["files"].items():
            entry_id = slot.get("entry_id")
            if entry_id is None:
                if not shown(rel):
                    continue
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
            unnamed = unnamed.copy()  # one step, where dict() goes key by key once a key was ever removed
            for entry_id in named:
                unnamed.pop(f"{appended}{entry_id}.md", None)
        if unnamed:  # every appended file has the same parents: found once, not once per entry
            ns.files.update(_beside_named(unnamed, ns.files))
            ns.dirs.update(parents(appended + "_"))
        ns.dirs.update(mount + d if d else AGENT_DIR for d in tree["dirs"] if shown(d))
        if agent_scope and len(ns.files) > files_before:  # the user's own files never lie under agent/
            ns.dirs.add(AGENT_DIR)
    for rel in indexed:
        ns.dirs.update(parents(rel))
    ns.indexed = tuple(indexed)
    return ns


def _beside_named(unnamed: dict[str, FileNode], files: Mapping[str, FileNode]) -> dict[str, FileNode]:
    """``unnamed`` with each entry's file moved aside (``<entry id>-1.md``) where a file the index names holds its path:
    a file made at appended/<id>.md while that entry was hidden by a pending forget, which a rejection then showed
    again. What the model wrote at a path is what it reads there, and the entry is still a file it can reach."""
    if not unnamed.keys() & files.keys():  # walks the smaller: the named files, not every appended one
        return unnamed
    clashes = [path for path in unnamed if path in files]
    moved = unnamed.copy()
    for path in clashes:
        node = moved.pop(path)
        number = 1
        while (aside := f"{path[:-3]}-{number}.md") in files or aside in moved:
            number += 1
        moved[aside] = node
    return moved


def _shown(state: ScopeState, visible: list[MemoryEntry], upn: str, made: Mapping[str, str], rel: str) -> bool:
    """Whether the directory or whitespace-only file ``rel`` of ``state``'s tree shows: an entry made when it was
    would (not before the scope's clear watermark, under a hold, or before the newest visible replace)."""
    return _covered(state, visible, upn, _made_on(made, rel)) is None


def _covered(state: ScopeState, visible: list[MemoryEntry], upn: str, made_on: datetime | None) -> str | None:
    """What hides an item made at ``made_on`` in ``state``'s scope: "watermark" (erased by a clear or replace that
    is done), "hold" (a pending deletion: a rejection shows it again), "replace" (a newer replace), or None.

    An item stored before stamps (``made_on`` None) may have been made after a clear that is done, so it is hidden
    only by a deletion pending now, as made at the start of time; the next erasure of its scope takes it."""
    if made_on is None:
        return "hold" if any(hold.covers_facts(state.key.profile_id, upn, _UNSTAMPED, "")
                             for hold in state.holds) else None
    watermark = state.profile.cleared_on if state.profile else None
    if watermark is not None and made_on <= watermark:
        return "watermark"
    if any(hold.covers_facts(state.key.profile_id, upn, made_on, "") for hold in state.holds):
        return "hold"
    if visible and visible[0].kind is EntryKind.REPLACE and made_on < visible[0].created_on:
        return "replace"
    return None


def _made_on(made: Mapping[str, str], rel: str) -> datetime | None:
    stamp = made.get(rel)
    return datetime.fromisoformat(stamp) if stamp else None


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
    record: Record | None,
    entries: FileEntries[Namespace],
    agent: AgentContext | None,
    after: Namespace,
    caller: Caller,
    now: datetime,
) -> dict[str, Any]:
    """The index ``record`` becomes once the namespace is ``after``: the trees of the scopes ``entries``
    read, rewritten; a file or directory hidden by a pending deletion (a clear, a forget) keeps its place, so that
    a rejection restores it; every other tree (other agents') kept as it was. A directory or whitespace-only file
    new in ``after`` is stamped ``now``; one a done clear or a replace hides is left out, erased."""
    data: dict[str, Any] = dict(record.data) if record else {"version": 1}
    agents: dict[str, Any] = dict(data.get("agents") or {})
    for agent_scope, state in entries.states.items():
        stored, visible = entries.scope_ids(agent_scope), entries.visible_ids(agent_scope)
        old_tree = _tree(data, agent.object_id if agent_scope and agent else None)
        tree = _tree_of(after, agent_scope)
        old_made: Mapping[str, str] = old_tree["made"]
        old_items = [*old_tree["dirs"], *(r for r, slot in old_tree["files"].items() if not slot.get("entry_id"))]
        hidden = {rel: _covered(state, entries.visible(agent_scope), caller.upn, _made_on(old_made, rel))
                  for rel in old_items}
        # What ``after`` shows was shown before, with its stamp (or none, as stored before stamps), or is made by
        # this command: a name the snapshot hid, made again, is new too.
        made: dict[str, str] = {}
        for rel in [*tree["dirs"], *(r for r, slot in tree["files"].items() if not slot["entry_id"])]:
            if rel not in hidden or hidden[rel] is not None:
                made[rel] = now.isoformat()
            elif rel in old_made:
                made[rel] = old_made[rel]
        # What a pending deletion hides keeps its place and its stamp (or none), so that a rejection restores it;
        # unless ``after`` made something that place would clash with (``_clashes``).
        shown_files, shown_dirs = set(tree["files"]), set(tree["dirs"])
        for rel, slot in old_tree["files"].items():
            held = (slot.get("entry_id") in stored and slot.get("entry_id") not in visible) or hidden.get(rel) == "hold"
            if held and rel not in tree["files"] and not _clashes(rel, shown_files, shown_dirs, as_file=True):
                tree["files"][rel] = slot
                if rel in old_made:
                    made[rel] = old_made[rel]
        kept_dirs = set(tree["dirs"])
        for rel in old_tree["dirs"]:
            if rel not in kept_dirs and hidden[rel] == "hold" and not _clashes(rel, shown_files, shown_dirs):
                tree["dirs"].append(rel)
                if rel in old_made:
                    made[rel] = old_made[rel]
        tree = _stored(tree["files"], tree["dirs"], made)
        if agent_scope and agent is not None:
            agents[agent.object_id] = tree
        else:
            data["user"] = tree
    data["agents"] = _without_empty(agents)
    return data


def _clashes(rel: str, files: Collection[str], dirs: Collection[str], *, as_file: bool = False) -> bool:
    """Whether a held file (``as_file``) or directory at ``rel`` clashes with the ``files`` and ``dirs`` a command
    made while it was hidden: a file stands at ``rel`` or above it, or, for a held file, a directory stands at ``rel``.
    Brought back, one path would be a file and a directory at once, listed as the file, and what lies below it in no
    listing. What the model made keeps the path: the held file's entry, no longer named, shows under appended/ once a
    rejection shows it again (a whitespace-only file, no entry, goes: it holds no words), and the held directory, a
    name with nothing of its own, goes."""
    return (rel in files if not as_file else rel in dirs) or any(parent in files for parent in parents(rel))


def files_elsewhere(record: Record | None, agent: AgentContext | None) -> int:
    """How many files the index names in the trees a command under ``agent`` does not read: every other agent's.
    The index is one record, already read: counting them costs nothing, and a user's file bound is the user's, not
    one per agent."""
    agents: Mapping[str, Any] = (record.data.get("agents") or {}) if record else {}
    return sum(len((tree or {}).get("files") or {}) for object_id, tree in agents.items()
               if agent is None or object_id != agent.object_id)


def _without_empty(agents: Mapping[str, Any]) -> dict[str, Any]:
    """The agent trees that name something. Every command under an agent rewrites that agent's tree, so an empty one
    was kept for every agent a user ever called: a thousand long agent ids filled the index's 1 MiB, and the user,
    with no file left to delete, could make none. An empty tree reads as a missing one (``_tree``); the mount alone
    ("") is the service's directory, shown while the agent has something, as appended/ is."""
    return {object_id: tree for object_id, tree in agents.items()
            if (tree or {}).get("files") or any(rel for rel in (tree or {}).get("dirs") or ())}


def erased(
    data: Mapping[str, Any], agent_object_ids: Collection[str | None] | None, made_by: datetime | None,
    entry_ids: Collection[str],
) -> dict[str, Any] | None:
    """The index ``data`` without what an erasure took and without empty agent trees, or None when it took nothing
    from it and holds no empty tree: in the trees of
    ``agent_object_ids`` (None in it: user memory; ``agent_object_ids`` None: every tree), the files of
    ``entry_ids`` and the directories above them that hold nothing else then (a path is the user's words too),
    and the directories and whitespace-only files made at or before ``made_by`` (a clear's, a replace's or a
    purge's watermark; one stored before stamps counts as made at the start of time)."""
    trees = {None: data.get("user") or {}, **(data.get("agents") or {})}
    changed: dict[str | None, dict[str, Any]] = {}
    for object_id in trees if agent_object_ids is None else agent_object_ids:
        if object_id not in trees:
            continue
        tree = _tree(data, object_id)
        made = tree["made"]

        def taken(rel: str, made: Mapping[str, str] = made) -> bool:
            return made_by is not None and (_made_on(made, rel) or _UNSTAMPED) <= made_by

        files = {rel: slot for rel, slot in tree["files"].items()
                 if not (slot.get("entry_id") in entry_ids or (slot.get("entry_id") is None and taken(rel)))}
        dirs = [rel for rel in tree["dirs"] if not taken(rel)]
        emptied = {parent for rel in tree["files"] if rel not in files for parent in parents(rel)}
        for parent in sorted(emptied, key=len, reverse=True):  # the deepest first: its parent may empty with it
            below = parent + "/"
            if not any(rel.startswith(below) for rel in [*files, *dirs]):
                dirs = [rel for rel in dirs if rel != parent]
        if len(files) < len(tree["files"]) or len(dirs) < len(tree["dirs"]):
            changed[object_id] = _stored(files, dirs, made)
    stored_agents: Mapping[str, Any] = data.get("agents") or {}
    if not changed and len(_without_empty(stored_agents)) == len(stored_agents):
        return None
    result = dict(data)
    agents = dict(stored_agents)
    for object_id, tree in changed.items():
        if object_id is None:
            result["user"] = tree
        else:
            agents[object_id] = tree
    result["agents"] = _without_empty(agents)
    return result


def in_stored_form(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every tree as this version stores it (an index stored before stamps listed its directories):
    what a command that changes nothing in it would write, to measure the two alike."""
    trees = {object_id: _tree(data, object_id) for object_id in (None, *(data.get("agents") or {}))}
    stored = {object_id: _stored(tree["files"], tree["dirs"], tree["made"]) for object_id, tree in trees.items()}
    return {**data, "user": stored.pop(None), "agents": stored}


def named_entry_ids(data: Mapping[str, Any]) -> set[str]:
    """The entry of every file the index names, in every tree (the user's and each agent's)."""
    trees = [data.get("user"), *(data.get("agents") or {}).values()]
    return {str(slot["entry_id"]) for tree in trees for slot in ((tree or {}).get("files") or {}).values()
            if slot.get("entry_id")}


def _tree(data: Mapping[str, Any], agent_object_id: str | None) -> dict[str, Any]:
    """One stored tree as ``files`` (path: slot), ``dirs`` (paths) and ``made`` (path: ISO time, for the directories
    and whitespace-only files stamped). Stored, a directory maps to its stamp (a list, before stamps: none), and a
    whitespace-only file's slot holds its own: each name is written once, as the index's bound counts it."""
    raw = (data.get("agents") or {}).get(agent_object_id) if agent_object_id else data.get("user")
    raw = raw or {}
    files: dict[str, Any] = dict(raw.get("files") or {})
    stored_dirs = raw.get("dirs") or []
    made = {rel: stamp for rel, stamp in stored_dirs.items() if stamp} if isinstance(stored_dirs, dict) else {}
    made.update((rel, slot["made"]) for rel, slot in files.items() if slot.get("made"))
    return {"files": files, "dirs": list(stored_dirs), "made": made}


def _stored(files: Mapping[str, Any], dirs: Collection[str], made: Mapping[str, str]) -> dict[str, Any]:
    """The tree as stored (``_tree`` reads it back): a whitespace-only file's stamp in its slot (none when it has
    none), a directory's as its value."""
    def slot_of(rel: str, slot: Mapping[str, Any]) -> Mapping[str, Any]:
        if slot.get("entry_id") is not None:
            return slot
        bare = {key: value for key, value in slot.items() if key != "made"}
        return {**bare, "made": made[rel]} if rel in made else bare

    return {
        "files": {rel: slot_of(rel, slot) for rel, slot in files.items()},
        "dirs": {rel: made.get(rel) for rel in sorted(dirs)},
    }


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
