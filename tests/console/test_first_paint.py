"""First paint of the person's view on the embedded store with 1,000 entries is under one second.

Measured in the browser: ``performance.mark("console:view-shown")`` is set on the first frame
after the memory view (the newest 500 of the 1,000 entries, rendered from markdown, and the
button that shows more: tests/console/test_many_entries.py) is in the DOM; its
``startTime`` counts from the start of navigation, so it includes the page, its modules, the
config and the API calls. The fastest of three loads, after one warm-up load: what the page costs,
as other processes only ever add to a load's time (the suite runs on parallel workers; the median of
three, 1,656 ms, failed a run on a machine loaded twenty times over, where the same page takes about
150 ms on a quiet one: docs/console.md). A page that got slower is slower on every load.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, wait_for
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer

# Judged against a wall-clock budget: scripts/test runs it after the parallel run, on one process.
pytestmark = pytest.mark.alone

ENTRIES = 1000
SHOWN = 500  # the entries the view renders at once
BUDGET_MS = 1000.0


def _seed(local_api: httpx.Client) -> None:
    def append(i: int) -> None:
        body = {"scope": "user", "content_markdown": f"- fact number {i}: prefers **option {i % 7}** on *day {i % 30}*",
                "tags": [f"group-{i % 5}"]}
        local_api.post("/memory/append", json=body).raise_for_status()
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(append, range(ENTRIES)))


def _shown_ms(driver: WebDriver) -> float:
    return float(wait_for(driver, lambda d: d.execute_script(
        "const m = performance.getEntriesByName('console:view-shown'); return m.length ? m[0].startTime : null;")))


def test_first_paint_with_a_thousand_entries_is_under_a_second(browser: WebDriver, console_server: RunningServer,
                                                               instance: str, local_api: httpx.Client) -> None:
    _seed(local_api)
    open_console(browser, console_server, instance)  # warm-up (and sets the instance)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#entries .entry")) == SHOWN
    assert find(browser, "h3").text == f"Entries ({ENTRIES:,})"
    timings = []
    for _ in range(3):
        browser.get(f"{console_server.api}/console")
        find(browser, "#entries")
        timings.append(_shown_ms(browser))
        assert len(browser.find_elements(By.CSS_SELECTOR, "#entries .entry")) == SHOWN
    fastest = min(timings)
    print(f"\nconsole first paint with {ENTRIES} entries: fastest {fastest:.0f} ms of {[round(t) for t in timings]}")
    assert fastest < BUDGET_MS
