"""What a process keeps for its reads, in one store bounded in bytes, least recently used dropped first.

Snapshots (``snapshots.SnapshotCache``), kept budgeted reads, sharing reads and entries
listings (``stamped_answers.StampedAnswers``) all keep their answers here, so one bound
(``MEMORY_READ_CACHE_MB``) covers everything reads hold, and whichever reads are in use
get the room. Nothing here decides whether an answer is current: its owner checks the
store's stamps on every read before answering from it.

Sizes are estimates, in bytes, of what an answer holds: its text as Python stores it
(``text_bytes``: one to four bytes a character) and, for entries held as objects, a fixed
``ENTRY_BYTES`` each besides their text (entries held as columns count their own slots,
``known_entries``). ``tests/domain/test_kept.py`` checks the estimates
against what ``tracemalloc`` measures.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any

from memory_core.domain.models import MemoryEntry

DEFAULT_MAX_BYTES = 128 * 1024 * 1024
"""The bound when none is configured: about fifty private gets of 10,000 entries each (a kept snapshot
counts 2.7 MB there: its 1 MB document and what it knows of its entries, ``known_entries``)."""

ENTRY_BYTES = 640
"""What one entry held as an object costs besides its text: the ``MemoryEntry``, its id, dates and
provenance, and its position in a listing (measured with tracemalloc: about 610 bytes at 10,000 entries)."""


def text_bytes(text: str) -> int:
    """The bytes Python holds for ``text``."""
    return sys.getsizeof(text)


def entries_bytes(entries: Iterable[MemoryEntry]) -> int:
    """The bytes held by ``entries`` kept as objects."""
    texts = [e.content_markdown for e in entries]
    return ENTRY_BYTES * len(texts) + sum(map(sys.getsizeof, texts))


class KeptAnswers:
    """Answers keyed by anything hashable, together at most ``max_bytes`` as their sizes count them
    (one answer larger than that is still kept, alone). Thread-safe."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self._answers: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """The bytes held now, as the sizes given to ``put`` count them."""
        return self._held

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: Hashable) -> Any | None:
        """The answer kept under ``key`` (now the most recently used), or None."""
        with self._lock:
            kept = self._answers.get(key)
            if kept is None:
                return None
            self._answers.move_to_end(key)
            return kept[0]

    def discard(self, key: Hashable) -> None:
        """Stop keeping the answer under ``key``, if any."""
        with self._lock:
            previous = self._answers.pop(key, None)
            if previous is not None:
                self._held -= previous[1]

    def put(self, key: Hashable, answer: Any, size: int) -> None:
        """Keep ``answer`` under ``key`` (replacing what was there), then drop the least recently
        used answers until the bound holds."""
        with self._lock:
            previous = self._answers.pop(key, None)
            if previous is not None:
                self._held -= previous[1]
            self._answers[key] = (answer, size)
            self._held += size
            while self._held > self.max_bytes and len(self._answers) > 1:
                _, (_, dropped) = self._answers.popitem(last=False)
                self._held -= dropped
