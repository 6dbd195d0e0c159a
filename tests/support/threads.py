"""Threads run to provoke a race: the interpreter switches between them as often as it can."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence


def run_switching_often(threads: Sequence[threading.Thread], timeout: float | None = None) -> None:
    """Start ``threads`` and join each (``timeout`` seconds at most), switching threads every microsecond meanwhile.

    The default switch interval (5 ms) lets a thread run through most short critical sections
    untouched; at 1 µs the interleavings a race needs turn up within seconds.
    """
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=timeout)
    finally:
        sys.setswitchinterval(interval)
