"""A memory-tool command's commit: its audit events and new versions journaled, the versions stored, the versions it
retires journaled, then the file index swapped in one conditional write (``memory_file_service`` reads, runs and
retires; this writes).

A commit leaves nothing of a command that is refused (a race for the index, a bound, a refused write, an outage
before the index's write): the versions it stored are withdrawn and its journal ended. An outage at the index's write
is not a refusal: the write may have applied and only its answer been lost, or still be in flight. Withdrawing
versions an applied index names would leave files naming nothing, and the journal would then retire the old versions
too: the file's whole text lost. So the index is read again (``_index_write``): the versions are withdrawn only once
the write is certainly refused, and when that cannot be known they stay, and so do the journals, for the sweep.

The command's ``memory_file`` audit events are journaled before its first version is stored, with the ids chosen for
its versions, and the index names that journal (``domain.file_audits``): a commit is audited even when the process
dies right after it, and the versions of a command that never committed (a crash, an outage whose outcome is
unknown) are withdrawn by the sweep, which reads off the index whether it did. The versions it retires are
journaled too (``domain.file_retirements``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import attrgetter, countOf
from typing import TYPE_CHECKING, Any, Literal

from memory_core.domain import memory_paths as texts
from memory_core.domain.custody_fence import without_fences
from memory_core.domain.errors import Conflict, InvalidInput, MemoryCoreError, Unavailable
from memory_core.domain.file_audits import JOURNAL_FIELD, FileAudit, command_events
from memory_core.domain.file_entries import FileEntries
from memory_core.domain.file_index import (
    INDEX_ID,
    INDEX_KIND,
    files_elsewhere,
    in_stored_form,
    index_data,
    named_entry_ids,
)
from memory_core.domain.file_retirements import Retirement
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_files import FileNode, Namespace, Outcome, is_agent_path
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.records import Partition, Record
from memory_core.domain.views import WriteOptions

if TYPE_CHECKING:
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
_DERIVED = attrgetter("derived")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a command read: the index record (None before the first file), its namespace and the entries."""

    record: Record | None
    namespace: Namespace
    entries: FileEntries[Namespace]


@dataclass(frozen=True, slots=True)
class Commit:
    """A committed command: the namespace as the index now names it, the index's etag as this command wrote it, the
    journal of the versions it retires (None for none), for the command to end once they are retired, and the journal
    of its audit events, for the command to finish (``FileAudits.finish``) at once."""

    namespace: Namespace
    etag: str | None
    journal: Retirement | None
    audit: FileAudit


class FileCommits:
    """Commits memory-tool commands for ``service`` (``on_commit``: a test seam run just before the index's write)."""

    def __init__(self, service: MemoryService, on_commit: Callable[[], None] | None = None) -> None:
        self._service = service
        self._store = service.store
        self._on_commit = on_commit

    def commit(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, snapshot: Snapshot, outcome: Outcome,
        session_id: str | None, operation_id: str | None, command: Mapping[str, Any], *, refused: bool = False,
    ) -> Commit:
        """Journal the audit events of ``command`` (``refused``: it failed after making directories, audited as what
        it made) and the new versions, store them, journal the retired ones, then swap the index (see the module's
        docstring).

        Raises ``Conflict("index_changed")`` when another command committed first, ``InvalidInput`` past a bound,
        what ``MemoryService.append`` raises for a version, and ``Unavailable`` for an outage."""
        after = outcome.namespace
        assert after is not None
        # Every tree of the index counts, other agents' too. A command that does not add a file goes through, so that
        # a user past the bound (counted per agent before) can still edit, move and delete.
        elsewhere = files_elsewhere(snapshot.record, agent)
        files = elsewhere + _named(after)
        if files > MAX_FILES and files > elsewhere + _named(snapshot.namespace):
            raise InvalidInput(f"memory holds at most {MAX_FILES} files; delete some first", code="too_many_files")
        retirements, audits = self._service.file_retirements, self._service.file_audits
        stored: list[tuple[bool, str]] = []
        journal: Retirement | None = None
        audit: FileAudit | None = None
        writing = False  # an outage before the index's write is a plain failure: nothing was published
        try:
            # The index to be written over may name the journal of a command that died after its commit: its events
            # are written first, or they would read as never committed once this index names another journal.
            audits.finish_named(instance_id, snapshot.record)
            versions = _chosen_ids(self._service, after, outcome.written)
            # Journaled before the first is stored, naming them: a crash before the index's write leaves them to the
            # sweep to withdraw (``domain.file_audits``), not shown for good beside the file they were to replace.
            audit = audits.begin(
                instance_id, caller.upn, command_events(command, outcome, after, agent, refused=refused),
                tuple((entry_id, agent.object_id if agent and agent_scope else None)
                      for _, agent_scope, entry_id in versions))
            self._store_versions(caller, instance_id, agent, after, versions, stored, session_id, operation_id)
            journal = retirements.begin(caller, instance_id, agent.object_id if agent else None, outcome.retired)
            if self._on_commit is not None:
                self._on_commit()
            writing = True
            etag = self._save_index(caller, instance_id, agent, snapshot, after, audit.id)
        except Unavailable:
            verdict = self._index_write(caller, instance_id, snapshot, stored) if writing else "refused"
            if verdict == "applied":  # no etag: the index may have moved since (a deletion's fence), so ``_finish``
                assert audit is not None  # asks before dropping a version a deletion may have hidden
                return Commit(after, None, journal, audit)
            if verdict == "refused":
                self._withdraw(caller, instance_id, agent, stored)
                retirements.end(journal)
                self._end(audit)
            raise  # unknown: both journals stay, and the sweep reads off the index whether the command committed
        except BaseException:
            self._withdraw(caller, instance_id, agent, stored)
            retirements.end(journal)
            self._end(audit)
            raise
        return Commit(after, etag, journal, audit)

    def _end(self, audit: FileAudit | None) -> None:
        if audit is not None:
            self._service.file_audits.end(audit.instance_id, audit.id)

    def _store_versions(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, after: Namespace,
        versions: list[tuple[str, bool, str]], stored: list[tuple[bool, str]], session_id: str | None,
        operation_id: str | None,
    ) -> None:
        """Append each written file's new version under the id chosen for it, noting it in ``stored`` (to
        withdraw)."""
        for rel, agent_scope, entry_id in versions:
            node = after.files[rel]
            view = self._service.append(
                caller, instance_id, Scope.AGENT if agent_scope else Scope.USER, agent, node.text,
                WriteOptions(reason=f"memory file {texts.ROOT}/{rel}", session_id=session_id,
                             operation_id=operation_id, tags=(FILE_TAG,)),
                entry_id=entry_id,
            )
            assert view.entry_id == entry_id
            stored.append((agent_scope, entry_id))

    def _save_index(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, snapshot: Snapshot, after: Namespace,
        audit_id: str,
    ) -> str | None:
        data = without_fences(index_data(snapshot.record, snapshot.entries, agent, after, caller, self._service.now()))
        data[JOURNAL_FIELD] = audit_id  # the commit and the fact that it committed, in one write
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

    def _index_write(
        self, caller: Caller, instance_id: str, snapshot: Snapshot, stored: list[tuple[bool, str]]
    ) -> Literal["applied", "refused", "unknown"]:
        """After an outage at the index's write: whether it applied, from the index read again.

        As the command read it: the write may still be in flight (a client's timeout), so the index is written
        again as it is, on the etag the late write would need: that refuses it for good, and the write is refused.
        Naming the versions this command stored (no other command can): applied. Moved with nothing of this
        command's to recognize in it (another command may have written over an applied write), or unreadable:
        unknown."""
        partition = Partition(instance_id, caller.upn)
        try:
            record = self._store.get_record(partition, INDEX_KIND, INDEX_ID)
            if record is not None and snapshot.record is not None and record.etag == snapshot.record.etag:
                try:
                    self._store.put_record(record)  # conditional on the etag it was read with
                    return "refused"
                except Conflict:  # it landed meanwhile: decide from what is there now
                    record = self._store.get_record(partition, INDEX_KIND, INDEX_ID)
        except MemoryCoreError:
            return "unknown"
        if stored and record is not None and {entry_id for _, entry_id in stored} <= named_entry_ids(record.data):
            return "applied"
        return "unknown"

    def _withdraw(
        self, caller: Caller, instance_id: str, agent: AgentContext | None, stored: list[tuple[bool, str]]
    ) -> None:
        """Erase versions this attempt stored but never published (it lost a race or failed): audited, unless
        already gone (the sweep withdrew them from a command slower than a journal's settling: ``file_audits``)."""
        keys = scope_keys(caller, instance_id, agent)
        for agent_scope, entry_id in stored:
            # ``if_stored``: read in the drop itself, so a withdrawal by the sweep just before is not audited again.
            self._service.drop_version(
                caller, keys[agent_scope], entry_id,
                "withdrawn: an unpublished version of a command that is retried or failed", if_stored=True,
            )


def scope_keys(caller: Caller, instance_id: str, agent: AgentContext | None) -> dict[bool, ProfileKey]:
    """The profiles a command under ``agent`` reads and writes, by whether a path is below /memories/agent."""
    keys = {False: ProfileKey(instance_id, caller.upn, Scope.USER)}
    if agent is not None:
        keys[True] = ProfileKey(instance_id, caller.upn, Scope.AGENT, agent.object_id)
    return keys


def _chosen_ids(service: MemoryService, after: Namespace, written: tuple[str, ...]) -> list[tuple[str, bool, str]]:
    """The written files that get a new version (path, whether in agent scope, the id it is to be stored under,
    which ``after`` now names it by); a whitespace-only file stays in the index (``InvalidInput`` past what it may hold)."""
    versions = []
    for rel in written:
        node = after.files[rel]
        if node.text.strip():
            entry_id = service.new_id()
            after.files[rel] = FileNode(node.text, entry_id)
            versions.append((rel, is_agent_path(rel), entry_id))
        elif len(node.text) > MAX_INLINE_BYTES or not _BLANK.issuperset(node.text):
            raise InvalidInput(
                f"a memory file of only whitespace holds at most {MAX_INLINE_BYTES} spaces, tabs and line "
                "breaks (no other space or separator): no person reading the memory sees it",
                code="invalid_input",
            )
    return versions


def _named(namespace: Namespace) -> int:
    """The files of ``namespace`` the index names (an appended entry's file is no name of the model's)."""
    return countOf(map(_DERIVED, namespace.files.values()), False)  # in C: every appended entry is a file
