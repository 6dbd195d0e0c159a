"""A scanner that records what it was asked to scan, for tests of when text is (not) scanned."""

from __future__ import annotations

from memory_core.composition import ScannerOnFirstScan


class CountingScanner:
    """The process's scanner (``ScannerOnFirstScan``, the real detectors and ruleset), keeping each text it
    scans in ``scanned``."""

    def __init__(self) -> None:
        self.scanned: list[str] = []
        self._scanner = ScannerOnFirstScan()

    @property
    def ruleset(self) -> str:
        return self._scanner.ruleset

    def scan(self, text: str) -> list[object]:
        self.scanned.append(text)
        return list(self._scanner.scan(text))
