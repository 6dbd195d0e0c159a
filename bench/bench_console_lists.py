"""The operator's long lists in the web console: time to show each, and the page's height, with N items.

Run from the project root:

    python bench/bench_console_lists.py [--items 2000 5000] [--runs 3] [--views operator person]

``python -m memory_core serve`` on SQLite, one instance holding N of each: stored deletion requests this release
cannot read (a later release's kind), agents with stored settings, and users whose one entry holds hidden text
(written to the store as a version before the hidden-text rule did). Debian's headless Chromium opens the operator
view and times, from a click to the first frame after what it shows is in the DOM: the operator tab read again
(with the note of unreadable requests), "List configured agents", then, after one scan for hidden text, the tab
read again with the scan's findings too; with the part of it the API's answers took (resource timing), the rest
being the page's. The height is ``document.documentElement.scrollHeight`` then. Medians of ``--runs``.

``person``: in an instance of its own, the local person keeps memory with N agents (one entry each); the figure is
"My memory" read again, from the click to the first frame after the view with its agent list is in the DOM.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, agent_hash
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from tests.console.browser import chromium, find, text_appears
from tests.support.console_session import open_afresh
from tests.support.local_server import OPERATOR_KEY, RunningServer, running_server

# Clicks ``arguments[0]``'s element, waits until a new ``arguments[1]`` is in the DOM and a frame has passed, and
# answers [milliseconds, milliseconds of API reads meanwhile, the page's height].
_TIMED_CLICK = """
const [button, selector, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const old = document.querySelector(selector);
const t0 = performance.now();
document.querySelector(button).click();
(function poll() {
  const now = document.querySelector(selector);
  if (!now || now === old) { setTimeout(poll, 2); return; }
  requestAnimationFrame(() => setTimeout(() => {
    const t1 = performance.now();
    const api = performance.getEntriesByType("resource").filter((r) => r.startTime >= t0 && r.name.includes("/api/"))
      .reduce((sum, r) => sum + r.duration, 0);
    done([t1 - t0, api, document.documentElement.scrollHeight]);
  }, 0));
})();
"""


def seed(server: RunningServer, instance: str, items: int) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = server.open_store()
    try:
        store.put_records([Record(deletions_partition(instance), RecordKind.DELETION_REQUEST,
                                  f"2026-01-01T00:00:00.{n:06d}Z~later-{n:05d}",
                                  {"id": f"later-{n:05d}", "instance_id": instance, "upn": f"u{n}@contoso.com",
                                   "kind": "archive", "status": "pending", "requested_by": f"u{n}@contoso.com",
                                   "requested_on": "2026-01-01T00:00:00+00:00"}) for n in range(items)])
        store.put_records([Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(f"agent-{n:05d}"),
                                  AgentSettings(f"agent-{n:05d}").to_data()) for n in range(items)])
        for n in range(items):
            key = ProfileKey(instance, f"user-{n:05d}@contoso.com", Scope.USER)
            store.append(MemoryProfile(key, None, None, None, at, at),
                         MemoryEntry(f"entry-{n:05d}", key, "- prefers tea" + hidden, EntryKind.APPEND, at, key.upn))
    finally:
        store.close()


def timed(driver: WebDriver, button: str, selector: str) -> tuple[float, float, int]:
    ms, api, height = driver.execute_async_script(_TIMED_CLICK, button, selector)
    return float(ms), float(api), int(height)


def measure(items: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            running_server(Path(tmp), {"MEMORY_AUTH_MODE": "local,key"}) as server, chromium() as driver:
        driver.set_script_timeout(300)
        instance = f"bench-{uuid.uuid4().hex[:8]}"
        seed(server, instance, items)
        open_afresh(driver, f"{server.api}/console", instance=instance, operator_key=OPERATOR_KEY)
        find(driver, "#tab-operator").click()
        find(driver, "#list-agents", timeout=60)

        def row(name: str, button: str, selector: str) -> None:
            found = [timed(driver, button, selector) for _ in range(runs)]
            total, api, height = (statistics.median(f[i] for f in found) for i in range(3))
            print(f"| {items:,} | {name} | {total:,.0f} ms | {api:,.0f} ms | {height:,.0f} px |", flush=True)

        row("operator tab, with the note of unreadable requests", "#tab-operator", "#unreadable-deletions")
        row("List configured agents", "#list-agents", "#agents-table")
        find(driver, "#scan-hidden-text").click()
        text_appears(driver, "#hidden-text-summary", f"{items:,} entries hold hidden text", timeout=300)
        row("operator tab, with the note and the scan's findings", "#tab-operator", "#hidden-text-table")

def seed_agents(server: RunningServer, instance: str, items: int) -> None:
    """``items`` agents of the local person, one entry each, agent n updated a second after agent n - 1."""
    store = server.open_store()
    try:
        for n in range(items):
            key = ProfileKey(instance, "local@localhost", Scope.AGENT, f"agent-{n:05d}")
            at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=n)
            store.append(MemoryProfile(key, None, None, f"Agent {n:05d}", at, at),
                         MemoryEntry(f"e{n}", key, f"- fact of agent {n}", EntryKind.APPEND, at, key.upn,
                                     agent_name=f"Agent {n:05d}"))
    finally:
        store.close()


def measure_person(items: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            running_server(Path(tmp), {"MEMORY_AUTH_MODE": "local"}) as server, chromium() as driver:
        driver.set_script_timeout(300)
        instance = f"bench-{uuid.uuid4().hex[:8]}"
        seed_agents(server, instance, items)
        open_afresh(driver, f"{server.api}/console", instance=instance)
        find(driver, "#scope-title", timeout=60)
        found = [timed(driver, "#tab-memory", 'nav[aria-label="Whose memory"]') for _ in range(runs)]
        total, api, height = (statistics.median(f[i] for f in found) for i in range(3))
        print(f"| {items:,} | My memory, with its agents | {total:,.0f} ms | {api:,.0f} ms | {height:,.0f} px |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[2000, 5000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--views", nargs="+", choices=["operator", "person"], default=["operator", "person"])
    args = parser.parse_args()
    print("| items | list | shown after | of it API reads | page height |\n|---:|---|---:|---:|---:|")
    for items in args.items:
        if "operator" in args.views:
            measure(items, args.runs)
        if "person" in args.views:
            measure_person(items, args.runs)


if __name__ == "__main__":
    main()
