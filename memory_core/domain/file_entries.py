"""The entries a memory tool command reads, kept per process and grown after appends.

Every memory tool command (``memory_file_service.MemoryFiles``) needs the whole of the caller's
scopes it can touch: a file's text is an entry, and every entry no file names shows as a file
under ``appended/``. Loading them cost a full read of the memory per command (about 130 ms at
10,000 entries on SQLite, and on Cosmos DB a query of every item). ``FileEntries`` keeps what
one command loaded, as the read paths keep their snapshots (``stamped_answers.StampedAnswers``):

- reused when the partition's stamp, read on this very command, is unchanged;
- grown by the entries stored since when nothing but entries was added (an agent's appends, a
  ``create``), read on that same command (``snapshots.added_since``);
- brought up to date otherwise (a clear, a hold, a forget, a superseded version dropped: an
  erasure by any process) when the store can say which entries are still stored
  (``present_entries.PresentEntries``): the kept entries still stored, the ones not kept, the
  profiles and holds as they are now, read on that same command;
- loaded again when it cannot.

The files built from the entries with one version of the file index are kept with them
(``files_for``), so a ``view`` that changed nothing costs the stamp and the index, not the memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from memory_core.domain.errors import Unavailable
from memory_core.domain.kept import entries_bytes
from memory_core.domain.models import ProfileKey, ScopeState
from memory_core.domain.present_entries import PresentEntries, known_ids, refreshed_states
from memory_core.domain.snapshots import ChangeStamps, PartitionStamp, added_since, read_spans
from memory_core.domain.stamped_answers import StampedAnswers
from memory_core.domain.store import MemoryStore

F = TypeVar("F")


@dataclass(frozen=True)
class FileEntries(Generic[F]):
    """The scopes a command reads (keyed as the caller passed them), as of the store's ``sequence``.

    Its entries never change once made, and neither do the files built from them (a command that
    writes copies what it changes); only which index version's files are held changes (``files_for``).
    """

    states: Mapping[bool, ScopeState]
    sequence: int
    _files: dict[str | None, F] = field(default_factory=dict, compare=False, repr=False)

    @property
    def size(self) -> int:
        """Bytes held (``kept``'s estimate): the entries, and again as much for the files built from them."""
        return 2 * entries_bytes(e for state in self.states.values() for e in state.entries)

    def files_for(self, index_etag: str | None, build: Callable[[], F]) -> F:
        """The files built from these entries with the index at ``index_etag``, built once per etag.

        Only the newest etag's files are held: an index changes with every command that writes.
        """
        files = self._files.get(index_etag)
        if files is None:
            files = build()
            self._files.clear()  # a racing command may build them too: both builds are equal
            self._files[index_etag] = files
        return files


def file_entries(
    store: MemoryStore, kept: StampedAnswers[Any] | None, keys: Mapping[bool, ProfileKey]
) -> FileEntries[Any]:
    """The current entries of ``keys`` (one partition): kept, grown, or loaded in full.

    With ``kept`` None, or a store that does not stamp its writes, every call loads. Raises what
    the store's reads raise.
    """
    def unkept() -> FileEntries[Any]:
        return FileEntries(dict(zip(keys, store.load(list(keys.values())), strict=True)), 0)

    if kept is None or not isinstance(store, ChangeStamps):
        return unkept()
    stamps: ChangeStamps = store

    def load() -> FileEntries[Any]:
        loaded = stamps.load_since(list(keys.values()), None)
        return FileEntries(dict(zip(keys, loaded.states, strict=True)), loaded.sequence)

    def grow(current: FileEntries[Any], at: PartitionStamp) -> FileEntries[Any] | None:
        added = added_since(stamps, list(keys.values()), current.sequence, at)
        if added is None:
            return None  # something other than an entry was written since
        states = {
            scope: replace(state, profile=new.profile, entries=[*state.entries, *new.entries], holds=new.holds)
            for (scope, state), new in zip(current.states.items(), added.states, strict=True)
        }
        return FileEntries(states, added.sequence)

    refresh = None
    if isinstance(store, PresentEntries):
        present: PresentEntries = store

        def refresh(current: FileEntries[Any]) -> FileEntries[Any]:
            loaded = present.load_present(list(keys.values()), known_ids(current.states))
            return FileEntries(refreshed_states(current.states, loaded), loaded.load.sequence)

    first = next(iter(keys.values()))
    try:
        with read_spans(store)():  # the stamp this command checks may label its own load, never a later one
            answer: FileEntries[Any] = kept.answer(_key(keys), first.instance_id, first.upn, load, grow=grow,
                                                   refresh=refresh)
    except Unavailable:
        # A store gives up a read with its stamp when other writers keep changing more than entries
        # (concurrent edits of one file): the command reads without one, and keeps nothing, as
        # every command did before entries were kept. An account that is down raises here again.
        return unkept()
    return answer


def _key(keys: Mapping[bool, ProfileKey]) -> tuple[object, ...]:
    return ("memory-files", tuple(keys.items()))
