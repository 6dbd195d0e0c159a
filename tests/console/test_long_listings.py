"""Listings longer than the console reads: a list cut short says so, and audit trails keep their newest events.

The console follows at most 50 pages of a listing (``Api.list``). A real memory or trail beyond 50
pages of 1,000 takes minutes to seed, so these tests make the one part that cannot run here in CI
time a stand-in: in the real page, in real Chromium, ``Api.prototype.get`` answers the one listing
under test with pages of two items that always name a next page. Every other call goes to the real
server, and the views render what ``Api.list`` returns as they do for a real one.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, text_appears, wait_idle
from tests.console.conftest import open_console
from tests.console.test_operator import _open_operator
from tests.support.local_server import RunningServer

# Replaces Api.prototype.get for one path: pages of two items, each naming a next page, counted in
# window.__pagesRead. The module is the page's own (same URL), so the views use the stand-in.
ENDLESS = """
const [path, field, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const url = performance.getEntriesByType("resource").map((r) => r.name).find((n) => n.endsWith("/api.js"));
import(url).then((m) => {
  const real = m.Api.prototype.get;
  window.__pagesRead = 0;
  m.Api.prototype.get = async function (p, query, credential) {
    if (p !== path) return real.call(this, p, query, credential);
    const n = window.__pagesRead++;
    const item = (i) => ({ id: `e${n}-${i}`, created_on: "2026-12-05T10:00:00Z", time: "2026-12-05T10:00:00Z",
      content_markdown: `- fact ${n}-${i}`, tags: [], action: "append", actor: "someone", upn: "local@localhost" });
    return { upn: "local@localhost", scope: "user", [field]: [item(0), item(1)], continuation: `page-${n + 1}` };
  };
  done(true);
});
"""
SHOW_TRAIL = "//button[text()='Show audit trail']"


def _cut_short_note(browser: WebDriver, path: str, field: str, reread: str, note_css: str) -> str:
    """The note under the listing at ``path`` once the stand-in makes it endless and the button at ``reread``
    (CSS or XPath) reads it again; the console must have stopped after its 50 pages."""
    browser.execute_async_script(ENDLESS, path, field)
    browser.find_element(By.XPATH if reread.startswith("//") else By.CSS_SELECTOR, reread).click()
    note = text_appears(browser, note_css, "Only the first")
    assert browser.execute_script("return window.__pagesRead") == 50
    return note.text


def test_an_entries_listing_longer_than_the_console_reads_says_so(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client
) -> None:
    """Read to its end, the list has no note; cut short after 50 pages, it says how many entries it shows, that
    they are the oldest and that there are more, and where to get all of them."""
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- prefers tea"}).raise_for_status()
    open_console(browser, console_server, instance)
    assert "prefers tea" in find(browser, "#entries").text
    assert not browser.find_elements(By.CSS_SELECTOR, ".cut-short")
    note = _cut_short_note(browser, "/memory/entries", "entries", 'button[data-scope="user"]', ".cut-short")
    assert note == ("Only the first 100 entries, the oldest, are shown here, and there are more. "
                    "Export your memory to get all of it.")
    assert find(browser, "#scope-title").text == "About me" and "Entries (100)" in browser.page_source


def test_an_audit_trail_longer_than_the_console_reads_keeps_its_newest_events_and_says_so(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client
) -> None:
    """The operator's trail of a user is read newest first (the real server is asked for order=newest_first and
    its newest event is the table's first row); cut short, it says it shows the newest events and that there are
    more."""
    first = local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- first fact"}).json()
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- second fact"}).raise_for_status()
    local_api.delete(f"/memory/entries/{first['entry_id']}").raise_for_status()
    _open_operator(browser, console_server, instance)
    find(browser, "#audit-upn").send_keys("local@localhost")
    browser.find_element(By.XPATH, SHOW_TRAIL).click()
    rows = find(browser, "#operator-audit-table").find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows][:3] == ["Asked to forget", "Added", "Added"]
    assert not browser.find_elements(By.CSS_SELECTOR, ".cut-short")
    wait_idle(browser)
    note = _cut_short_note(browser, "/operator/audit", "events", SHOW_TRAIL, "#operator-audit .cut-short")
    assert note == ("Only the first 100 events, the newest, are shown here, and there are more. "
                    "The REST route gives the rest, a page at a time (its continuation).")

