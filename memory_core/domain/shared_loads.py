"""One full load of a private memory kept as both answers it gives: a get's snapshots, and the listing searches and
entries pages are cut from.

A private get and a private search or entries page show the same visible entries of the caller's own partition, so
whichever of them loads a memory in full (``visible_loads.load_unhidden``: one consistent view, labelled with its
stamp and sequence) keeps the other's answer from that load too (``SnapshotCache.keep_loaded``,
``Listings.keep_loaded``), and the next of the other reads no entry. Each is kept under the load's own stamp and
sequence, exactly as if it had loaded itself, and is then checked, grown or rebuilt by its own rules, so no write by
any process shows stale in either. Sharing reads share nothing: their listings are kept apart (``entries_key``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memory_core.domain.listings import Listings
from memory_core.domain.snapshots import ChangeStamps, SnapshotCache, Snapshots, StampedLoad
from memory_core.domain.visible_loads import load_unhidden

if TYPE_CHECKING:
    from memory_core.domain.checkpoints import Checkpointing
    from memory_core.domain.kept import KeptAnswers
    from memory_core.domain.models import ProfileKey
    from memory_core.domain.sharing import SharingPolicy


class SharedLoads:
    """The snapshots (``snapshots``) and listings (``listings``) of one reader of ``store``, held in ``kept`` and
    wired so that either keeps the other's answer from its full loads. Thread-safe, as they are.

    ``checkpoints`` and ``refresh``: as ``SnapshotCache`` takes them. A full load skips what a clear's watermark
    hides (``load_unhidden``)."""

    def __init__(self, store: ChangeStamps, kept: KeptAnswers, checkpoints: Checkpointing | None,
                 refresh: Callable[[Sequence[ProfileKey], str, Snapshots], Snapshots | None] | None) -> None:
        self.snapshots = SnapshotCache(store, kept, checkpoints, refresh, functools.partial(load_unhidden, store),
                                       self._keep_listing)
        self.listings = Listings(store, kept, self._keep_snapshots)

    def _keep_listing(self, keys: Sequence[ProfileKey], loaded: StampedLoad) -> None:
        """A get's full load of ``keys`` (the viewer's own partition) kept as their listing too."""
        self.listings.keep_loaded(entries_key(list(keys)), loaded)

    def _keep_snapshots(self, keys: Sequence[ProfileKey], loaded: StampedLoad) -> None:
        """A private listing's full load of ``keys`` kept as their snapshots too, as their owner reads them (a
        private read's keys are always the caller's own partition: ``ProfileTargets.read_keys``)."""
        self.snapshots.keep_loaded(keys, keys[0].upn, loaded)


def entries_key(keys: list[ProfileKey], policy: SharingPolicy | None = None) -> tuple[Any, ...]:
    """The key of the visible entries' listing of ``keys`` (``Listings``): entries pages and search share it, so
    either read reuses the other's; a sharing read's (``policy``) is kept apart from the owner's own."""
    return ("entries", tuple(keys)) if policy is None else ("entries", tuple(keys), policy)
