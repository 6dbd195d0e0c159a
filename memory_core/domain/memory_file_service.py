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
  a ``memory_file`` audit event per path naming the command, the path's and the
  content's hashes, journaled with the commit (``domain.file_audits``) so that a
  crash right after it loses none and writes none twice.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

from memory_core.domain import memory_paths as texts
from memory_core.domain.budget import visible_entry
from memory_core.domain.custody_fence import fenced_until, forget_fence
from memory_core.domain.directory_names import AGENT_DIR
from memory_core.domain.errors import (
    Conflict,
    Forbidden,
    MemoryCoreError,
    NotFound,
    Unavailable,
)
from memory_core.domain.file_entries import file_entries
from memory_core.domain.file_index import (
    INDEX_ID,
    INDEX_KIND,
    namespace_of,
)
from memory_core.domain.file_retirements import Retirement
from memory_core.domain.file_writers import FileWriters
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_commits import FileCommits, Snapshot, scope_keys
from memory_core.domain.memory_files import (
    FailedWithSideEffect,
    Namespace,
    Outcome,
    Retire,
    command_paths,
    run,
)
from memory_core.domain.memory_paths import parse_path
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.records import Partition, Record
from memory_core.domain.store import MemoryStore
from memory_core.domain.targets import Use
from memory_core.domain.views import Forgotten, PendingDeletion

if TYPE_CHECKING:  # the service's read machinery loads with the composition root, not with the routes (cold start)
    from memory_core.domain.service import MemoryService

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


class _Writers(Enum):
    """``MemoryFiles``' default ``writers``: a sentinel, since None already says "race them"."""

    SERVICE = "the service's file_writers"


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
        writers: FileWriters | Literal[_Writers.SERVICE] | None = _Writers.SERVICE,
    ) -> None:
        """``writers``: where a command that may write waits its turn behind the user's other writes in this process
        (``domain.file_writers``); by default the service's ``file_writers``, so every front of the process (REST,
        MCP, and any new one) queues in the same place without naming it; None: it races them, and the loser of
        each commit reads again (what tests of those races need)."""
        self._service = service
        self._writers = service.file_writers if writers is _Writers.SERVICE else writers
        self._store: MemoryStore = service.store
        self._commits = FileCommits(service, on_commit)  # on_commit, for tests: widen the race window before it
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
            # Every command, a view too, is the agent's use of memory: what it reads goes to the model.
            targets = self._service.targets
            targets.guard(caller, instance_id, Scope.USER, agent, use=Use.AGENT)  # a disabled agent: Forbidden
            try:
                targets.guard(caller, instance_id, Scope.AGENT, agent, use=Use.AGENT)
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
                self._screen_name(caller, instance_id, str(cmd[key]), key)
        if cmd["command"] == "view" or self._writers is None:
            return self._attempts(caller, instance_id, agent, cmd, session_id, operation_id)
        with self._writers.turn(instance_id, caller.upn):
            return self._attempts(caller, instance_id, agent, cmd, session_id, operation_id)

    def _attempts(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, cmd: dict[str, Any],
        session_id: str | None, operation_id: str | None,
    ) -> FileAnswer:
        """Read, run and commit ``cmd``, again while another command commits first (``_ATTEMPTS`` times)."""
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
            if cmd["command"] == "rename" and side_effect is None:
                # A directory's rename brings the path of everything below it into being too, each joined to the new
                # name: "trip/ODNN7EXAMPLE.md" renamed to "AKIAIOSF" would store the key id a create of that path is
                # refused for. Screened as a create's path is, before anything is stored: a hit moves nothing.
                self._screen_moved(caller, instance_id, snapshot.namespace, outcome, str(cmd["new_path"]))
            # The versions it retires are journaled with the commit (``domain.file_retirements``): a crash between
            # the commit and their retirement leaves them to the sweep, not stored for good with no name.
            try:
                commit = self._commits.commit(
                    caller, instance_id, agent, snapshot, outcome, session_id, operation_id, cmd,
                    refused=side_effect is not None)
            except Conflict as race:
                if race.code == "index_changed":
                    continue
                raise
            # Its audit events first: journaled with the commit (``domain.file_audits``), they are written by whoever
            # comes first, this command, the user's next one or the sweep, and only once.
            self._service.file_audits.finish(commit.audit)
            if side_effect is not None:
                # What it changed is audited as any change is; the model is told only of the refusal.
                self._finish(caller, instance_id, agent, cmd, outcome, commit.namespace, commit.etag, commit.journal)
                raise side_effect
            file_deleted = cmd["command"] == "delete" and parse_path(str(cmd["path"])).rel in snapshot.namespace.files
            return self._finish(caller, instance_id, agent, cmd, outcome, commit.namespace, commit.etag,
                                commit.journal, file_deleted=file_deleted)
        raise Conflict("the memory files kept changing during this command; retry", code="conflict")

    def _screen_name(self, caller: Caller, instance_id: str, path: str, key: str) -> None:
        """Refuse the new name ``path`` (the command's argument ``key``) as a write is refused: as sent, as stored (NFC)
        and with its segments joined (``HiddenText`` or ``SecretDetected`` naming ``key``, audited)."""
        stored = unicodedata.normalize("NFC", path)
        joined = stored.removeprefix(texts.ROOT).replace("/", "")
        for name in dict.fromkeys((path, stored, joined)):
            self._service.screen(caller, ProfileKey(instance_id, caller.upn, Scope.USER), name, name=key)

    def _screen_moved(self, caller: Caller, instance_id: str, before: Namespace, outcome: Outcome,
                      new_path: str) -> None:
        """Screen each path a rename brings into being below ``new_path`` (a moved directory's files and
        directories), as ``new_path`` itself was screened: the names ``outcome`` holds that ``before`` did not."""
        after = outcome.namespace
        assert after is not None
        new_rel = parse_path(new_path).rel
        for rel in sorted({*after.files, *after.dirs} - {*before.files, *before.dirs}):
            if rel.startswith(new_rel + "/"):  # new_path and its parents were screened before the command ran
                self._screen_name(caller, instance_id, f"{texts.ROOT}/{rel}", "new_path")

    # -- reading -------------------------------------------------------------------

    def _snapshot(self, caller: Caller, instance_id: str, agent: AgentContext | None, *, wait: bool = True) -> Snapshot:
        keys = scope_keys(caller, instance_id, agent)
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
        return Snapshot(record, namespace, entries)

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

    def _finish(
        self,
        caller: Caller,
        instance_id: str,
        agent: AgentContext | None,
        command: dict[str, Any],
        outcome: Outcome,
        after: Namespace,
        etag: str | None,
        journal: Retirement | None,
        *,
        file_deleted: bool = False,
    ) -> FileAnswer:
        """Retire old versions, end their ``journal`` and answer (the command's events are written: ``execute``).
        ``etag``: the index's, as this command committed it. ``file_deleted``: the command deletes one file (not a
        directory); when another deletion took its entry first, the answer is the reference's for a missing path
        (``NotFound``). A version left to another forget that has not hidden or erased it (that forget crashed or
        failed inside its fence) keeps the journal for the sweep, which forgets it once that fence's lease is over."""
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
        taken = 0
        unsettled = False
        # A fence for a batch of forgets (a directory's delete forgets every file in it), not one each, nor one for
        # all: other commands wait while it stands. It claims each version's forget fence (``forget_fence``), as a
        # forget elsewhere stands it (DELETE .../memory/entries/{id}, the sweep's replay): of the two, one is taken.
        for start in range(0, len(forgets), FORGETS_PER_FENCE):
            batch = {forget_fence(retire.entry_id): retire for retire in forgets[start:start + FORGETS_PER_FENCE]}
            with self._service.custody.fence(instance_id, caller.upn, claims=batch) as elsewhere:
                for name, retire in batch.items():
                    forgotten = None if name in elsewhere else self._forget(caller, instance_id, retire)
                    taken += forgotten is not None
                    if isinstance(forgotten, PendingDeletion):
                        pending.append(forgotten.request_id)
            # A version another forget claimed is left to it, but the journal ends only once that forget hid or erased
            # it: one that never does (it crashed inside its fence, its store failed) is the sweep's to forget.
            unsettled = unsettled or any(self._shows(instance_id, caller.upn, batch[name].entry_id) for name in elsewhere)
        if not unsettled:
            self._service.file_retirements.end(journal)
        if file_deleted and forgets and not taken:
            # Its file's entry was forgotten by another deletion between this command's commit and its forget: that
            # deletion came first, and this delete is answered as one after it (the path is not there).
            raise texts.not_found_short(str(command["path"]))
        if not pending:
            return FileAnswer(outcome.answer)
        if command["command"] == "delete":
            return FileAnswer(texts.deleted_pending(str(command["path"]), pending), tuple(pending))
        return FileAnswer(outcome.answer + texts.pending_note(pending), tuple(pending))

    def _forget(self, caller: Caller, instance_id: str, retire: Retire) -> PendingDeletion | Forgotten | None:
        """Forget an old version whose text the command removed, under the caller's fence with the version's forget
        fence claimed; None when it was already gone or hidden (another forget of it, a clear)."""
        try:
            return self._service.forget(caller, instance_id, retire.entry_id, fenced=True)
        except NotFound:
            return None

    def _shows(self, instance_id: str, upn: str, entry_id: str) -> bool:
        """Whether entry ``entry_id`` is still stored and visible (no deletion erased or hid it)."""
        return visible_entry(self._store, instance_id, upn, entry_id) is not None

    def _drop(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, retire: Retire, *, maybe_hidden: bool
    ) -> None:
        """Erase an old version whose whole text the new one keeps (``MemoryService.drop_version``)."""
        key = scope_keys(caller, instance_id, agent)[retire.agent_scope]
        self._service.drop_version(
            caller, key, retire.entry_id, "superseded: its whole text is kept in the file's new version",
            maybe_hidden=maybe_hidden,
        )

