"""A clock for services under test: every reading is a moment after the last.

Writes through a service on it never share a time (the order of entries, deletions and audit
events is the order of the calls), and a test moves time on by setting ``now``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class TickingClock:
    """Answers ``now`` plus ``step`` at each call, starting from ``start``."""

    def __init__(self, start: datetime = datetime(2026, 3, 1, tzinfo=UTC),
                 step: timedelta = timedelta(milliseconds=1)) -> None:
        self.now = start
        self._step = step

    def __call__(self) -> datetime:
        self.now += self._step
        return self.now
