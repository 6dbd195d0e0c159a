"""Long tables show a part at a time, and the rest of the view stays in reach.

Many deletion requests: the operator's table shows 100 at a time.

The table listed every pending request: with 1,000 the tab took 6.5 s to show (5 s of it laying out 2,000 buttons)
and the sweep, the audit trail and the agent settings sat 80,000 pixels down the page. It now shows the oldest
100 and a button that shows 100 more and says how many are left; a decision keeps what was shown, and a change of
filter starts from 100 again.

A long audit trail: the person's (and the operator's) trail showed every event, up to 50,000; 2,000 took 2.7 s.
It now shows the newest 200, and a button shows 200 more.

The operator's other long lists, through the same button: the note of requests this release cannot read lists 20
at a time, the configured agents and the hidden-text scan's findings show 100 at a time. Each listed every item:
5,000 findings took seconds to show and pushed the rest of the view a quarter of a million pixels down
(docs/performance.md, "Web console").

Bounded in time: every wait is explicit (10 s at most each) and a page load stops after 30 s.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.expected_conditions import staleness_of

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.console.test_operator import _open_operator, _seed_users
from tests.support.local_server import RunningServer

PENDING = 230


def _rows(driver: WebDriver) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, "#deletions tbody tr"))


def test_the_operator_sees_requests_100_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client) -> None:
    for n in range(PENDING):
        operator_api.post("/operator/purges", json={"upn": f"user{n:03}@contoso.com"}).raise_for_status()
    _open_operator(browser, console_server, instance)
    find(browser, "#deletions")

    assert _rows(browser) == 100
    more = find(browser, "#show-more-requests")
    assert more.text == "Show 100 more (130 not shown)"
    more.click()
    wait_for(browser, lambda d: _rows(d) == 200)
    assert find(browser, "#show-more-requests").text == "Show 30 more (30 not shown)"

    # A decision reads the list again and keeps the 200 shown (one fewer pending now).
    browser.find_element(By.CSS_SELECTOR, "#deletions tbody tr button.primary").click()
    find(browser, "#confirm-ok").click()
    status_says(browser, "Approved")
    wait_for(browser, lambda d: _rows(d) == 200 and "29 not shown" in d.find_element(By.ID, "show-more-requests").text)

    find(browser, "#show-more-requests").click()
    wait_for(browser, lambda d: _rows(d) == PENDING - 1)
    done = find(browser, "#show-more-requests-done")
    assert done.text == f"All {PENDING - 1} requests shown."
    assert browser.switch_to.active_element == done

    # Another filter starts from 100 again.
    browser.find_element(By.CSS_SELECTOR, "#deletion-status option[value='all']").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "show-more-requests")
             and "130 not shown" in d.find_element(By.ID, "show-more-requests").text)
    wait_idle(browser)
    assert _rows(browser) == 100


def test_an_audit_trail_shows_200_events_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    for n in range(450):
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": f"- fact {n}"}).raise_for_status()
    open_console(browser, console_server, instance)
    find(browser, "#tab-audit").click()
    find(browser, "#own-audit")

    def rows(d: WebDriver) -> int:
        return len(d.find_elements(By.CSS_SELECTOR, "#own-audit tbody tr"))

    assert rows(browser) == 200
    find(browser, "#own-audit-more").click()
    wait_for(browser, lambda d: rows(d) == 400)
    assert find(browser, "#own-audit-more").text == "Show 50 more (50 not shown)"
    find(browser, "#own-audit-more").click()
    done = find(browser, "#own-audit-more-done")
    assert rows(browser) == 450 and done.text == "All 450 events shown."
    assert browser.switch_to.active_element == done


def _count(driver: WebDriver, css: str) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, css))


def _show_more(driver: WebDriver, button: str, css: str, shown: int) -> None:
    find(driver, f"#{button}").click()
    wait_for(driver, lambda d: _count(d, css) == shown)


def test_the_note_of_unreadable_requests_lists_20_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    """45 stored requests of a kind this release does not know: the note counts all 45 and lists 20, then 40,
    then all, the focus on the line that says so; the view redrawn (as after a decision) keeps what was listed."""
    store = console_server.open_store()
    try:
        store.put_records([Record(deletions_partition(instance), RecordKind.DELETION_REQUEST,
                                  f"2026-01-01T00:00:{n:02d}.000000Z~later-{n:02d}",
                                  {"id": f"later-{n:02d}", "instance_id": instance, "upn": f"u{n}@contoso.com",
                                   "kind": "archive", "status": "pending", "requested_by": f"u{n}@contoso.com",
                                   "requested_on": f"2026-01-01T00:00:{n:02d}+00:00"}) for n in range(45)])
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    items = "#unreadable-deletions li"
    assert "45 stored deletion requests cannot be read" in find(browser, "#unreadable-deletions").text
    assert _count(browser, items) == 20
    assert find(browser, "#show-more-unreadable").text == "Show 20 more (25 not shown)"
    _show_more(browser, "show-more-unreadable", items, 40)

    before = find(browser, "#unreadable-deletions")
    browser.find_element(By.ID, "tab-operator").click()  # the view is read again and redrawn, as after a decision
    wait_for(browser, staleness_of(before))
    text_appears(browser, "#show-more-unreadable", "Show 5 more (5 not shown)")
    assert _count(browser, items) == 40
    _show_more(browser, "show-more-unreadable", items, 45)
    done = find(browser, "#show-more-unreadable-done")
    assert done.text == "All 45 unreadable requests shown." and browser.switch_to.active_element == done
    assert browser.find_elements(By.CSS_SELECTOR, f"{items}[data-request-id='later-44']")


def test_the_configured_agents_show_100_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    """230 agents with stored settings: the list shows the first 100 by agent id, then 200, then all, and an agent
    shown by the button opens its settings like the others."""
    store = console_server.open_store()
    try:
        store.put_records([Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(f"agent-{n:03d}"),
                                  AgentSettings(f"agent-{n:03d}").to_data()) for n in range(230)])
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    find(browser, "#list-agents").click()
    rows = "#agents-table tbody tr"
    find(browser, rows)
    assert [r.get_attribute("data-agent") for r in browser.find_elements(By.CSS_SELECTOR, rows)] == [
        f"agent-{n:03d}" for n in range(100)]
    assert find(browser, "#show-more-agents").text == "Show 100 more (130 not shown)"
    _show_more(browser, "show-more-agents", rows, 200)
    _show_more(browser, "show-more-agents", rows, 230)
    assert find(browser, "#show-more-agents-done").text == "All 230 agents shown."
    find(browser, '#agents-table tr[data-agent="agent-229"] button').click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "settings-form")
             and "agent-229" in d.find_element(By.ID, "settings-form").text)


def test_the_findings_of_a_hidden_text_scan_show_100_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    """230 entries with hidden text: the scan counts all 230 and shows 100 findings, then 200; asking to forget
    one redraws the view with the 200 still shown, and the button shows the rest."""
    _seed_users(console_server, instance, 230, hidden_in=tuple(range(230)))
    _open_operator(browser, console_server, instance)
    find(browser, "#scan-hidden-text").click()
    text_appears(browser, "#hidden-text-summary", "230 entries hold hidden text; 230 memories (230 entries) scanned.")
    rows = "#hidden-text-table tbody tr"
    assert _count(browser, rows) == 100
    assert find(browser, "#show-more-findings").text == "Show 100 more (130 not shown)"
    _show_more(browser, "show-more-findings", rows, 200)

    forget = browser.find_element(By.CSS_SELECTOR, '#hidden-text-table tr[data-entry="entry-150"] button')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", forget)  # not under the status line
    forget.click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    status_says(browser, "Forget requested")
    wait_for(browser, lambda d: "forget requested" in d.find_element(
        By.CSS_SELECTOR, '#hidden-text-table tr[data-entry="entry-150"]').text)
    assert _count(browser, rows) == 200
    _show_more(browser, "show-more-findings", rows, 230)
    assert find(browser, "#show-more-findings-done").text == "All 230 findings shown."
