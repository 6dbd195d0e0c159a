"""An immediate clear or replace stopped between its journal and its watermark, on every store: the sweep's replay
stores the watermark before it seals the author's team copies.

A clear journals its erasure (``domain.erasures``), then saves the profile's ``cleared_on`` (its watermark), then
erases. A crash between the journal and the watermark left the sweep's replay to seal the team copies
(``MemoryStore.seal_copies``) of a profile that never stored the watermark: on SQLite the seal *is* the source
profile's ``cleared_on``, so a late team copy of an entry the clear covered was stored for teammates; on Cosmos DB
the stamp's seal refused it only until four more clears folded it into the floor, whose check reads the profile.
A late entry of the author's own, stamped before the watermark, was stored too. Until 2026-12-07.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.errors import EntryBeforeClear
from memory_core.domain.journals import SETTLE
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share, shared_copy_id
from memory_core.domain.service import ImportMode
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.team_copy_races import TEAM, authors_copies, caller, team_service

T0 = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
SEALS_KEPT_ON_COSMOS = 4
"""``cosmos_stamp_item.SEALS_KEPT``: one clear more and the oldest seal is folded into the floor."""


class Crash(Exception):
    pass


def _crash_at_watermark(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, key: ProfileKey) -> None:
    """The first ``save_profile`` of ``key`` through ``store`` (the watermark's) raises ``Crash`` before it writes."""
    real = store.save_profile
    armed = [True]

    def stopped(profile: MemoryProfile, *args: Any, **kwargs: Any) -> Any:
        if armed[0] and profile.key == key:
            armed[0] = False
            raise Crash("save_profile")
        return real(profile, *args, **kwargs)

    monkeypatch.setattr(store, "save_profile", stopped)


@pytest.mark.parametrize("later_clears", [0, SEALS_KEPT_ON_COSMOS + 1], ids=["sealed", "folded-into-the-floor"])
@pytest.mark.parametrize("action", ["clear", "replace"])
def test_a_clear_stopped_before_its_watermark_refuses_late_writes_once_the_sweep_replayed_it(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, action: str, later_clears: int
) -> None:
    """After the replay the author's profile holds the watermark, and a team copy (or an entry of the author's own)
    made before it and stored late is refused, in a process whose caches predate the replay, also once other
    authors' clears folded the seal into Cosmos DB's floor."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    writing, clearing = stores(), stores()
    writer, custodian = team_service(writing, clock), team_service(clearing, clock)
    author, instance = caller("author"), f"gap-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- the launch is code-named BLUEFIN", TEAM)
    made = clock()  # an entry stamped here is covered by the clear, whose watermark is chosen after
    key = ProfileKey(instance, author.upn, Scope.USER)
    _crash_at_watermark(monkeypatch, clearing, key)
    with pytest.raises(Crash):
        if action == "clear":
            custodian.clear(author, instance, Scope.USER, None, confirm=True)
        else:
            custodian.import_markdown(author, instance, Scope.USER, None, "- the new memory", ImportMode.REPLACE)
    monkeypatch.undo()
    clock.now += SETTLE + timedelta(seconds=1)
    custodian.custody.sweep(instance_id=instance)
    for n in range(later_clears):
        other = caller(f"other{n}")
        writer.append(other, instance, Scope.USER, None, f"- from {other.upn}", TEAM)
        custodian.clear(other, instance, Scope.USER, None, confirm=True)

    copy = MemoryEntry(id=shared_copy_id(uuid.uuid4().hex), key=key.shared(), content_markdown="- raced the clear",
                       kind=EntryKind.APPEND, created_on=made, author_upn=author.upn, share=Share.TEAM)
    with pytest.raises(EntryBeforeClear):
        writing.append(MemoryProfile(key.shared(), None, None, None, T0, T0), copy)
    own = MemoryEntry(id=uuid.uuid4().hex, key=key, content_markdown="- raced the clear", kind=EntryKind.APPEND,
                      created_on=made, author_upn=author.upn, share=Share.TEAM)
    with pytest.raises(EntryBeforeClear):
        writing.append(MemoryProfile(key, None, None, None, T0, T0), own)
    assert "BLUEFIN" not in "".join(authors_copies(clearing, instance, author))
    seen = custodian.get(caller("mate"), instance, Scope.USER, None).content_markdown
    assert "raced the clear" not in seen and "BLUEFIN" not in seen
    (state,) = clearing.load_heads([key])
    assert state.profile is not None and state.profile.cleared_on is not None and state.profile.cleared_on > made
