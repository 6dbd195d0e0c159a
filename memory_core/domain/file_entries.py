"""The entries a memory tool command reads, kept per process and grown after appends.

Every memory tool command (``memory_file_service.MemoryFiles``) needs the whole of the caller's
scopes it can touch: a file's text is an entry, and every entry no file names shows as a file
under ``appended/``. Loading them cost a full read of the memory per command (about 130 ms at
10,000 entries on SQLite, and on Cosmos DB a query of every item). ``FileEntries`` keeps what
one command loaded, as the read paths keep their snapshots (``stamped_answers.StampedAnswers``):

- reused when the partition's stamp, read on this very command, is unchanged;
- grown by the entries stored since when nothing but entries was added (an agent's appends, a
  ``create``), read on that same command (``added_entries.added_since``);
- brought up to date otherwise (a clear, a hold, a forget, a superseded version dropped: an
  erasure by any process) when the store can say which entries are still stored
  (``present_entries.PresentEntries``): the kept entries still stored, the ones not kept, the
  profiles and holds as they are now, read on that same command;
- loaded again when it cannot.

The files built from the entries with one version of the file index are kept with them
(``files_for``), so a ``view`` that changed nothing costs the stamp and the index, not the memory.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from memory_core.domain.added_entries import added_since
from memory_core.domain.erased_entries import ErasedEntries, states_less_erased
from memory_core.domain.errors import Unavailable
from memory_core.domain.kept import entries_bytes
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.present_entries import PresentEntries, known_ids, refreshed_states, without
from memory_core.domain.snapshots import ChangeStamps, PartitionStamp, StampedLoad, read_spans
from memory_core.domain.stamped_answers import StampedAnswers
from memory_core.domain.store import MemoryStore

F = TypeVar("F")
V = TypeVar("V")
_MISSING = object()


@dataclass(frozen=True)
class FileEntries(Generic[F]):
    """The scopes a command reads (keyed as the caller passed them), as of the store's ``sequence``.

    Its entries never change once made, and neither do the files built from them (a command that
    writes copies what it changes); only which index version's files are held changes (``files_for``).
    What is found from the entries (``visible``, ``by_visible``) is found once, and carried over to
    the ``FileEntries`` grown or refreshed from this one (``succeeded_by``) where it still holds.
    """

    states: Mapping[bool, ScopeState]
    sequence: int
    entry_bytes: int | None = field(default=None, compare=False)
    """What ``kept.entries_bytes`` counts for the entries, when its maker knows it (counted when not)."""
    erasure_mark: int | None = None
    """The store's ``StampedLoad.erasure_mark`` in the view these entries are as of, when it keeps a log."""
    _files: dict[str | None, F] = field(default_factory=dict, compare=False, repr=False)
    _derived: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def size(self) -> int:
        """Bytes held (``kept``'s estimate): the entries, and again as much for the files built from them."""
        return 2 * self.held_bytes()

    def held_bytes(self) -> int:
        """``kept.entries_bytes`` of the entries, counted once (a grown or refreshed one is told it)."""
        if self.entry_bytes is not None:
            return self.entry_bytes
        return self._once("bytes", lambda: entries_bytes(e for s in self.states.values() for e in s.entries))

    def ids(self) -> AbstractSet[str]:
        """The ids of the entries, found once (a set that never changes; of no promised type)."""
        found: dict[str, None] = self._once("ids", lambda: dict.fromkeys(known_ids(self.states)))
        return found.keys()

    def scope_entries(self, scope: bool) -> Mapping[str, MemoryEntry]:
        """``states[scope]``'s entries by id, found once. Callers must not change the mapping."""
        return self._once(("ids", scope), lambda: {e.id: e for e in self.states[scope].entries})

    def scope_ids(self, scope: bool) -> AbstractSet[str]:
        """The ids of ``states[scope]``'s entries, found once (a set that never changes; of no promised type)."""
        return self.scope_entries(scope).keys()

    def visible(self, scope: bool) -> list[MemoryEntry]:
        """``states[scope].visible_entries()``, found once (the files and an edit's commit both need them).
        Callers must not change the list."""
        return self._once(("visible", scope), self.states[scope].visible_entries)

    def visible_ids(self, scope: bool) -> AbstractSet[str]:
        """The ids of ``visible(scope)``, found once (a set that never changes; of no promised type)."""
        found: dict[str, None] = self._once(("visible ids", scope), lambda: dict.fromkeys(e.id for e in self.visible(scope)))
        return found.keys()

    def by_visible(self, scope: bool, name: Hashable, make: Callable[[MemoryEntry], tuple[str, V] | None]) -> dict[str, V]:
        """``make(entry)`` (a key unique to the entry, and a value; None leaves it out) for each visible
        entry of ``scope``, oldest first, as a mapping; found once per ``name``, which must name ``make``
        (what it depends on included). Callers must not change the mapping."""
        maps: dict[Hashable, tuple[Callable[[MemoryEntry], Any], dict[str, Any]]] = self._once(("maps", scope), dict)
        found = maps.get(name)
        if found is None:
            found = maps[name] = (make, dict(filter(None, map(make, self.visible(scope)))))
        return found[1]

    def succeeded_by(
        self, states: Mapping[bool, ScopeState], sequence: int,
        dropped: Mapping[bool, Sequence[MemoryEntry]], added: Mapping[bool, Sequence[MemoryEntry]],
        erasure_mark: int | None = None,
    ) -> FileEntries[F]:
        """The entries after ``dropped`` were erased and ``added`` stored, per scope (``states``: these
        states less ``dropped`` plus ``added``, under the profiles and holds now), as of ``sequence``.

        What was found from these entries is carried over to them where it still holds (``carried_visible``),
        so a command after an edit does not walk every entry again; it is found anew where not.
        """
        held = self.held_bytes() - entries_bytes(e for d in dropped.values() for e in d) \
            + entries_bytes(e for a in added.values() for e in a)
        after: FileEntries[F] = FileEntries(states, sequence, held, erasure_mark)
        gone = [e.id for d in dropped.values() for e in d]
        if "ids" in self._derived:
            after._derived["ids"] = _carried(self._derived["ids"], gone,
                                             ((e.id, None) for a in added.values() for e in a))
        for scope in states:
            if ("ids", scope) in self._derived:
                after._derived[("ids", scope)] = _carried(self._derived[("ids", scope)], gone,
                                                          ((e.id, e) for e in added.get(scope, ())))
        for scope, state in states.items():
            visible = self._derived.get(("visible", scope))
            if visible is None:
                continue
            shown = carried_visible(self.states[scope], visible, state, dropped.get(scope, ()), added.get(scope, ()))
            if shown is None:
                continue
            after._derived[("visible", scope)] = [*shown.kept, *shown.added]
            if ("visible ids", scope) in self._derived:
                after._derived[("visible ids", scope)] = _carried(
                    self._derived[("visible ids", scope)], gone,
                    ((e.id, None) for e in shown.added))
            maps: dict[Hashable, tuple[Callable[[MemoryEntry], Any], dict[str, Any]]] = self._derived.get(("maps", scope), {})
            carried = after._derived[("maps", scope)] = {}
            for name, (make, mapping) in maps.items():
                erased = [found[0] for found in filter(None, map(make, shown.dropped))]
                carried[name] = (make, _carried(mapping, erased, filter(None, map(make, shown.added))))
        return after

    def _once(self, name: Hashable, find: Callable[[], Any]) -> Any:
        # Racing commands may both find it: both answers are equal, and either is kept.
        found = self._derived.get(name, _MISSING)
        if found is _MISSING:
            found = self._derived[name] = find()
        return found

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


def _carried(found: dict[str, V], gone: Iterable[str], added: Iterable[tuple[str, V]]) -> dict[str, V]:
    """A copy of ``found`` less the keys ``gone``, then ``added`` (new keys: after the others, in order).

    ``found`` is never changed: a racing command may be reading it. ``dict.copy`` clones the table in one step
    while at most a third of its slots were left by removed keys (at 60,000 keys about 0.5 ms), where ``dict(found)``
    inserts key by key once one was (about 5 ms, and so was ``frozenset - gone | added``); the removed slots go when
    a third of them are, at one such copy."""
    carried = found.copy()
    for key in gone:
        carried.pop(key, None)
    carried.update(added)
    return carried


@dataclass(frozen=True, slots=True)
class CarriedVisible:
    """The visible entries after a change: those that were visible and still are (``kept``), then the
    new ones (``added``), in order; ``dropped``: those that were visible and are gone."""

    kept: list[MemoryEntry]
    added: list[MemoryEntry]
    dropped: list[MemoryEntry]


def carried_visible(
    before: ScopeState, visible: Sequence[MemoryEntry], after: ScopeState,
    dropped: Sequence[MemoryEntry], added: Sequence[MemoryEntry],
) -> CarriedVisible | None:
    """``after.visible_entries()`` found from ``visible`` (``before``'s) instead of from every entry,
    when ``after`` is ``before`` less ``dropped`` plus ``added``; None when it must be found anew.

    It can be when what decides visibility did not change: the same clear watermark and holds, no
    replace dropped or added (the newest replace starts the document), and every added entry sorting
    after the last visible one (so it follows them and no replace hides it).
    """
    new = sorted(added, key=lambda e: e.sort_key)
    if not visibility_kept(before, after, [e.kind for e in dropped], new, visible[-1] if visible else None):
        return None
    # ``visible`` is in order (``visible_entries`` sorts it, and what this carries keeps it so): the dropped entries
    # it holds are found by bisection, not by a walk of every visible entry.
    kept, gone = without(visible, dropped) if dropped else (list(visible), [])
    shown = ScopeState(after.key, after.profile, new, after.holds).visible_entries() if new else []
    return CarriedVisible(kept, shown, gone)


def visibility_kept(
    before: ScopeState, after: ScopeState, dropped: Iterable[EntryKind], added: Sequence[MemoryEntry],
    newest: MemoryEntry | None,
) -> bool:
    """True when the entries still stored that showed in ``before`` (whose newest shown is ``newest``)
    show in ``after`` too, and ``added`` (oldest first) shows or not by itself, after them: the same
    clear watermark and holds, no replace among ``dropped`` (the kinds of the entries erased) or
    ``added``, and every added entry sorting after ``newest``. ``after`` is ``before`` less the
    dropped entries plus ``added``."""
    watermark = before.profile.cleared_on if before.profile else None
    if (after.profile.cleared_on if after.profile else None) != watermark or after.holds != before.holds:
        return False
    if EntryKind.REPLACE in dropped or any(e.kind is EntryKind.REPLACE for e in added):
        return False
    return not (added and newest is not None and added[0].sort_key <= newest.sort_key)


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
        return FileEntries(dict(zip(keys, loaded.states, strict=True)), loaded.sequence,
                           erasure_mark=loaded.erasure_mark)

    def succeeded(current: FileEntries[Any], states: Mapping[Any, ScopeState],
                  dropped: Mapping[Any, Sequence[MemoryEntry]], loaded: StampedLoad) -> FileEntries[Any]:
        # What ``loaded`` read of each scope beyond ``current`` is what was added (grow, refresh alike).
        added = {scope: new.entries for scope, new in zip(keys, loaded.states, strict=True)}
        return current.succeeded_by(states, loaded.sequence, dropped, added, loaded.erasure_mark)

    def grow(current: FileEntries[Any], at: PartitionStamp) -> FileEntries[Any] | None:
        added = added_since(stamps, list(keys.values()), current.sequence, at)
        if added is None:
            return None  # something other than an entry was written since
        states = {
            scope: replace(state, profile=new.profile, entries=[*state.entries, *new.entries], holds=new.holds)
            for (scope, state), new in zip(current.states.items(), added.states, strict=True)
        }
        return succeeded(current, states, {}, added)

    def refresh(current: FileEntries[Any]) -> FileEntries[Any] | None:
        # Asked only here: an isinstance check of a Protocol costs more than a kept read.
        if current.erasure_mark is not None and isinstance(store, ErasedEntries):
            erased = store.load_erased(list(keys.values()), current.ids(), current.erasure_mark,
                                       current.sequence)
            if erased is not None:
                states, dropped = states_less_erased(current.states, erased,
                                                     {scope: current.scope_entries(scope) for scope in keys})
                return succeeded(current, states, dropped, erased.load)
        if not isinstance(store, PresentEntries):
            return None
        loaded = store.load_present(list(keys.values()), current.ids(), current.sequence)
        states, dropped = refreshed_states(current.states, loaded)
        return succeeded(current, states, dropped, loaded.load)

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
