"""What sealing team copies keeps, on every store: bounded however many authors clear, and never less than it sealed.

An immediate clear that erases team-shared entries seals its watermark on the author's team copies
(``MemoryStore.seal_copies``). SQLite stores nothing for it (a copy's append reads its source profile's
``cleared_on``). Cosmos DB keeps the seals in the shared partition's stamp, which every sharing read point-reads and
every team copy's batch is If-Match on: it keeps the newest ``SEALS_KEPT`` by source and folds the older ones into
one floor covering every source's copies, so the stamp stays under 1 KB (a 1 RU point read) however many authors
clear; until 2026-12-07 it kept one watermark per author who ever cleared, about 0.1 KB each, for good. The floor
alone refuses no copy: one it covers is refused only when its own author's clear does (one point read of the author's
profile then), so both stores store and refuse the same copies.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain import team_copies
from memory_core.domain.errors import EntryBeforeClear
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    Share,
    shared_copy_id,
)
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.team_copy_races import TEAM, authors_copies, caller, team_service

T0 = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
AUTHORS = 20
"""Five times ``SEALS_KEPT_ON_COSMOS``: 16 seals folded. With folding turned off (``SEALS_KEPT`` patched to 10**6)
20 authors' seals made a 2,019-byte stamp, twice ``STAMP_BYTES``, and the test failed; folded, 781 bytes. 50
authors, as before, cost 200 s on a loaded machine and found nothing 20 do not."""
SEALS_KEPT_ON_COSMOS = 4
"""``cosmos_stamp_item.SEALS_KEPT``: one clear more and the oldest seal is folded into the floor."""
STAMP_BYTES = 1024
"""The most a point read of the shared partition's stamp may answer: under 1 KB, a point read stays at 1 RU."""


def _copy(key: ProfileKey, text: str, at: datetime) -> MemoryEntry:
    """A team copy of an entry of scope ``key`` made at ``at``, as ``team_copies.share`` writes it."""
    return MemoryEntry(id=shared_copy_id(uuid.uuid4().hex), key=key.shared(), content_markdown=text,
                       kind=EntryKind.APPEND, created_on=at, author_upn=key.upn, share=Share.TEAM)


def test_the_shared_stamp_stays_bounded_after_many_authors_clear_and_every_seal_still_holds(
    stores: Callable[[], MemoryStore],
) -> None:
    """20 authors each share an entry and clear it: the shared stamp's read stays under 1 KB; the first author's
    seal, long folded into the floor, still refuses a copy its clear covered, in a process whose caches predate
    every seal; a copy made after the clears, of an author who never cleared, is stored."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    writing, clearing = stores(), stores()
    writer, custodian = team_service(writing, clock), team_service(clearing, clock)
    instance = f"bound-{uuid.uuid4().hex[:8]}"
    authors = [caller(f"author{n}") for n in range(AUTHORS)]
    newcomer = caller("newcomer")
    writer.append(newcomer, instance, Scope.USER, None, "- known before", TEAM)  # ``writing`` knows the stamps
    first_made = clock.now

    for author in authors:
        writer.append(author, instance, Scope.USER, None, f"- from {author.upn}", TEAM)
        custodian.clear(author, instance, Scope.USER, None, confirm=True)

    with clearing.measure() as read:
        clearing.partition_stamp(instance, SHARED_OWNER)
    assert getattr(read, "bytes_read", 0) < STAMP_BYTES  # Cosmos DB: the stamp item's body; SQLite keeps none
    assert all(authors_copies(clearing, instance, a) == [] for a in authors)

    first = ProfileKey(instance, authors[0].upn, Scope.USER)
    seed = MemoryProfile(first.shared(), None, None, None, T0, T0)
    with pytest.raises(EntryBeforeClear):  # made before the first author's clear, stored after all of them
        writing.append(seed, _copy(first, "- raced the first clear", first_made))
    own = ProfileKey(instance, newcomer.upn, Scope.USER)
    writing.append(seed, _copy(own, "- after every clear", clock()))
    seen = custodian.get(caller("mate"), instance, Scope.USER, None).content_markdown
    assert "after every clear" in seen and "known before" in seen
    assert not any(f"from {a.upn}" in seen for a in authors)


def test_a_late_copy_of_an_author_who_never_cleared_is_stored_however_many_others_cleared_since(
    stores: Callable[[], MemoryStore],
) -> None:
    """An entry's copy still on its way (a keyed write's replay) while five other authors clear: their seals fold
    into a floor later than the entry, yet the copy is stored, as on SQLite, and teammates read it (review31: on
    Cosmos DB the floor refused it, and ``team_copies.share`` swallowed the refusal)."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    writing, clearing = stores(), stores()
    writer, custodian = team_service(writing, clock), team_service(clearing, clock)
    instance = f"floor-{uuid.uuid4().hex[:8]}"
    bystander = caller("bystander")
    writer.append(bystander, instance, Scope.USER, None, "- known before", TEAM)
    made = clock()
    for n in range(SEALS_KEPT_ON_COSMOS + 1):
        author = caller(f"author{n}")
        writer.append(author, instance, Scope.USER, None, f"- from {author.upn}", TEAM)
        custodian.clear(author, instance, Scope.USER, None, confirm=True)

    own = ProfileKey(instance, bystander.upn, Scope.USER)
    seed = MemoryProfile(own.shared(), None, None, None, T0, T0)
    writing.append(seed, _copy(own, "- after the clears", clock()))  # the stamp's seals known to ``writing`` now
    with writing.measure() as usual:
        writing.append(seed, _copy(own, "- after the clears, again", clock()))
    with writing.measure() as under_floor:
        writing.append(seed, _copy(own, "- the late copy", made))
    seen = custodian.get(caller("mate"), instance, Scope.USER, None).content_markdown
    assert all(text in seen for text in ("the late copy", "known before", "after the clears, again"))
    # Cosmos DB: one point read of the author's profile more, only for a copy the floor covers; SQLite: none.
    assert getattr(under_floor, "round_trips", 0) - getattr(usual, "round_trips", 0) <= 1


def test_a_copy_its_authors_own_clear_covers_is_refused_under_the_floor_and_the_refusal_is_logged(
    stores: Callable[[], MemoryStore], caplog: pytest.LogCaptureFixture,
) -> None:
    """The author clears, then five others do: the author's seal is folded into the floor, and a copy of an entry
    made before the author's clear is still refused (the author's profile says so), in a process whose caches
    predate every seal; ``team_copies.share`` says so in one log line instead of failing the write."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    writing, clearing = stores(), stores()
    writer, custodian = team_service(writing, clock), team_service(clearing, clock)
    instance = f"floor-{uuid.uuid4().hex[:8]}"
    first = caller("first")
    writer.append(first, instance, Scope.USER, None, "- shared first", TEAM)  # ``writing`` knows the profiles
    made = clock()
    custodian.clear(first, instance, Scope.USER, None, confirm=True)
    for n in range(SEALS_KEPT_ON_COSMOS + 1):
        author = caller(f"author{n}")
        writer.append(author, instance, Scope.USER, None, f"- from {author.upn}", TEAM)
        custodian.clear(author, instance, Scope.USER, None, confirm=True)

    key = ProfileKey(instance, first.upn, Scope.USER)
    late = MemoryEntry(id=uuid.uuid4().hex, key=key, content_markdown="- raced the clear", kind=EntryKind.APPEND,
                       created_on=made, author_upn=first.upn, share=Share.TEAM)
    with caplog.at_level(logging.INFO, logger="memory_core.team_copies"):
        team_copies.share(writing, late)
    assert authors_copies(clearing, instance, first) == []
    (line,) = [r.getMessage() for r in caplog.records if r.name == "memory_core.team_copies"]
    assert shared_copy_id(late.id) in line and "not stored" in line
