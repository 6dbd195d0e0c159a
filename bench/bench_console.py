"""The web console's size and its first paint with N entries on the embedded store.

Run from the project root:

    python bench/bench_console.py [--entries 1000] [--loads 7]

Size: every file the console serves for its own use (HTML, JS, CSS), uncompressed and
gzip -9, with the vendored MSAL.js (loaded only in mode entra) counted apart.

First paint: ``python -m memory_core serve`` on SQLite with one user holding N entries,
and Debian's headless Chromium loading ``/api/console``. The page marks
``console:view-shown`` on the first frame after the memory view is in the DOM (the newest 500
entries rendered, or all N when there are fewer, and the heading counting all N); the figure is
that mark's time from the start of navigation, after one warm-up load: reloading the console
(the figure includes tearing down the page it replaces), then opening it from a blank page (a
first visit). tests/console/test_first_paint.py holds the
1 s target at 1,000 entries.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import chromium, find, wait_for
from tests.support.local_server import running_server

ASSETS = ROOT / "memory_core" / "console" / "assets"


def sizes() -> None:
    own = sorted(p for p in ASSETS.glob("*") if p.suffix in (".html", ".js", ".css"))
    vendor = ASSETS / "vendor" / "msal-browser.min.js"
    print("| Files | Uncompressed (bytes) | gzip -9 (bytes) |")
    print("|---|---:|---:|")
    for label, files in (("console (HTML + JS + CSS)", own), ("vendored MSAL.js 5.30.0 (entra only)", [vendor])):
        raw = b"".join(p.read_bytes() for p in files)
        print(f"| {label} | {len(raw):,} | {len(gzip.compress(raw, 9)):,} |")
    print(f"\nconsole files: {', '.join(p.name for p in own)}")


def first_paint(entries: int, loads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp), {"MEMORY_AUTH_MODE": "local"}) as server:
        instance = f"bench-{uuid.uuid4().hex[:8]}"
        with httpx.Client(base_url=f"{server.api}/instances/{instance}", timeout=30) as api:
            def append(i: int) -> None:
                api.post("/memory/append", json={"scope": "user", "tags": [f"group-{i % 5}"],
                                                 "content_markdown": f"- fact {i}: prefers **option {i % 7}**"}
                         ).raise_for_status()
            with ThreadPoolExecutor(max_workers=4) as pool:
                list(pool.map(append, range(entries)))
        with chromium() as driver:
            driver.get(f"{server.api}/console")
            driver.execute_script("sessionStorage.setItem('memory-core.console.instance', arguments[0])", instance)
            print()
            for label, from_blank in (("reloading the console", False), ("opening it from a blank page", True)):
                timings = _loads(driver, f"{server.api}/console", loads, from_blank=from_blank)
                print(f"first paint with {entries} entries over {loads} loads, {label}: median "
                      f"{statistics.median(timings):.0f} ms, min {min(timings):.0f} ms, max {max(timings):.0f} ms")


def _loads(driver: WebDriver, url: str, loads: int, *, from_blank: bool) -> list[float]:
    """The view-shown mark of ``loads`` loads of ``url`` after one warm-up. A reload's figure includes tearing
    down the page it replaces (its entries' DOM); from a blank page it is a first visit's."""
    timings = []
    for _ in range(loads + 1):
        if from_blank:
            driver.get("about:blank")
        driver.get(url)
        find(driver, "#entries")
        timings.append(float(wait_for(driver, lambda d: d.execute_script(
            "const m = performance.getEntriesByName('console:view-shown'); return m.length ? m[0].startTime : null;"))))
    return timings[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=7)
    args = parser.parse_args()
    sizes()
    first_paint(args.entries, args.loads)


if __name__ == "__main__":
    main()
