"""Benchmark: how long SecretScanner.scan adds to a write.

Run from the repository root:

    python bench/bench_secret_scan.py                # our scanner
    python bench/bench_secret_scan.py --compare      # plus detect-secrets' own scan_line, all plugins
    python bench/bench_secret_scan.py --append       # plus what the scan is of a 64 KiB append (SQLite)

Texts are built from the test corpora: ordinary memory lines (no secrets) and
the same with fake secrets mixed in, cut to 1 KiB and 64 KiB of UTF-8, and the
ordinary ones written in full-width forms (every character folds, so the text
is scanned twice: as written and as it reads in ASCII), and the ordinary ones
with one en dash in a range of years (that one character folds, so the text is
scanned twice too), the same with an em dash (it reads as "-" between digits), and
the ordinary ones with an em dash between words on every line (prose: nothing folds,
but the text is searched for an em dash between digits). The
target is a median under 1 ms for a 1 KiB write. Numbers depend on the
machine and its load; compare runs made on the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.secrets import SecretScanner
from tests.secrets.corpus.fake_secrets import FAKE_SECRETS
from tests.secrets.corpus.written_forms import full_width

CORPUS = ROOT / "tests" / "secrets" / "corpus" / "ordinary_memory.txt"


def ordinary_lines() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("# ")]


def cut_to_bytes(lines: list[str], size: int) -> str:
    """Whole lines, repeated as needed, up to ``size`` bytes of UTF-8 (the last line cut)."""
    out: list[str] = []
    used = 0
    index = 0
    while used < size:
        line = lines[index % len(lines)] + "\n"
        encoded = line.encode("utf-8")
        if used + len(encoded) > size:
            out.append(encoded[: size - used].decode("utf-8", "ignore"))
            break
        out.append(line)
        used += len(encoded)
        index += 1
    return "".join(out)


def with_secrets(lines: list[str]) -> list[str]:
    """Ordinary lines with one fake secret after every fourth line."""
    mixed: list[str] = []
    secrets = iter(FAKE_SECRETS * 100)
    for index, line in enumerate(lines):
        mixed.append(line)
        if index % 4 == 3:
            mixed.append(next(secrets).text)
    return mixed


def measure(fn: Callable[[str], object], text: str, iterations: int) -> tuple[float, float, float]:
    """(median, p99, max) in microseconds over ``iterations`` calls, after a short warm-up."""
    for _ in range(min(20, iterations)):
        fn(text)
    samples: list[float] = []
    for _ in range(iterations):
        started = time.perf_counter_ns()
        fn(text)
        samples.append((time.perf_counter_ns() - started) / 1000)
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return statistics.median(samples), p99, samples[-1]


def fmt(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def detect_secrets_scan_line() -> Callable[[str], object]:
    """detect-secrets' ad-hoc scanner, all default plugins, one call per line (its unit)."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    context = default_settings()
    context.__enter__()  # keep the default settings for the life of the process

    def scan(text: str, _keep_settings_alive: object = context) -> object:
        return [secret for line in text.splitlines() for secret in scan_line(line)]

    return scan


def time_appends(text: str, appends: int) -> None:
    """Median of ``MemoryService.append`` of ``text`` on a new SQLite file, without then with the scanner.

    Each append is the same text with a counter, so every one is a new entry (the full-text index
    included); the first tenth is left out as warm-up.
    """
    import tempfile

    from memory_core.adapters.sqlite_store import SqliteMemoryStore
    from memory_core.composition import ScannerOnFirstScan
    from memory_core.domain.identity import Caller
    from memory_core.domain.models import Scope
    from memory_core.domain.service import MemoryService

    caller = Caller("bench@contoso.com", "Bench", "bench")
    print(f"\n| {len(text.encode('utf-8')):,}-byte append, SQLite | median | p99 |\n|---|---:|---:|")
    for label, scanner in (("without the secret scan", None), ("with the secret scan", ScannerOnFirstScan())):
        with tempfile.TemporaryDirectory() as folder:
            service = MemoryService(SqliteMemoryStore(str(Path(folder) / "memory.db")), scanner=scanner)
            samples: list[float] = []
            for index in range(appends):
                started = time.perf_counter_ns()
                service.append(caller, "bench", Scope.USER, None, f"{text}\n{index}")
                samples.append((time.perf_counter_ns() - started) / 1000)
            samples = sorted(samples[appends // 10 :])
            p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
            print(f"| {label} | {fmt(statistics.median(samples))} | {fmt(p99)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000, help="scans per 1 KiB case (64 KiB: a tenth)")
    parser.add_argument("--compare", action="store_true", help="also time detect-secrets' scan_line, all plugins")
    parser.add_argument("--append", action="store_true", help="also time a 64 KiB append on SQLite with and without the scan")
    args = parser.parse_args()

    started = time.perf_counter()
    scanner = SecretScanner()
    build_ms = (time.perf_counter() - started) * 1000

    ordinary = ordinary_lines()
    mixed = with_secrets(ordinary)
    wide = [full_width(line) for line in ordinary]
    ranged = [ordinary[0] + " (2019\u20132024)", *ordinary[1:]]
    em_ranged = [ordinary[0] + " (2019\u20142024)", *ordinary[1:]]
    prose = [f"{line} \u2014 as noted" for line in ordinary]
    cases = [
        ("1 KiB ordinary", cut_to_bytes(ordinary, 1024), args.iterations),
        ("1 KiB with secrets", cut_to_bytes(mixed, 1024), args.iterations),
        ("64 KiB ordinary", cut_to_bytes(ordinary, 64 * 1024), max(20, args.iterations // 10)),
        ("64 KiB with secrets", cut_to_bytes(mixed, 64 * 1024), max(20, args.iterations // 10)),
        ("1 KiB full-width", cut_to_bytes(wide, 1024), args.iterations),
        ("64 KiB full-width", cut_to_bytes(wide, 64 * 1024), max(20, args.iterations // 10)),
        ("1 KiB one en dash", cut_to_bytes(ranged, 1024), args.iterations),
        ("1 KiB one em dash", cut_to_bytes(em_ranged, 1024), args.iterations),
        ("1 KiB em dash prose", cut_to_bytes(prose, 1024), args.iterations),
        ("64 KiB em dash prose", cut_to_bytes(prose, 64 * 1024), max(20, args.iterations // 10)),
    ]
    scanners: list[tuple[str, Callable[[str], object]]] = [("memory_core SecretScanner", scanner.scan)]
    if args.compare:
        scanners.append(("detect-secrets scan_line, all plugins", detect_secrets_scan_line()))

    print(f"SecretScanner() construction: {build_ms:.1f} ms (once per process)")
    header = f"| {'scanner':<38} | {'case':<20} | {'n':>5} | {'median':>9} | {'p99':>9} | {'max':>9} |"
    print(header)
    print("|" + "|".join("-" * (len(cell) + 0) for cell in header.split("|")[1:-1]) + "|")
    for scanner_name, fn in scanners:
        for case_name, text, iterations in cases:
            if scanner_name.startswith("detect-secrets"):
                iterations = max(5, iterations // 20)
            median, p99, worst = measure(fn, text, iterations)
            print(
                f"| {scanner_name:<38} | {case_name:<20} | {iterations:>5} | {fmt(median):>9} | {fmt(p99):>9} "
                f"| {fmt(worst):>9} |"
            )
    if args.append:
        time_appends(cut_to_bytes(ordinary, 64 * 1024 - 8), max(40, args.iterations // 20))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
