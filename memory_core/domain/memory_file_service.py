"""Claude's memory tool over memory-core: the file view of a user's memory, under custody.

How /memories maps onto the storage model (docs/memory-tool.md has the whole design):

- A file's text is a ``MemoryEntry`` in the caller's own memory: user scope, or,
  below /memories/agent, the calling agent's scope. get_memory, export and
  search see it like any append (reason "memory file <path>", tag ``memory-file``).
- Which entry is which file lives in one *file index* record per user
  (partition ``(instance_id, upn)``): paths, directories, entry ids and content
  hashes (its layout, and the files it makes: ``domain/file_index.py``). Every
  command reads the index with its etag and commits with it, so
  concurrent commands on one user's files are serialized: a loser re-reads and
  re-applies, and no write is lost.
- Entries no file names (appended through MCP or REST) show as
  /memories/appended/<entry id>.md (/memories/agent/appended/... for the agent's).
- An edit stores a new version, then retires the old one. Retiring erases
  nothing the user wrote when the new version keeps the old text (insert, a
  replacement that contains what it replaces, a move between scopes); otherwise
  it is a deletion and follows MEMORY_DELETION_MODE through ``MemoryService.forget``:
  under operator approval the old version is hidden at once and the answer says
  that its deletion is pending.
- Every write goes through ``MemoryService.append`` (size limit, secret scan,
  audit with the content's SHA-256); every command that changes something leaves
  a ``memory_file`` audit event naming the command, the path and the hashes.
"""

from __future__ import annotations

import json
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_core.domain import memory_paths as texts
from memory_core.domain.audit import AuditAction
from memory_core.domain.custody_fence import fenced_until, without_fences
from memory_core.domain.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    MemoryCoreError,
    NotFound,
    Unavailable,
)
from memory_core.domain.file_entries import FileEntries, file_entries
from memory_core.domain.file_index import (
    INDEX_ID,
    INDEX_KIND,
    files_elsewhere,
    in_stored_form,
    index_data,
    namespace_of,
)
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_files import (
    AGENT_DIR,
    FailedWithSideEffect,
    FileNode,
    Namespace,
    Outcome,
    Retire,
    command_paths,
    is_agent_path,
    run,
)
from memory_core.domain.memory_paths import parse_path
from memory_core.domain.models import ProfileKey, Scope, sha256_hex
from memory_core.domain.records import Partition, Record
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion, WriteOptions

if TYPE_CHECKING:  # the service's read machinery loads with the composition root, not with the routes (cold start)
    from memory_core.domain.service import MemoryService

FILE_TAG = "memory-file"
MAX_FILES = 2000
# The file index is one record: its JSON, as the Cosmos DB SDK sends it (non-ASCII escaped), stays well inside an
# item's 2 MB. Directories count here, not in MAX_FILES: a 1,024-character path makes about 500 of them.
MAX_INDEX_BYTES = 1024 * 1024
# Whitespace-only text cannot be an entry (appends refuse it); it is kept in the index, up to this size, of these
# characters only. No person reading the memory sees it, and a model reads it: spaces and tabs, or Unicode's other
# spaces and separators, are how whitespace steganography writes bits. An empty file, or a few blank lines, is
# what a model means by one.
MAX_INLINE_BYTES = 256
_BLANK = frozenset(" \t\r\n")
_ATTEMPTS = 12
# How long a command waits for a deletion of the user's memory to be recorded (its fence): a few writes, milliseconds.
FENCE_WAIT = 5.0
# A command's forgets (a directory's delete: one per file) stand a fence per this many: each fence stands while its
# forgets are filed, well inside FENCE_WAIT and the fence's lease even on Cosmos DB (about 7 round trips a forget).
FORGETS_PER_FENCE = 20


@dataclass(frozen=True, slots=True)
class FileAnswer:
    """The text the model sees, and the deletion requests it opened (empty unless pending approval)."""

    text: str
    pending_request_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Snapshot:
    record: Record | None
    namespace: Namespace
    entries: FileEntries[Namespace]


class MemoryFiles:
    """The six memory_20250818 commands for an authenticated caller.

    ``execute`` answers the reference backend's text, or raises a ``MemoryCoreError``
    whose message is the reference's error text (``InvalidInput``, ``NotFound``,
    ``Conflict``), or the service's own (``PayloadTooLarge``, ``SecretDetected``,
    ``Forbidden``, ``Unavailable``).
    """

    def __init__(
        self, service: MemoryService, *, on_commit: Callable[[], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._service = service
        self._store: MemoryStore = service.store
        self._on_commit = on_commit  # tests: widen the race window between reading and committing
        self._sleep = sleep

    def execute(
        self,
        caller: Caller,
        instance_id: str,
        agent: AgentContext | None,
        command: Mapping[str, Any],
        *,
        session_id: str | None = None,
        operation_id: str | None = None,
    ) -> FileAnswer:
        cmd = dict(command)
        agent_paths = [p for p in command_paths(cmd) if parse_path(p).parts[:1] == (AGENT_DIR,)]
        if agent is not None:
            book = self._service.agent_settings
            book.enforce(caller, instance_id, agent.object_id, Scope.USER)  # a disabled agent: Forbidden
            try:
                book.enforce(caller, instance_id, agent.object_id, Scope.AGENT)
            except Forbidden:
                if agent_paths:
                    raise
                agent = None  # a caller outside the agent's groups sees user memory only
        if agent is None and agent_paths:
            raise texts.agent_required(agent_paths[0])
        # A name is stored too (in the file index): it is screened like content, as sent and as stored (NFC, where
        # the Kelvin sign U+212A is a "K": "A\u212aIA..." is stored as an AWS key id), and with its segments joined:
        # "/" ends a detector's token, and "AKIAIOSF/ODNN7EXAMPLE.md" stores an AWS key id as a directory and a file.
        for key in ("path", "new_path"):
            if cmd["command"] in ("create", "rename") and key in cmd:
                stored = unicodedata.normalize("NFC", str(cmd[key]))
                joined = stored.removeprefix(texts.ROOT).replace("/", "")
                for name in dict.fromkeys((str(cmd[key]), stored, joined)):
                    self._service.screen(caller, ProfileKey(instance_id, caller.upn, Scope.USER), name, name=key)
        for _ in range(_ATTEMPTS):
            # A view changes nothing: it may read while a deletion is recorded, as any read may.
            snapshot = self._snapshot(caller, instance_id, agent, wait=cmd["command"] != "view")
            side_effect: MemoryCoreError | None = None
            try:
                outcome = run(snapshot.namespace, cmd)
            except FailedWithSideEffect as failed:
                outcome = Outcome("", failed.namespace, audit_paths=failed.made)
                side_effect = failed.error  # type: ignore[assignment]
            if not outcome.changed:
                return FileAnswer(outcome.answer)
            # The versions it retires are journaled before the commit (``domain.file_retirements``): a crash between
            # the commit and their retirement leaves them to the sweep, not stored for good with no name.
            retirements = self._service.file_retirements
            journal = retirements.begin(caller, instance_id, agent.object_id if agent else None, outcome.retired)
            try:
                committed, etag = self._commit(caller, instance_id, agent, snapshot, outcome, session_id, operation_id)
            except MemoryCoreError as failed:
                if not isinstance(failed, Unavailable):  # a refusal: certainly not committed (an outage may have)
                    retirements.end(journal)
                if isinstance(failed, Conflict) and failed.code == "index_changed":
                    continue
                raise
            if side_effect is not None:
                # What it changed is audited as any change is; the model is told only of the refusal.
                self._finish(caller, instance_id, agent, cmd, outcome, committed, etag, refused=True)
                retirements.end(journal)
                raise side_effect
            answer = self._finish(caller, instance_id, agent, cmd, outcome, committed, etag)
            retirements.end(journal)
            return answer
        raise Conflict("the memory files kept changing during this command; retry", code="conflict")

    # -- reading -------------------------------------------------------------------

    def _keys(self, caller: Caller, instance_id: str, agent: AgentContext | None) -> dict[bool, ProfileKey]:
        keys = {False: ProfileKey(instance_id, caller.upn, Scope.USER)}
        if agent is not None:
            keys[True] = ProfileKey(instance_id, caller.upn, Scope.AGENT, agent.object_id)
        return keys

    def _snapshot(self, caller: Caller, instance_id: str, agent: AgentContext | None, *, wait: bool = True) -> _Snapshot:
        keys = self._keys(caller, instance_id, agent)
        partition = Partition(instance_id, caller.upn)
        record = self._store.get_record(partition, INDEX_KIND, INDEX_ID)
        for _ in range(_ATTEMPTS):
            record = self._unfenced(partition, record) if wait else record
            entries = file_entries(self._store, self._service.file_entries, keys)
            # The index and the entries are two reads: if the index did not change around the entries'
            # read, every entry it names was stored before it (a commit stores them first) and is in it.
            again = self._store.get_record(partition, INDEX_KIND, INDEX_ID)
            if (again.etag if again else None) == (record.etag if record else None):
                break
            record = again
        else:
            raise Conflict("the memory files kept changing during this command; retry", code="conflict")
        namespace = entries.files_for(record.etag if record else None,
                                      lambda: namespace_of(caller, agent, record, entries))
        return _Snapshot(record, namespace, entries)

    def _unfenced(self, partition: Partition, record: Record | None) -> Record | None:
        """The index record once no deletion's fence stands in it (``domain.custody_fence``): read again after
        short pauses while one does. ``Unavailable`` when one still stands after ``FENCE_WAIT`` seconds."""
        deadline = time.monotonic() + FENCE_WAIT
        pause = 0.005
        while record is not None and fenced_until(record.data, self._service.now()) is not None:
            if time.monotonic() + pause > deadline:
                raise Unavailable("a deletion of this memory is being recorded; retry", retry_after_seconds=1)
            self._sleep(pause)
            pause = min(pause * 2, 0.1)
            record = self._store.get_record(partition, INDEX_KIND, INDEX_ID)
        return record

    # -- committing ------------------------------------------------------------------

    def _commit(
        self,
        caller: Caller,
        instance_id: str,
        agent: AgentContext | None,
        snapshot: _Snapshot,
        outcome: Outcome,
        session_id: str | None,
        operation_id: str | None,
    ) -> tuple[Namespace, str | None]:
        """Store new versions, then swap the index in one conditional write: the namespace and the index's new etag.
        ``Conflict("index_changed")`` on a race."""
        after = outcome.namespace
        assert after is not None
        # Every tree of the index counts, other agents' too. A command that does not add a file goes through, so that
        # a user past the bound (counted per agent before) can still edit, move and delete.
        elsewhere = files_elsewhere(snapshot.record, agent)
        files = elsewhere + _named(after)
        if files > MAX_FILES and files > elsewhere + _named(snapshot.namespace):
            raise InvalidInput(f"memory holds at most {MAX_FILES} files; delete some first", code="too_many_files")
        stored: list[tuple[bool, str]] = []
        try:
            for rel in outcome.written:
                node = after.files[rel]
                agent_scope = is_agent_path(rel)
                if node.text.strip():
                    view = self._service.append(
                        caller, instance_id, Scope.AGENT if agent_scope else Scope.USER, agent, node.text,
                        WriteOptions(reason=f"memory file {texts.ROOT}/{rel}", session_id=session_id,
                                     operation_id=operation_id, tags=(FILE_TAG,)),
                    )
                    assert view.entry_id is not None
                    stored.append((agent_scope, view.entry_id))
                    after.files[rel] = FileNode(node.text, view.entry_id)
                elif len(node.text) > MAX_INLINE_BYTES or not _BLANK.issuperset(node.text):
                    raise InvalidInput(
                        f"a memory file of only whitespace holds at most {MAX_INLINE_BYTES} spaces, tabs and line "
                        "breaks (no other space or separator): no person reading the memory sees it",
                        code="invalid_input",
                    )
            if self._on_commit is not None:
                self._on_commit()
            etag = self._save_index(caller, instance_id, agent, snapshot, after)
        except BaseException:
            self._withdraw(caller, instance_id, agent, stored)
            raise
        return after, etag

    def _save_index(
        self,
        caller: Caller,
        instance_id: str,
        agent: AgentContext | None,
        snapshot: _Snapshot,
        after: Namespace,
    ) -> str | None:
        data = without_fences(index_data(snapshot.record, snapshot.entries, agent, after, caller, self._service.now()))
        size = len(json.dumps(data))
        # A command that does not grow the index goes through, so that deleting makes room in one past the bound
        # (stored before there was one).
        if size > MAX_INDEX_BYTES and (
                snapshot.record is None or size > len(json.dumps(in_stored_form(snapshot.record.data)))):
            raise InvalidInput(
                "the memory files' names, directories and empty files take at most 1 MiB; delete or rename some first",
                code="file_index_full",
            )
        partition = Partition(instance_id, caller.upn)
        try:
            if snapshot.record is None:
                return self._store.create_record(Record(partition, INDEX_KIND, INDEX_ID, data)).etag
            return self._store.put_record(Record(partition, INDEX_KIND, INDEX_ID, data, snapshot.record.etag)).etag
        except Conflict as race:
            raise Conflict("the memory file index changed", code="index_changed") from race

    def _withdraw(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, stored: list[tuple[bool, str]]
    ) -> None:
        """Erase versions this attempt stored but never published (it lost a race or failed): audited."""
        keys = self._keys(caller, instance_id, agent)
        for agent_scope, entry_id in stored:
            self._service.drop_version(
                caller, keys[agent_scope], entry_id,
                "withdrawn: an unpublished version of a command that is retried or failed",
            )

    def _finish(
        self,
        caller: Caller,
        instance_id: str,
        agent: AgentContext | None,
        command: dict[str, Any],
        outcome: Outcome,
        after: Namespace,
        etag: str | None,
        *,
        refused: bool = False,
    ) -> FileAnswer:
        """Retire old versions, audit every path the command changed, and answer. ``refused``: the command failed
        after making directories (``FailedWithSideEffect``), audited as what it made. ``etag``: the index's, as this
        command committed it."""
        pending: list[str] = []
        drops = [retire for retire in outcome.retired if not retire.removes_content]
        if drops:
            # Only a deletion (its fence) or another command moves the index: unmoved since the commit, nothing can
            # have hidden the versions kept in the new ones, and they are dropped without asking.
            record = self._store.get_record(Partition(instance_id, caller.upn), INDEX_KIND, INDEX_ID)
            moved = record is None or record.etag != etag
            for retire in drops:
                self._drop(caller, instance_id, agent, retire, maybe_hidden=moved)
        forgets = [retire for retire in outcome.retired if retire.removes_content]
        # A fence for a batch of forgets (a directory's delete forgets every file in it), not one each, nor one for
        # all: other commands wait while it stands.
        for start in range(0, len(forgets), FORGETS_PER_FENCE):
            with self._service.custody.fence(instance_id, caller.upn):
                for retire in forgets[start:start + FORGETS_PER_FENCE]:
                    request_id = self._forget(caller, instance_id, retire)
                    if request_id:
                        pending.append(request_id)
        for rel in outcome.audit_paths:
            node = after.files.get(rel)
            self._service.audit.record(
                AuditAction.MEMORY_FILE, actor=caller.upn, instance_id=instance_id, upn=caller.upn,
                scope=(Scope.AGENT if is_agent_path(rel) else Scope.USER).value,
                agent_object_id=agent.object_id if agent and is_agent_path(rel) else None,
                entry_id=node.entry_id if node else None,
                content_sha256=sha256_hex(node.text) if node else None,
                byte_count=len(node.text.encode("utf-8")) if node else None,
                detail=_audit_detail(command, rel, outcome.retired, refused=refused),
            )
        if not pending:
            return FileAnswer(outcome.answer)
        if command["command"] == "delete":
            return FileAnswer(texts.deleted_pending(str(command["path"]), pending), tuple(pending))
        return FileAnswer(outcome.answer + texts.pending_note(pending), tuple(pending))

    def _forget(self, caller: Caller, instance_id: str, retire: Retire) -> str | None:
        """Forget an old version whose text the command removed, under the caller's fence; answers the deletion
        request id when it awaits an operator."""
        try:
            outcome = self._service.forget(caller, instance_id, retire.entry_id, fenced=True)
        except NotFound:
            return None  # already gone (a concurrent delete, a clear)
        return outcome.request_id if isinstance(outcome, PendingDeletion) else None

    def _drop(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, retire: Retire, *, maybe_hidden: bool
    ) -> None:
        """Erase an old version whose whole text the new one keeps (``MemoryService.drop_version``)."""
        key = self._keys(caller, instance_id, agent)[retire.agent_scope]
        self._service.drop_version(
            caller, key, retire.entry_id, "superseded: its whole text is kept in the file's new version",
            maybe_hidden=maybe_hidden,
        )


def _named(namespace: Namespace) -> int:
    """The files of ``namespace`` the index names (an appended entry's file is no name of the model's)."""
    return sum(not node.derived for node in namespace.files.values())


def _audit_detail(command: Mapping[str, Any], rel: str, retired: tuple[Retire, ...], *, refused: bool = False) -> str:
    """The command, the path's SHA-256 (a name is the user's words too: the trail keeps no text), what it replaced;
    for a refused command, the directory it made."""
    path_hash = f"path-sha256:{sha256_hex(texts.ROOT + '/' + rel)}"
    if refused:
        return f"{command['command']} refused, made directory {path_hash}"
    old = ", ".join(r.entry_id for r in retired) or "none"
    return f"{command['command']} {path_hash} (replaced entries: {old})"
