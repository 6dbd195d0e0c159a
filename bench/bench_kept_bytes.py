"""What each kind of kept answer holds, counted and measured (SQLite, in process).

Run from the project root:

    python bench/bench_kept_bytes.py [--entries 2000]

For each read ``tests/domain/test_kept.py`` checks (a private get, an entries listing, a team get, a
team listing, a budgeted get and a team budgeted get of one user's memory of N entries, plus N/10
team tips of a teammate), on a fresh store and service: the bytes the process's kept answers are
counted to hold after it (``MemoryService.kept.held``, what ``MEMORY_READ_CACHE_MB`` bounds) and the
bytes of Python memory still held after it as ``tracemalloc`` measures them. For the private get,
also the bytes of the document it answers, and what a kept snapshot of 10,000 entries counts (how many
of them the default bound holds). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.kept import DEFAULT_MAX_BYTES
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.sharing import SharingPolicy
from tests.domain.test_kept import KEY, READER, _seed, _traced

READS = ["get", "entries page", "team get", "team entries page", "budgeted get", "team budgeted get"]


def _read(service: MemoryService, read: str) -> Callable[[], object]:
    team = SharingPolicy.TEAM
    listings = service._listings
    assert listings is not None
    return {
        "get": lambda: service.get(READER, "i", Scope.USER, None),
        "entries page": lambda: listings.listing(("entries", (KEY,)), [KEY]),
        "team get": lambda: service.get(READER, "i", Scope.USER, None, team),
        "team entries page": lambda: listings.across(("entries", (KEY,), team), [KEY], READER.upn, team),
        "budgeted get": lambda: service.get_within(READER, "i", Scope.USER, None, 16_000),
        "team budgeted get": lambda: service.get_within(READER, "i", Scope.USER, None, 16_000, team),
    }[read]


def measure(read: str, entries: int) -> tuple[int, int, int]:
    """Counted bytes, measured bytes, and the bytes of the get's document (0 for other reads)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteMemoryStore(Path(tmp) / "kept.sqlite3")
        try:
            service = MemoryService(store, allow_sharing_override=True)
            _seed(service, [READER], entries)
            before = service.kept.held
            measured = _traced(_read(service, read))
            counted = service.kept.held - before
            document = sys.getsizeof(service.get(READER, "i", Scope.USER, None).content_markdown) if read == "get" else 0
            return counted, measured, document
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=2_000)
    args = parser.parse_args()
    print(f"{args.entries:,} entries, SQLite, in process\n")
    print("| answer | counted bytes | measured bytes | counted / measured |")
    print("|---|---:|---:|---:|")
    for read in READS:
        counted, measured, document = measure(read, args.entries)
        label = f"{read} (document {document:,}: {counted / document:.1f}x counted)" if document else read
        print(f"| {label} | {counted:,} | {measured:,} | {counted / measured:.2f} |")
    counted, _, document = measure("get", 10_000)
    print(f"\nA private get of 10,000 entries: {counted:,} bytes counted (document {document:,}); "
          f"the default bound of {DEFAULT_MAX_BYTES // 2**20} MiB holds {DEFAULT_MAX_BYTES // counted} of them.")


if __name__ == "__main__":
    main()
