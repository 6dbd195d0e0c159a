"""The file view of a user's memory: the six memory_20250818 commands over a ``Namespace``.

Pure logic, no storage: a ``Namespace`` is what one caller sees under
/memories at one moment (files with their text, and directories), and each
command either answers from it or returns the changed namespace with the
effects the service must carry out (new versions to store, old versions to
retire). ``memory_core.domain.memory_file_service`` loads namespaces from the
store and commits the results under custody.

Semantics follow the SDK's reference backend ``BetaLocalFilesystemMemoryTool``
step for step, including its side effects (``create`` and ``rename`` make the
parent directories before they check the target; deleting a file leaves its
directory).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from memory_core.domain import memory_paths as texts
from memory_core.domain.directory_names import AGENT_DIR, APPENDED_DIR, names_in, refuse_lookalike, refuse_reserved
from memory_core.domain.memory_paths import MemoryPath, parse_new_path, parse_path

# A directory's listing answers at most this many characters (as get_memory's default budget): a memory of 20,000
# appended entries listed whole is over a million characters, past a model's context, on the command a model runs
# first. What is left out is named by count, with how to reach it.
MAX_LISTING_CHARS = 16_000


def parents(rel: str) -> list[str]:
    """Every ancestor directory of ``rel`` below the root, nearest last ("a", "a/b" for "a/b/c")."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def is_agent_path(rel: str) -> bool:
    return rel == AGENT_DIR or rel.startswith(AGENT_DIR + "/")


@dataclass(frozen=True, slots=True)
class FileNode:
    """One file: its text, and the entry that stores it (None: not stored yet, or stored inline).

    ``derived`` marks an entry shown at appended/<id>.md because no file names it.
    """

    text: str
    entry_id: str | None = None
    derived: bool = False


@dataclass(frozen=True, slots=True)
class Retire:
    """An entry that no longer backs any file. ``removes_content``: its text is not kept elsewhere."""

    entry_id: str
    agent_scope: bool
    removes_content: bool


@dataclass(slots=True)
class Namespace:
    """Files and directories under /memories, keyed by path below the root ("" is the root)."""

    files: dict[str, FileNode] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    indexed: tuple[str, ...] | None = None
    """The paths of the files an index names, for a namespace made from one (``file_index.namespace_of``): every other
    file is an appended entry's, under an appended/ directory. None (a copy, to be changed): not known."""

    def copy(self) -> Namespace:
        # dict.copy clones the table in one step; dict() goes key by key once a key was ever removed.
        return Namespace(self.files.copy(), set(self.dirs))

    def is_dir(self, rel: str) -> bool:
        return rel == "" or rel in self.dirs

    def exists(self, rel: str) -> bool:
        return rel in self.files or self.is_dir(rel)

    def below(self, rel: str) -> tuple[list[str], list[str]]:
        """Files and directories strictly below directory ``rel``."""
        prefix = rel + "/" if rel else ""
        return (
            [p for p in self.files if p.startswith(prefix)],
            [d for d in self.dirs if d.startswith(prefix) and d != rel],
        )

    def names_in(self, rel: str) -> list[str]:
        """The names of the files and directories directly in directory ``rel`` (not below them)."""
        return names_in(rel, self.files, self.indexed, self.dirs)

    def make_dirs(self, rel: str, shown: str) -> None:
        """mkdir -p of ``rel``; ``InvalidInput`` naming ``shown`` when a file stands in the way."""
        for ancestor in [*parents(rel), rel] if rel else []:
            if ancestor in self.files:
                raise texts.parent_not_directory(shown)
            self.dirs.add(ancestor)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command did: the answer, and for changes the new namespace and effects."""

    answer: str
    namespace: Namespace | None = None
    written: tuple[str, ...] = ()
    retired: tuple[Retire, ...] = ()
    audit_paths: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.namespace is not None


Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


def _retire(node: FileNode, rel: str, removes_content: bool) -> tuple[Retire, ...]:
    if node.entry_id is None:
        return ()
    return (Retire(node.entry_id, is_agent_path(rel), removes_content),)


def view(ns: Namespace, path: str, view_range: Sequence[int] | None = None) -> Outcome:
    target = parse_path(path)
    rel = target.rel
    if rel in ns.files:
        return Outcome(texts.file_view(path, ns.files[rel].text, view_range))
    if not ns.is_dir(rel):
        raise texts.not_found(path)
    # Each item is (the file's path, or None for a directory; the path shown). A file's size is its text's length in
    # bytes, formatted: found only for the lines the answer may hold, not for every entry of a large memory (60,000
    # appended files: 0.4 s of the view), since a listing that long is cut to MAX_LISTING_CHARS.
    items: list[tuple[str | None, str]] = []
    appended: list[int] = []  # the positions of files under appended/ (in order): entries the model did not name
    children = _children(ns)

    def collect(dir_rel: str, shown: str, depth: int) -> None:
        if depth > 2:
            return
        for name in sorted(children.get(dir_rel, ())):
            if name.startswith("."):
                continue
            child = f"{dir_rel}/{name}" if dir_rel else name
            item = f"{shown}/{name}" if shown else name
            if child in ns.files:
                if dir_rel in (APPENDED_DIR, f"{AGENT_DIR}/{APPENDED_DIR}"):
                    appended.append(len(items))
                items.append((child, item))
            else:
                items.append((None, f"{item}/"))
                if depth < 2:
                    collect(child, item, depth + 1)

    collect(rel, "", 1)

    def line(index: int) -> tuple[str, str]:
        child, item = items[index]
        if child is None:
            return texts.DIRECTORY_SIZE, item
        return texts.format_file_size(len(ns.files[child].text.encode("utf-8"))), item

    # Every line is at least a size (2 characters), a tab, the path, "/", one character and a line break: more items
    # than that many fit cannot fit, and the listing is cut without being made whole first.
    if len(items) * (len(path) + 6) <= MAX_LISTING_CHARS:
        listing = texts.directory_view(path, [line(i) for i in range(len(items))])
        if len(listing) <= MAX_LISTING_CHARS:
            return Outcome(listing)
    return Outcome(_cut_listing(path, len(items), line, appended))


def _cut_listing(path: str, count: int, line: Callable[[int], tuple[str, str]], appended: Sequence[int]) -> str:
    """A listing of ``count`` items (``line(i)``: the size and path of the i-th, in listing order) that does not fit
    ``MAX_LISTING_CHARS``: the model's own files and the directories first (in listing order), then the files under
    appended/ (``appended``: their positions, in order) while they fit, and a line saying how many were left out
    and how to reach them. Only the lines it tries are made."""
    skipped = set(appended)
    order = itertools.chain((i for i in range(count) if i not in skipped), appended)
    room = MAX_LISTING_CHARS - len(texts.directory_view(path, [])) - 400  # the note's own length, and some
    kept: dict[int, tuple[str, str]] = {}
    for index in order:
        shown = line(index)
        cost = len(texts.directory_line(path, *shown)) + 1  # and its line break
        if cost > room:
            break
        room -= cost
        kept[index] = shown
    left = count - len(kept)
    listing = texts.directory_view(path, [kept[i] for i in sorted(kept)])
    return listing + texts.listing_cut(MAX_LISTING_CHARS, left)


def _children(ns: Namespace) -> dict[str, set[str]]:
    children: dict[str, set[str]] = {}
    for rel in [*ns.files, *ns.dirs]:
        head, _, name = rel.rpartition("/")
        children.setdefault(head, set()).add(name)
    return children


def create(ns: Namespace, path: str, file_text: str) -> Outcome:
    target = parse_new_path(path)
    refuse_reserved(target)
    refuse_lookalike(target, ns.exists, ns.names_in)
    rel = target.rel
    after = ns.copy()
    if not target.is_root:
        after.make_dirs("/".join(target.parts[:-1]), path)
    if after.exists(rel):
        # The reference has made the parents by now; a failed create keeps them.
        raise texts.already_exists(path)
    after.files[rel] = FileNode(file_text)
    return Outcome(texts.created(path), after, written=(rel,), audit_paths=(rel,))


def _existing_file(ns: Namespace, target: MemoryPath) -> FileNode:
    if target.rel not in ns.files:
        if ns.is_dir(target.rel):
            raise texts.not_a_file(target.given)
        raise texts.not_found(target.given)
    return ns.files[target.rel]


def str_replace(ns: Namespace, path: str, old_str: str, new_str: str) -> Outcome:
    target = parse_path(path)
    node = _existing_file(ns, target)
    content = node.text
    count = content.count(old_str)
    if count == 0:
        raise texts.no_match(old_str, path)
    if count > 1:
        # The reference's list, every occurrence's line, found in one pass: it counted the newlines before each from
        # the start, quadratic in the file (0.6 s of CPU for old_str "" in a 64 KiB file).
        lines: list[int] = []
        start = counted = 0
        line = 1
        while (pos := content.find(old_str, start)) != -1:
            line += content.count("\n", counted, pos)
            counted = pos
            lines.append(line)
            start = pos + 1
        raise texts.not_unique(old_str, lines, path)
    changed_line = content[: content.find(old_str)].count("\n")
    new_content = content.replace(old_str, new_str)
    after = ns.copy()
    after.files[target.rel] = FileNode(new_content)
    # Removing an old version erases nothing when the replacement keeps the replaced text.
    retired = _retire(node, target.rel, removes_content=old_str not in new_str)
    return Outcome(
        texts.edit_snippet(new_content, changed_line), after, written=(target.rel,), retired=retired,
        audit_paths=(target.rel,),
    )


def _split_lines_keeping_cr(content: str) -> list[str]:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def insert(ns: Namespace, path: str, insert_line: int, insert_text: str) -> Outcome:
    target = parse_path(path)
    node = _existing_file(ns, target)
    lines = _split_lines_keeping_cr(node.text)
    if insert_line < 0 or insert_line > len(lines):
        raise texts.insert_out_of_range(insert_line, len(lines))
    lines.insert(insert_line, insert_text.rstrip("\n"))
    new_content = "\n".join(lines)
    if not new_content.endswith("\n"):
        new_content += "\n"
    after = ns.copy()
    after.files[target.rel] = FileNode(new_content)
    # Every old line is kept: the old version's removal erases nothing.
    return Outcome(
        texts.inserted(path), after, written=(target.rel,), retired=_retire(node, target.rel, False),
        audit_paths=(target.rel,),
    )


def delete(ns: Namespace, path: str) -> Outcome:
    target = parse_path(path)
    if target.is_root:
        raise texts.root_undeletable()
    rel = target.rel
    after = ns.copy()
    if rel in ns.files:
        gone = [rel]
    elif ns.is_dir(rel):
        gone, dirs = ns.below(rel)
        for d in [rel, *dirs]:
            after.dirs.discard(d)
    else:
        raise texts.not_found_short(path)
    retired: list[Retire] = []
    for p in gone:
        retired.extend(_retire(after.files.pop(p), p, removes_content=True))
    return Outcome(texts.deleted(path), after, retired=tuple(retired), audit_paths=tuple(sorted(gone)) or (rel,))


def rename(ns: Namespace, old_path: str, new_path: str) -> Outcome:
    old = parse_path(old_path)
    new = parse_new_path(new_path)
    if old.is_root:
        raise texts.root_unrenamable()
    refuse_reserved(new)
    if ns.exists(new.rel):
        raise texts.destination_exists(new_path)
    refuse_lookalike(new, ns.exists, ns.names_in, moving=old.rel)
    after = ns.copy()
    after.make_dirs("/".join(new.parts[:-1]), new_path)
    if old.rel in ns.files:
        moves = [(old.rel, new.rel)]
        dirs: list[str] = []
    elif ns.is_dir(old.rel):
        if (new.rel + "/").startswith(old.rel + "/"):
            raise texts.move_into_itself(old_path, new_path)
        files, dirs = ns.below(old.rel)
        moves = [(p, new.rel + p[len(old.rel):]) for p in files]
        dirs = [old.rel, *dirs]
    else:
        # The reference made the destination's parents before it found the source missing.
        if after.dirs != ns.dirs:
            return _failed_with_side_effect(ns, after, texts.not_found_short(old_path))
        raise texts.not_found_short(old_path)
    for d in dirs:
        after.dirs.discard(d)
        after.dirs.add(new.rel + d[len(old.rel):])
    written: list[str] = []
    retired: list[Retire] = []
    for src, dst in moves:
        node = after.files.pop(src)
        if is_agent_path(src) == is_agent_path(dst):
            after.files[dst] = replace(node, derived=False)
        else:
            # Across scopes the text is stored anew in the other scope; nothing is erased.
            after.files[dst] = FileNode(node.text)
            written.append(dst)
            retired.extend(_retire(node, src, removes_content=False))
    return Outcome(
        texts.renamed(old_path, new_path), after, written=tuple(written), retired=tuple(retired),
        audit_paths=tuple(dst for _, dst in moves) or (new.rel,),
    )


class FailedWithSideEffect(Exception):
    """A refused command that still changed directories (as the reference's would): commit, audit, then refuse.

    ``made``: the directories it made, each audited like a path a command changed."""

    def __init__(self, namespace: Namespace, error: Exception, made: tuple[str, ...]) -> None:
        super().__init__(str(error))
        self.namespace = namespace
        self.error = error
        self.made = made


def _failed_with_side_effect(before: Namespace, after: Namespace, error: Exception) -> Outcome:
    raise FailedWithSideEffect(after, error, tuple(sorted(after.dirs - before.dirs)))


def run(ns: Namespace, command: dict[str, object]) -> Outcome:
    """Apply one memory_20250818 command (already schema-checked) to ``ns``."""
    name = command["command"]
    if name == "view":
        return view(ns, str(command["path"]), _view_range(command.get("view_range")))
    if name == "create":
        return create(ns, str(command["path"]), str(command["file_text"]))
    if name == "str_replace":
        return str_replace(ns, str(command["path"]), str(command["old_str"]), str(command["new_str"]))
    if name == "insert":
        return insert(ns, str(command["path"]), int(command["insert_line"]), str(command["insert_text"]))  # type: ignore[call-overload]
    if name == "delete":
        return delete(ns, str(command["path"]))
    if name == "rename":
        return rename(ns, str(command["old_path"]), str(command["new_path"]))
    raise ValueError(f"unknown command {name!r}")


def _view_range(value: object) -> list[int] | None:
    return [int(v) for v in value] if isinstance(value, Iterable) else None


def command_paths(command: dict[str, object]) -> list[str]:
    """The paths a command names (for the agent-scope check before any work)."""
    return [str(command[k]) for k in ("path", "old_path", "new_path") if k in command]
