"""Setup the team-copy race tests share (tests/contract/test_*_team_copy_races.py): team-sharing services on a
store, fresh callers, the author's copies in the shared partition, and a store wrapped so that the next team copy
it stores waits for a race to run first.

A team-shared write stores the entry in its author's memory, then its copy in the scope's shared partition
(``domain.team_copies``), in two writes with no fence: wrapping the store's append of the copy puts the race at the
same point every run.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memory_core.domain.errors import EntryBeforeClear, EntryExists
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share
from memory_core.domain.service import DeletionMode, MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

TEAM = WriteOptions(share=Share.TEAM)
StoreCopy = Callable[[], None]


def caller(name: str) -> Caller:
    """A caller no other test shares."""
    return Caller(upn=f"{name}-{uuid.uuid4().hex[:10]}@contoso.com")


def team_service(store: MemoryStore, clock: TickingClock, mode: DeletionMode = DeletionMode.IMMEDIATE) -> MemoryService:
    """A service on ``store`` that shares with the team by default."""
    return MemoryService(store, deletion_mode=mode, clock=clock,
                         default_sharing=SharingPolicy.TEAM, allow_sharing_override=True)


def authors_copies(store: MemoryStore, instance: str, author: Caller) -> list[str]:
    """The texts of ``author``'s copies in their user scope's shared partition, as ``store`` loads them."""
    (shared,) = store.load([ProfileKey(instance, author.upn, Scope.USER).shared()])
    return [e.content_markdown for e in shared.entries if e.author_upn == author.upn]


def hold_copy(monkeypatch: pytest.MonkeyPatch, store: MemoryStore,
              race: Callable[[MemoryEntry, StoreCopy], None]) -> None:
    """The next team copy stored through ``store`` is held back: ``race`` runs first with the copy and a callable
    that stores it at that point (a refusal swallowed, as ``team_copies.share`` does); the writer's write of it
    follows unless ``race`` made it. Both of the store's appends are wrapped: a copy is written with its mark."""
    armed = [True]
    for name in ("append", "append_with_records"):
        real = getattr(store, name)

        def late(profile: MemoryProfile, entry: MemoryEntry, *rest: Any, real: Any = real) -> Any:
            if armed[0] and entry.key.upn == SHARED_OWNER:
                armed[0] = False
                written: list[bool] = []

                def store_copy() -> None:
                    written.append(True)
                    with contextlib.suppress(EntryExists, EntryBeforeClear):
                        real(profile, entry, *rest)
                race(entry, store_copy)
                if written:
                    return profile
            return real(profile, entry, *rest)

        monkeypatch.setattr(store, name, late)
