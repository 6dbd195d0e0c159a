"""The reads of the SQLite store's profiles and entries: ``SqliteReads``, that half of ``SqliteMemoryStore``.

Loads (whole, after a rowid, the entries still present, the entries erased since a mark (``sqlite_erased_log``),
the entries no clear hides), the partition stamps' reads (``sqlite_stamps``), entries pages and counts, the facts
of a window's entries (``entry_facts``) and of every scope of a partition (``partition_facts``), the partition's
profiles and owners listed, one entry by id, and the full-text search (``sqlite_fulltext``). A read that takes
several statements and must see one state of the file runs them in one read transaction
(``SqliteDatabase.reading``, ``snapshot``); WAL lets writers go on meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from memory_core.adapters.sqlite_database import SqliteDatabase
from memory_core.adapters.sqlite_erased_log import (
    LOWEST_SQL,
    MARK_SQL,
    OLDEST_SQL,
    SINCE_SQL,
    covers,
    stored_after,
)
from memory_core.adapters.sqlite_fulltext import page_of_matches
from memory_core.adapters.sqlite_records import with_kind
from memory_core.adapters.sqlite_rows import (
    ENTRY_COLUMNS,
    FACT_COLUMNS,
    entry_from_row,
    facts_from_row,
    id_not_in,
    in_list,
    iso,
    parse,
    profile_from_row,
    profiles_filter,
    window_filter,
)
from memory_core.adapters.sqlite_stamps import SEQUENCE_SQL, STAMP_SQL
from memory_core.domain.budget import entry_window
from memory_core.domain.erased_entries import ErasedLoad
from memory_core.domain.models import EntryKind, Hold, MemoryEntry, ProfileKey, Scope, ScopeState
from memory_core.domain.present_entries import PresentLoad
from memory_core.domain.records import RecordKind
from memory_core.domain.snapshots import PartitionStamp, StampedLoad
from memory_core.domain.store import EntryCount, EntryFacts, EntryWindow, PageCursor, ScopeFacts

_IDS_PER_READ = 512  # ids bound in one IN (...) list (a power of two: ``in_list``), well under SQLite's limit
# A partition's holds, read by every load: the kind written in (``with_kind``), 3.7 against 10.6 µs bound.
_HOLDS_SQL = with_kind("SELECT data FROM records WHERE instance_id=? AND owner=? AND kind={kind} ORDER BY id",
                       RecordKind.HOLD)


class SqliteReads:
    """The ``MemoryStore`` Protocol's reads of profiles and entries, its ``ChangeStamps`` and ``FullTextIndex``
    (mixed into ``SqliteMemoryStore``, which sets ``_db``). Every read raises ``Unavailable`` when SQLite fails."""

    _db: SqliteDatabase

    # -- MemoryStore --------------------------------------------------------

    def load(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        if not keys:
            return []
        where, params = profiles_filter(keys)
        entries = self._db.read(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE {where} ORDER BY created_on, id", params)
        return self._states(keys, self._profiles(keys), entries)

    # -- ChangeStamps (domain.snapshots) ------------------------------------------

    def partition_stamp(self, instance_id: str, upn: str) -> PartitionStamp:
        rows = self._db.read(STAMP_SQL, [instance_id, upn])
        return _stamp_of(rows)

    def entry_sequence(self, instance_id: str, upn: str) -> int:
        """The largest rowid of the partition's entries (see ``SEQUENCE_SQL``)."""
        return int(self._db.read(SEQUENCE_SQL, [instance_id, upn])[0][0])

    def load_stamped_heads(self, keys: Sequence[ProfileKey]) -> StampedLoad:
        """One read transaction: the stamp, the entry sequence (``entry_sequence``'s) and ``load_heads``."""
        instance_id, upn = keys[0].instance_id, keys[0].upn
        with self._db.reading() as db:
            stamp = db.execute(STAMP_SQL, (instance_id, upn)).fetchall()
            sequence = db.execute(SEQUENCE_SQL, (instance_id, upn)).fetchone()[0]
            mark = db.execute(MARK_SQL).fetchone()[0]
            states = self.load_heads(keys)
        return StampedLoad(_stamp_of(stamp), int(sequence), states, int(mark))

    def load_since(self, keys: Sequence[ProfileKey], after: int | None) -> StampedLoad:
        """One read transaction: the stamp, profiles, holds and the entries after ``after`` (rowid)."""
        instance_id, upn = keys[0].instance_id, keys[0].upn
        where, params = profiles_filter(keys)
        if after is None:
            sql = f"SELECT rowid, {ENTRY_COLUMNS} FROM entries WHERE {where} ORDER BY created_on, id"
        else:
            # NOT INDEXED: walk the rowids after ``after`` instead of the profile's whole index range.
            sql = (f"SELECT rowid, {ENTRY_COLUMNS} FROM entries NOT INDEXED WHERE rowid > ? AND {where}"
                   " ORDER BY created_on, id")
            params = [after, *params]
        with self._db.reading() as db:
            stamp = db.execute(STAMP_SQL, (instance_id, upn)).fetchall()
            profiles = self._profiles(keys)
            rows = db.execute(sql, params).fetchall()
            # A full load labels itself with the partition's sequence, not just these profiles':
            # the next load after it then walks only rows stored since, not the other profiles'.
            partition = db.execute(SEQUENCE_SQL, (instance_id, upn)).fetchone()[0] if after is None else 0
            mark = db.execute(MARK_SQL).fetchone()[0]
            states = self._states(keys, profiles, [row[1:] for row in rows])
        sequence = max([after or 0, partition, *(row[0] for row in rows)])
        return StampedLoad(_stamp_of(stamp), sequence, states, int(mark))

    def load_present(self, keys: Sequence[ProfileKey], known: Collection[str], after: int) -> PresentLoad:
        """``PresentEntries``: one read transaction: the stamp, profiles, holds, the ids of the keys'
        entries and the rows of those not ``known``, and the partition's sequence.

        New entries are found by id, not by rowid (``after`` is not used): after an erasure a rowid
        may be handed out again (``SEQUENCE_SQL``), so a kept read's sequence says nothing about
        what was stored since.
        """
        instance_id, upn = keys[0].instance_id, keys[0].upn
        where, params = profiles_filter(keys)
        with self._db.reading() as db:
            stamp = db.execute(STAMP_SQL, (instance_id, upn)).fetchall()
            profiles = self._profiles(keys)
            # One row of JSON, not a row per entry: a third of the time at 10,000 entries.
            present = frozenset(json.loads(db.execute(
                f"SELECT json_group_array(id) FROM entries WHERE {where}", params).fetchone()[0]))
            unknown = sorted(present.difference(known))
            rows: list[Any] = []
            for start in range(0, len(unknown), _IDS_PER_READ):
                chunk_marks, chunk = in_list(unknown[start:start + _IDS_PER_READ])
                rows += db.execute(
                    f"SELECT {ENTRY_COLUMNS} FROM entries WHERE instance_id=? AND upn=?"
                    f" AND id IN ({chunk_marks}) ORDER BY created_on, id",
                    [instance_id, upn, *chunk]).fetchall()
            sequence = db.execute(SEQUENCE_SQL, (instance_id, upn)).fetchone()[0]
            mark = db.execute(MARK_SQL).fetchone()[0]
            states = self._states(keys, profiles, rows)
        self._db.count(len(present) + len(rows))
        loaded = StampedLoad(_stamp_of(stamp), int(sequence), states, int(mark))
        return PresentLoad(loaded, present)

    def load_erased(
        self, keys: Sequence[ProfileKey], known: Collection[str], mark: int, after: int
    ) -> ErasedLoad | None:
        """``ErasedEntries``: one read transaction: the stamp, profiles, holds, the log's rows of the partition
        after ``mark``, the keys' entries not ``known`` stored since (``sqlite_erased_log.stored_after``) and the
        log's mark. None when the log no longer reaches back to ``mark``.
        """
        instance_id, upn = keys[0].instance_id, keys[0].upn
        where, params = profiles_filter(keys)
        with self._db.reading() as db:
            if not covers(db.execute(OLDEST_SQL).fetchone()[0], mark):
                return None
            erased = frozenset(row[0] for row in db.execute(SINCE_SQL, (instance_id, upn, mark)))
            lowest = stored_after(after, db.execute(LOWEST_SQL, (mark,)).fetchone()[0])
            stamp = db.execute(STAMP_SQL, (instance_id, upn)).fetchall()
            profiles = self._profiles(keys)
            # NOT INDEXED: walk the rowids after ``lowest`` (a few), not the profiles' whole index range.
            rows = [row for row in db.execute(
                f"SELECT rowid, {ENTRY_COLUMNS} FROM entries NOT INDEXED WHERE rowid > ? AND {where}"
                " ORDER BY created_on, id", [lowest, *params])
                if row[1] not in known]
            now = db.execute(MARK_SQL).fetchone()[0]
            partition = db.execute(SEQUENCE_SQL, (instance_id, upn)).fetchone()[0]
            states = self._states(keys, profiles, [row[1:] for row in rows])
        self._db.count(len(erased) + len(rows))
        # The partition's largest rowid, not the largest read: that may be another user's row, and once it is
        # erased this user's next entry takes a lower rowid, which a grow from it would skip for good.
        sequence = int(partition)
        return ErasedLoad(StampedLoad(_stamp_of(stamp), sequence, states, int(now)), erased)

    def load_unhidden(self, keys: Sequence[ProfileKey]) -> StampedLoad:
        """``UnhiddenLoads`` (``domain.visible_loads``): one read transaction, as ``load_since(keys, None)``,
        but per profile only the entries after its clear's or whole-profile hold's watermark (read
        first, in the same transaction): the entries a pending clear hides are not read."""
        instance_id, upn = keys[0].instance_id, keys[0].upn
        with self._db.reading() as db:
            stamp = db.execute(STAMP_SQL, (instance_id, upn)).fetchall()
            profiles = self._profiles(keys)
            holds = self._holds(instance_id, upn)
            rows: list[Any] = []
            for head in self._states(keys, profiles, [], holds):
                window = entry_window(head)
                where, params = window_filter(EntryWindow(head.key, after=window.after if window else None))
                rows += db.execute(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE {where} ORDER BY created_on, id",
                                   params).fetchall()
            sequence = db.execute(SEQUENCE_SQL, (instance_id, upn)).fetchone()[0]
            states = self._states(keys, profiles, rows, holds)
        return StampedLoad(_stamp_of(stamp), int(sequence), states)

    def _profiles(self, keys: Sequence[ProfileKey]) -> list[Any]:
        where, params = profiles_filter(keys)
        return self._db.read(f"SELECT * FROM profiles WHERE {where}", params)

    def _states(
        self, keys: Sequence[ProfileKey], profiles: Sequence[Any], entries: Sequence[Any],
        holds: tuple[Hold, ...] | None = None,
    ) -> list[ScopeState]:
        """States of ``keys`` (one partition) from profile and entry rows, with the partition's holds
        (read here unless the caller read them already in the same transaction)."""
        if holds is None:
            holds = self._holds(keys[0].instance_id, keys[0].upn)
        by_id = {k.profile_id: k for k in keys}
        profile_of = {row["profile_id"]: profile_from_row(by_id[row["profile_id"]], row) for row in profiles}
        entries_of: dict[str, dict[str, MemoryEntry]] = {k.profile_id: {} for k in keys}
        for row in entries:
            entries_of[row[1]].setdefault(row[0], entry_from_row(by_id[row[1]], row))
        return [
            ScopeState(k, profile_of.get(k.profile_id), list(entries_of[k.profile_id].values()), holds) for k in keys
        ]

    def snapshot(self) -> AbstractContextManager[None]:
        """``FullTextIndex``: one read transaction for the block (``SqliteDatabase.snapshot``)."""
        return self._db.snapshot()

    def search_index(
        self, keys: Sequence[ProfileKey], terms: Sequence[str], *, skip: int = 0, take: int | None = None
    ) -> list[tuple[ScopeState, dict[str, float]]]:
        """``FullTextIndex``: a page of the FTS5 matches of ``terms`` in ``keys`` (one partition), with
        the profiles, holds and replace entries that decide which of them are visible.

        One read transaction (``snapshot``): the page, and the state that decides its visibility,
        come from one state of the store."""
        if not keys or not terms:
            return [(ScopeState(k, None), {}) for k in keys]
        instance_id, upn = keys[0].instance_id, keys[0].upn
        ids = [k.profile_id for k in keys]
        with self.snapshot():
            matched = page_of_matches(self._db.read, ENTRY_COLUMNS, (instance_id, upn, ids), terms, skip, take)
            # The replace entries of the profiles: they decide where each visible document starts.
            where, params = profiles_filter(keys)
            replaces = self._db.read(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE {where} AND kind='replace'", params)
            states = self._states(keys, self._profiles(keys), [*(row[:-1] for row in matched), *replaces])
        scores: dict[str, dict[str, float]] = {pid: {} for pid in ids}
        for row in matched:
            scores[row[1]][row[0]] = float(row[-1])
        return [(state, scores[state.key.profile_id]) for state in states]

    def _holds(self, instance_id: str, upn: str) -> tuple[Hold, ...]:
        rows = self._db.read(_HOLDS_SQL, [instance_id, upn])
        return tuple(Hold.from_data(json.loads(row[0])) for row in rows)

    def load_heads(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        if not keys:
            return []
        return self._states(keys, self._profiles(keys), [])

    def newest_entries(
        self, window: EntryWindow, limit: int, *, cursor: PageCursor | None = None, kind: EntryKind | None = None
    ) -> list[MemoryEntry]:
        where, params = window_filter(window)
        if kind is not None:
            where += " AND kind=?"
            params.append(kind.value)
        if cursor is not None:
            at = iso(cursor.created_on)
            params += [at, at]
            where += f" AND (created_on<? OR (created_on=? AND {id_not_in(cursor.seen_ids, params)}))"
        # The (instance_id, upn, profile_id, created_on) index serves the order, so
        # SQLite reads ``limit`` rows from its end, whatever the profile holds.
        rows = self._db.read(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE {where} ORDER BY created_on DESC, id DESC LIMIT ?",
            [*params, max(0, limit)],
        )
        return [entry_from_row(window.key, row) for row in rows]

    def oldest_entries(
        self, window: EntryWindow, limit: int, *, after: tuple[datetime, str] | None = None
    ) -> list[MemoryEntry]:
        where, params = window_filter(window)
        if after is not None:
            # Times are stored as UTC ISO text (fixed width), so text order is time order.
            at = iso(after[0].astimezone(UTC))
            # The bare lower bound lets SQLite seek the index to the position instead of walking to it.
            where += " AND created_on>=? AND (created_on>? OR id>?)"
            params += [at, at, after[1]]
        # The (instance_id, upn, profile_id, created_on) index serves the order: SQLite reads
        # ``limit`` rows from the start of the range (and sorts only the ties by id).
        rows = self._db.read(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE {where} ORDER BY created_on, id LIMIT ?",
            [*params, max(0, limit)],
        )
        return [entry_from_row(window.key, row) for row in rows]

    def count_entries(self, window: EntryWindow) -> EntryCount:
        where, params = window_filter(window)
        ((count, oldest),) = self._db.read(f"SELECT COUNT(*), MIN(created_on) FROM entries WHERE {where}", params)
        return EntryCount(int(count), parse(oldest))

    def entry_facts(self, window: EntryWindow) -> list[EntryFacts]:
        where, params = window_filter(window)
        # The profile's time index finds the rows; only four short columns of each are decoded.
        rows = self._db.read(f"SELECT {FACT_COLUMNS} FROM entries WHERE {where} ORDER BY created_on, id", params)
        return [facts_from_row(row) for row in rows]

    def load_partition(self, instance_id: str, upn: str) -> list[ScopeState]:
        rows = self._db.read(
            "SELECT profile_id, scope, agent_object_id FROM profiles WHERE instance_id=? AND upn=?"
            " UNION SELECT profile_id, scope, agent_object_id FROM entries WHERE instance_id=? AND upn=?",
            [instance_id, upn, instance_id, upn],
        )
        keys = sorted(
            {ProfileKey(instance_id, upn, Scope(row[1]), row[2]) for row in rows}, key=lambda k: k.profile_id
        )
        if not keys:
            return []
        return self.load(keys)

    def partition_facts(self, instance_id: str, upn: str) -> list[ScopeFacts]:
        # One statement, so the profiles and the entries are one state of the file: the profiles' keys (facts
        # NULL), then each entry's key and four short columns. No text is decoded.
        rows = self._db.read(
            "SELECT profile_id, scope, agent_object_id, NULL, NULL, NULL, NULL FROM profiles"
            " WHERE instance_id=? AND upn=? UNION ALL"
            f" SELECT profile_id, scope, agent_object_id, {FACT_COLUMNS} FROM entries WHERE instance_id=? AND upn=?",
            [instance_id, upn, instance_id, upn],
        )
        keys: dict[str, ProfileKey] = {}
        facts: dict[str, list[EntryFacts]] = {}
        for profile_id, scope, agent_object_id, *fact in rows:
            if profile_id not in keys:
                keys[profile_id] = ProfileKey(instance_id, upn, Scope(scope), agent_object_id)
                facts[profile_id] = []
            if fact[0] is not None:
                facts[profile_id].append(facts_from_row(fact))
        return [ScopeFacts(keys[p], tuple(sorted(facts[p], key=lambda f: (f.created_on, f.id)))) for p in sorted(keys)]

    def load_partition_within(self, instance_id: str, upn: str, at_most: int) -> list[ScopeState] | None:
        # One probe of the entries' key index past the limit: the entries past it are never read.
        past = self._db.read("SELECT 1 FROM entries WHERE instance_id=? AND upn=? LIMIT 1 OFFSET ?",
                             [instance_id, upn, max(0, at_most)])
        return None if past else self.load_partition(instance_id, upn)

    def partition_keys(
        self, instance_id: str, upn: str, *, prefix: str = "", after: str | None = None, limit: int | None = None
    ) -> list[ProfileKey]:
        # The primary key (instance_id, upn, profile_id) serves the range and the order. The prefix is compared
        # as it is: LIKE would fold case and read "_" and "%" as wildcards. No profile id is the prefix itself.
        rows = self._db.read("SELECT scope, agent_object_id FROM profiles WHERE instance_id=? AND upn=?"
                             " AND profile_id>? AND substr(profile_id, 1, ?)=? ORDER BY profile_id LIMIT ?",
                             [instance_id, upn, max(after or "", prefix), len(prefix), prefix,
                              -1 if limit is None else max(0, limit)])
        return [ProfileKey(instance_id, upn, Scope(row[0]), row[1]) for row in rows]

    def partition_owners(self, instance_id: str, limit: int, *, after: str | None = None) -> list[str]:
        # The profiles' primary key (instance_id, upn, profile_id) serves the order: ``limit`` distinct owners.
        rows = self._db.read("SELECT DISTINCT upn FROM profiles WHERE instance_id=? AND upn>? ORDER BY upn LIMIT ?",
                             [instance_id, after or "", max(0, limit)])
        return [row[0] for row in rows]

    def get_entry(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
        rows = self._db.read(
            f"SELECT {ENTRY_COLUMNS}, scope, agent_object_id FROM entries WHERE instance_id=? AND upn=? AND id=?",
            [instance_id, upn, entry_id],
        )
        if not rows:
            return None
        row = rows[0]
        return entry_from_row(ProfileKey(instance_id, upn, Scope(row[-2]), row[-1]), row[:-2])


def _stamp_of(rows: Sequence[Any]) -> PartitionStamp:
    """The partition's stamp from ``STAMP_SQL``'s rows: (0, 0) for a partition never written."""
    return PartitionStamp(rows[0][0], rows[0][1]) if rows else PartitionStamp(0, 0)
