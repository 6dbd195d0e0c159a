"""A memory-tool edit's old versions, journaled: a crash between its commit and their retirement is finished by the
sweep.

A command that changes a file stores the new version, commits the file index naming it (one conditional write), then
retires the versions the index no longer names: it forgets those whose text it removed (pending an operator, or
erased at once) and drops those whose whole text the new version keeps. A crash or an outage between the commit and
the retirement left the old version stored for good with no name: its text, removed from the file, still showed in
every read and came back as ``/memories/appended/<id>.md``, and nothing would ever retire it.

So before the commit a command writes a journal record (kind ``file_retirement``, in the instance's deletions
partition, naming no text) of the versions it will retire, and erases the record once they are retired. The sweep
(``replay``) finishes every settled record (``domain.journals``): a version the index still names was never retired by a
commit (the command lost a race, or failed before it) and is left; one it no longer names is retired as the command
would have, unless a deletion request naming it was filed since the command began (the command's forget got that
far: one an operator rejected meanwhile is not filed again). A sweep claims a record before it replays it (a conditional write), so two sweeps at once retire a
version once: under operator approval a second forget would file a second request.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memory_core.domain import journals
from memory_core.domain.deletion import UnreadableRequest, read_request
from memory_core.domain.errors import NotFound
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND, named_entry_ids
from memory_core.domain.identity import Caller
from memory_core.domain.memory_files import Retire
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from memory_core.domain.store import MemoryStore

KIND = "file_retirement"
#: How long a record waits beyond ``journals.SETTLE`` per version it names: a directory's delete of 2,000 files under
#: approval takes about two minutes on Cosmos DB, and is not to be raced by the sweep.
SETTLE_PER_VERSION = timedelta(milliseconds=250)
RETIRED_BY_SWEEP = "(finished by the sweep after an interruption)"

Forget = Callable[[Caller, str, str], object]
Drop = Callable[[Caller, ProfileKey, str, str], None]


@dataclass(frozen=True, slots=True)
class Retirement:
    """The versions one command retires once its commit names their successors."""

    id: str
    instance_id: str
    upn: str
    agent_object_id: str | None
    started_on: datetime
    retired: tuple[Retire, ...]

    def to_record(self) -> Record:
        return Record(deletions_partition(self.instance_id), KIND, self.id, {
            "upn": self.upn, "agent_object_id": self.agent_object_id, "started_on": self.started_on.isoformat(),
            "retired": [[r.entry_id, r.agent_scope, r.removes_content] for r in self.retired],
        })

    @staticmethod
    def from_record(record: Record) -> Retirement:
        data: dict[str, Any] = record.data
        return Retirement(
            record.id, record.partition.instance_id, data["upn"], data.get("agent_object_id"),
            datetime.fromisoformat(data["started_on"]),
            tuple(Retire(str(entry_id), bool(agent_scope), bool(removes)) for entry_id, agent_scope, removes
                  in data["retired"]),
        )

    def key(self, agent_scope: bool) -> ProfileKey:
        if agent_scope and self.agent_object_id:
            return ProfileKey(self.instance_id, self.upn, Scope.AGENT, self.agent_object_id)
        return ProfileKey(self.instance_id, self.upn, Scope.USER)


class FileRetirements:
    """Begin, end and replay the journal of a memory-tool command's retirements (see the module's docstring).

    ``forget(caller, instance_id, entry_id)`` and ``drop(caller, key, entry_id, detail)`` retire one version as the
    command does (``MemoryService.forget``, ``MemoryService.drop_version`` with ``maybe_hidden``)."""

    def __init__(
        self, store: MemoryStore, *, clock: Callable[[], datetime], forget: Forget, drop: Drop,
    ) -> None:
        self._store = store
        self._clock = clock
        self._forget = forget
        self._drop = drop

    def begin(
        self, caller: Caller, instance_id: str, agent_object_id: str | None, retired: tuple[Retire, ...]
    ) -> Retirement | None:
        """Journal ``retired`` before the commit that names their successors (None, and no write, for none).
        Raises the store's errors: nothing is committed then."""
        if not retired:
            return None
        retirement = Retirement(uuid.uuid4().hex, instance_id, caller.upn, agent_object_id, self._clock(), retired)
        self._store.put_record(retirement.to_record())
        return retirement

    def end(self, retirement: Retirement | None) -> None:
        """The versions are retired, or the commit certainly did not happen: the record goes."""
        if retirement is not None:
            self._store.delete_record(deletions_partition(retirement.instance_id), KIND, retirement.id)

    def replay(self, instance_id: str | None = None) -> int:
        """Retire what every settled record names and its user's file index no longer names (``journals.replay``:
        claimed once, so two sweeps at once never retire a version twice); answers how many records were finished."""
        return journals.replay(
            self._store, KIND, instance_id, clock=self._clock,
            wait=lambda record: SETTLE_PER_VERSION * len(record.data["retired"]),
            finish=lambda record: self._finish(Retirement.from_record(record)))

    def _finish(self, retirement: Retirement) -> None:
        index = self._store.get_record(Partition(retirement.instance_id, retirement.upn), INDEX_KIND, INDEX_ID)
        named = named_entry_ids(index.data) if index else set()
        caller = Caller(retirement.upn)
        for retire in retirement.retired:
            if retire.entry_id in named:
                continue  # no commit retired it: the command lost its race or failed before committing
            if retire.removes_content:
                if self._requested_since(retirement, retire.entry_id):
                    continue  # its forget was filed (the command's, or a racing one): decided there, maybe rejected
                with contextlib.suppress(NotFound):  # gone, or hidden by a deletion already
                    self._forget(caller, retirement.instance_id, retire.entry_id)
            elif self._store.get_entry(retirement.instance_id, retirement.upn, retire.entry_id) is not None:
                self._drop(caller, retirement.key(retire.agent_scope), retire.entry_id,
                           f"superseded: its whole text is kept in the file's new version {RETIRED_BY_SWEEP}")
        self.end(retirement)

    def _requested_since(self, retirement: Retirement, entry_id: str) -> bool:
        """Whether a deletion request naming ``entry_id`` was filed since the command began: under approval the
        command's forget got that far before it stopped (or another forget of the entry took it). An operator may
        have rejected it since, the entry showing again: forgotten again here, it would file a second request for
        the operator to reject twice. One query of the instance's requests naming the entry."""
        requests = self._store.query_records(deletions_partition(retirement.instance_id), RecordKind.DELETION_REQUEST,
                                             {"entry_id": entry_id, "upn": retirement.upn})
        return any(_filed_since(r, retirement.started_on) for r in requests)


def _filed_since(record: Record, started_on: datetime) -> bool:
    """Whether the stored request was filed at or after ``started_on``; one this release cannot read (another
    release's layout) counts as filed since: a second request is the harm this guards against."""
    request = read_request(record)
    return isinstance(request, UnreadableRequest) or request.requested_on >= started_on
