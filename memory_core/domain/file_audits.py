"""The ``memory_file`` audit events of a memory-tool command, journaled so that a committed command is audited
exactly once, even when its process dies right after the commit.

The index's write is a command's commit, and it lives in the user's partition, where the sweep cannot find a journal;
the journal lives in the instance's deletions partition (``domain.journals``). So a command writes its events, not yet
stored, into a journal record (kind ``file_audit``) before the index's write, and the index it commits names that
record (``JOURNAL_FIELD``): whether the command committed is then read off the index. After the commit the command
writes the events and erases the record. Every event's id is made from the record's id, so an event written twice
(the command and a replay at once) is one event, written over with the same data.

A record is finished by whoever comes first: the command itself; the user's next command, before it commits an index
that no longer names the record (``finish_named``: without that, a crash's events would be read as uncommitted); or
the sweep (``replay``, settled records, claimed once). A record its user's index does not name belongs to a command
that never committed (a lost race, a failure, a crash before the index's write), or to one finished already: it is
erased and writes nothing.

The record is written before the command stores its new versions, and names them (their ids chosen first,
``MemoryService.new_id``): a command killed between a version's append and the index's write left that version
stored and no file naming it, its unacknowledged text shown under ``/memories/appended/`` and in every read, and a
retry by the model stored the edit twice. So the sweep withdraws the versions of a record its user's index does not
name (``drop``: ``MemoryService.drop_version``, audited ``withdrawn``, in either deletion mode: an unpublished version
is no user's deletion). It does so inside a deletion's fence (``domain.custody_fence``): standing it is a conditional
write of the index, so the command's own late write, if still in flight, is refused rather than committing versions
withdrawn under it, and no command that writes reads the files (and commits an index naming an ``appended/`` file the
withdrawal then erases) until it is lifted; a ``view`` still reads meanwhile. A version the index names (the model
moved ``appended/<id>.md`` to a name of its own) is kept. While a version the record names is not stored, the command
may still be under way and store it (slower than ``journals.SETTLE`` before its append): the record is kept, and
replayed again, until ``HORIZON`` after the command's start, past which no command still runs, withdrawing whatever
was stored by then. A withdrawal the command made itself meanwhile is not audited again (``if_stored``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from memory_core.domain import custody_fence, journals
from memory_core.domain import memory_paths as texts
from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.errors import Conflict
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND, named_entry_ids
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_files import Namespace, Outcome, Retire, is_agent_path
from memory_core.domain.models import ProfileKey, Scope, sha256_hex
from memory_core.domain.records import Partition, Record, deletions_partition
from memory_core.domain.store import MemoryStore

KIND = "file_audit"
#: The index's field naming the journal of the command that last committed it.
JOURNAL_FIELD = "audit_journal"
#: How long after its start a command's record is kept while a version it names is not stored: past every bound on a
#: command's life, so that one slower than ``journals.SETTLE`` before an append, then killed before its commit, still
#: has the version withdrawn. The Functions host ends an execution after its ``functionTimeout`` (Flex Consumption's
#: default, 30 minutes: host.json sets none), and a store call gives up after ``COSMOS_OPERATION_TIMEOUT`` (600 s at
#: most); a day leaves room for a paused process, at the cost of a few point reads per sweep for a rare record.
HORIZON = timedelta(days=1)
WITHDRAWN_BY_SWEEP = ("withdrawn: an unpublished version of a command that stopped before its commit "
                      "(finished by the sweep after an interruption)")

Drop = Callable[[Caller, ProfileKey, str, str], None]


@dataclass(frozen=True, slots=True)
class FileEvent:
    """One ``memory_file`` event as journaled: no text and no path, its hash only (as the event says)."""

    scope: str
    agent_object_id: str | None
    entry_id: str | None
    content_sha256: str | None
    byte_count: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class FileAudit:
    """The events of one command, stamped ``started_on`` (the command's time) and stored under ids made from ``id``;
    ``versions``: the new versions it stores, each its entry id and agent (None: the user's scope), withdrawn by a
    replay when it never committed (a record of an older release names none)."""

    id: str
    instance_id: str
    upn: str
    started_on: datetime
    events: tuple[FileEvent, ...]
    versions: tuple[tuple[str, str | None], ...] = ()

    def to_record(self) -> Record:
        return Record(deletions_partition(self.instance_id), KIND, self.id, {
            "upn": self.upn, "started_on": self.started_on.isoformat(),
            "events": [[e.scope, e.agent_object_id, e.entry_id, e.content_sha256, e.byte_count, e.detail]
                       for e in self.events],
            "versions": [list(version) for version in self.versions],
        })

    @staticmethod
    def from_record(record: Record) -> FileAudit:
        data: dict[str, Any] = record.data
        return FileAudit(record.id, record.partition.instance_id, data["upn"],
                         datetime.fromisoformat(data["started_on"]),
                         tuple(FileEvent(*fields) for fields in data["events"]),
                         tuple((str(entry_id), agent) for entry_id, agent in data.get("versions") or ()))

    def key(self, agent_object_id: str | None) -> ProfileKey:
        if agent_object_id:
            return ProfileKey(self.instance_id, self.upn, Scope.AGENT, agent_object_id)
        return ProfileKey(self.instance_id, self.upn, Scope.USER)


class FileAudits:
    """Begin, finish and replay the journal of a memory-tool command's audit events (see the module's docstring).

    ``drop(caller, key, entry_id, detail)`` withdraws one unpublished version as the command does
    (``MemoryService.drop_version`` with ``maybe_hidden``)."""

    def __init__(self, store: MemoryStore, audit: AuditTrail, *, clock: Callable[[], datetime], drop: Drop) -> None:
        self._store = store
        self._audit = audit
        self._clock = clock
        self._drop = drop

    def begin(
        self, instance_id: str, upn: str, events: tuple[FileEvent, ...],
        versions: tuple[tuple[str, str | None], ...] = (),
    ) -> FileAudit:
        """Journal ``events`` and the ``versions`` to be stored (entry id, agent) before they are, and before the
        index's write, which is to name the record (``JOURNAL_FIELD``). Raises the store's errors: nothing is
        stored or committed then."""
        journal = FileAudit(uuid.uuid4().hex, instance_id, upn, self._clock(), events, versions)
        self._store.put_record(journal.to_record())
        return journal

    def finish(self, journal: FileAudit) -> None:
        """The command committed: write its events and erase the record. Each event is the same whoever writes it
        (the command, its user's next command, the sweep), and written twice is stored once. Raises the store's
        errors: the record stays for the next try."""
        for number, event in enumerate(journal.events):
            _, record = self._audit.event(
                AuditAction.MEMORY_FILE, actor=journal.upn, instance_id=journal.instance_id, upn=journal.upn,
                at=journal.started_on, suffix=f"{journal.id[:6]}{number:06x}", scope=event.scope,
                agent_object_id=event.agent_object_id, entry_id=event.entry_id, content_sha256=event.content_sha256,
                byte_count=event.byte_count, detail=event.detail,
            )
            self._store.put_record(record)  # an upsert by a deterministic id: a second write is the same event
        self.end(journal.instance_id, journal.id)

    def end(self, instance_id: str, journal_id: str) -> None:
        """The events are written, or the command certainly did not commit: the record goes."""
        self._store.delete_record(deletions_partition(instance_id), KIND, journal_id)

    def finish_named(self, instance_id: str, index: Record | None) -> None:
        """Before a command commits over ``index``: finish the journal it names, if still there (one point read).
        A record written over without this would read as a command that never committed."""
        journal_id = index.data.get(JOURNAL_FIELD) if index is not None else None
        if not journal_id:
            return
        record = self._store.get_record(deletions_partition(instance_id), KIND, str(journal_id))
        if record is not None:
            self.finish(FileAudit.from_record(record))

    def replay(self, instance_id: str | None = None) -> int:
        """Finish every settled record (``journals.replay``: claimed once): its events written when its user's index
        names it, none when not. Answers how many records were finished."""
        return journals.replay(self._store, KIND, instance_id, clock=self._clock, wait=lambda record: timedelta(0),
                               finish=lambda record: self._replay(FileAudit.from_record(record)))

    def _replay(self, journal: FileAudit) -> None:
        partition = Partition(journal.instance_id, journal.upn)
        index = self._store.get_record(partition, INDEX_KIND, INDEX_ID)
        if _names(index, journal):
            self.finish(journal)
            return
        stored = [(entry_id, agent) for entry_id, agent in journal.versions
                  if self._store.get_entry(journal.instance_id, journal.upn, entry_id) is not None]
        if stored:  # one read per version, and no write unless one is left: what a crash leaves, rarely
            with custody_fence.fence(self._store, journal.instance_id, journal.upn, clock=self._clock):
                index = self._store.get_record(partition, INDEX_KIND, INDEX_ID)
                if _names(index, journal):  # its write landed before the fence: committed after all
                    self.finish(journal)
                    return
                named = named_entry_ids(index.data) if index is not None else set()
                for entry_id, agent in stored:
                    if entry_id not in named:  # a name the model gave an ``appended/`` file since keeps it
                        # Read again in the drop (``if_stored``): the command, refused by the fence, may have
                        # withdrawn it itself since the read above, audited there.
                        self._drop(Caller(journal.upn), journal.key(agent), entry_id, WITHDRAWN_BY_SWEEP)
        if len(stored) < len(journal.versions) and self._clock() < journal.started_on + HORIZON:
            # A version not stored (yet): the command may still be under way and store it, then die before its
            # index's write. The record stays, replayed again once settled, until no command can still be running,
            # naming only the versions still to come: those handled here are not fenced or audited again.
            self._still_to_come(journal, {entry_id for entry_id, _ in stored})
            return
        self.end(journal.instance_id, journal.id)

    def _still_to_come(self, journal: FileAudit, handled: set[str]) -> None:
        """Rewrite ``journal``'s record to name only the versions not in ``handled``, on the etag it has now: gone
        (the command finished or ended it) or changed meanwhile, it is left as it is."""
        if not handled:
            return
        record = self._store.get_record(deletions_partition(journal.instance_id), KIND, journal.id)
        if record is None:
            return
        left = [list(version) for version in journal.versions if version[0] not in handled]
        with contextlib.suppress(Conflict):  # another writer's since: the next replay reads it again
            self._store.put_record(replace(record, data={**record.data, "versions": left}))


def _names(index: Record | None, journal: FileAudit) -> bool:
    """Whether the index committed ``journal``'s command (its last commit, or one a later commit finished first)."""
    return index is not None and index.data.get(JOURNAL_FIELD) == journal.id



def command_events(
    command: Mapping[str, Any], outcome: Outcome, after: Namespace, agent: AgentContext | None, *,
    refused: bool = False,
) -> tuple[FileEvent, ...]:
    """One event for each path ``outcome`` changed, of the file ``after`` names there (its entry, SHA-256 and size;
    none for a directory or a file it removed). ``refused``: the command failed after making directories
    (``FailedWithSideEffect``), audited as what it made."""
    events = []
    for rel in outcome.audit_paths:
        node = after.files.get(rel)
        agent_scope = is_agent_path(rel)
        events.append(FileEvent(
            (Scope.AGENT if agent_scope else Scope.USER).value, agent.object_id if agent and agent_scope else None,
            node.entry_id if node else None, sha256_hex(node.text) if node else None,
            len(node.text.encode("utf-8")) if node else None,
            _detail(command, rel, outcome.retired, refused=refused),
        ))
    return tuple(events)


def _detail(command: Mapping[str, Any], rel: str, retired: tuple[Retire, ...], *, refused: bool) -> str:
    """The command, the path's SHA-256 (a name is the user's words too: the trail keeps no text), what it replaced;
    for a refused command, the directory it made."""
    path_hash = f"path-sha256:{sha256_hex(texts.ROOT + '/' + rel)}"
    if refused:
        return f"{command['command']} refused, made directory {path_hash}"
    old = ", ".join(r.entry_id for r in retired) or "none"
    return f"{command['command']} {path_hash} (replaced entries: {old})"
