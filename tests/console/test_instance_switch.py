"""An operator changes the Instance field while a request of the operator's view is under way, in real headless
Chromium against ``serve``: what was read or asked for on one instance never reaches, nor is shown as, another's.

Before, the Orphan holds panel labelled a listing with the instance current when it ended (instance A's holds shown
under B, a Release then posted to B), and a listing's later requests went to whatever instance was current, with the
first instance's continuation; a dismissal's second POST ("Dismiss anyway") did the same.

The network here answers at once: a slow one is made by wrapping ``window.fetch`` so that the answers of the named
routes arrive late (the requests themselves are sent as they are). Nothing else is faked.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.models import Hold
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from tests.console.browser import find, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.console.test_orphan_holds import UNTIL, _listed, _open_panel, _remember, _row
from tests.support.later_release import LATER, put_hold_beside, put_holds_beside, put_request_beside
from tests.support.local_server import OPERATOR_KEY, RunningServer


def _slow_answers(browser: WebDriver, route: str, delay_ms: int) -> None:
    """Answers to requests whose URL holds ``route`` arrive ``delay_ms`` late; ``window.__waiting`` counts those
    not yet answered."""
    browser.execute_script("""
      const [route, delay] = arguments;
      const real = window.fetch;
      window.__waiting = 0;
      window.fetch = async (...args) => {
        if (!String(args[0]).includes(route)) return real(...args);
        window.__waiting += 1;
        try {
          const answer = await real(...args);
          await new Promise((ok) => setTimeout(ok, delay));
          return answer;
        } finally {
          window.__waiting -= 1;
        }
      };""", route, delay_ms)


def _switch_instance(browser: WebDriver, name: str) -> None:
    browser.execute_script("""
      const input = document.querySelector('#who input');
      input.value = arguments[0];
      input.dispatchEvent(new Event('change'));""", name)


def _all_answered(browser: WebDriver) -> None:
    wait_for(browser, lambda d: d.execute_script("return window.__waiting") == 0, timeout=20)
    wait_idle(browser)


def _requested(browser: WebDriver, route: str) -> list[str]:
    """The URLs of the requests this page sent whose path holds ``route``."""
    return list(browser.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name).filter((u) => u.includes(arguments[0]))",
        route))


def test_an_orphan_listing_read_while_the_instance_changes_is_dropped_not_shown_as_the_new_ones(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """Listing instance A's orphan holds, whose 150 memories take two requests, the operator switches to B before
    the first answer arrives: the listing asks nothing of B (it stops, its page being no longer shown), and B's
    panel shows no page at all (before, the second request went to B with A's continuation, and A's hold was
    listed under B)."""
    for n in range(150):
        _remember(console_server, instance, f"user{n:03}@contoso.com")
    put_holds_beside(console_server, instance, "user149@contoso.com", Hold("gone-a", None, UNTIL))
    _open_panel(browser, console_server, instance)
    browser.execute_script("performance.clearResourceTimings()")
    _slow_answers(browser, "/operator/orphan-holds?", 1500)
    find(browser, "#list-orphan-holds").click()
    wait_for(browser, lambda d: d.execute_script("return window.__waiting") == 1)
    _switch_instance(browser, f"{instance}-b")
    find(browser, "#list-orphan-holds")
    _all_answered(browser)

    urls = _requested(browser, "/operator/orphan-holds?")
    assert len(urls) == 1 and f"/instances/{instance}/" in urls[0], urls
    assert not browser.find_elements(By.ID, "orphan-holds-summary")
    assert not browser.find_elements(By.CSS_SELECTOR, "#orphan-holds-table tr")


def test_a_release_confirmed_after_the_instance_changed_posts_nothing(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A Release's dialog is open on instance A's hold when the instance becomes B: confirmed, nothing is posted
    (before, B's instance was asked to release A's id, which answered that none stood), and A's hold still stands."""
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, LATER, Hold("gone-a", None, UNTIL))
    _open_panel(browser, console_server, instance)
    browser.execute_script("performance.clearResourceTimings()")
    _row(browser, "gone-a").find_element(By.CSS_SELECTOR, "button.release-hold").click()
    find(browser, "dialog#confirm[open] #confirm-ok")
    _switch_instance(browser, f"{instance}-b")
    browser.find_element(By.ID, "confirm-ok").click()
    find(browser, "#list-orphan-holds")
    wait_idle(browser)
    assert _requested(browser, "/release") == []
    assert _listed(operator_api) == [("gone-a", LATER)]


def test_a_deletion_listing_asks_every_page_of_the_instance_it_started_on(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """1,001 stored requests take two pages of ``GET .../operator/deletions``; the instance changes while the first
    is answered: the second page is asked of the first instance with its continuation (before, of the new one)."""
    store = console_server.open_store()
    try:
        for n in range(1001):
            data = {"id": f"later-{n:04}", "instance_id": instance, "upn": LATER, "kind": "archive",
                    "status": "pending", "requested_by": LATER, "requested_on": "2026-01-01T00:00:00+00:00"}
            store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST,
                                    f"2026-01-01T00:00:00.{n:06}Z~later-{n:04}", data))
    finally:
        store.close()
    open_console(browser, console_server, instance, operator_key=OPERATOR_KEY)
    browser.execute_script("performance.clearResourceTimings()")
    _slow_answers(browser, "/operator/deletions?", 1500)
    find(browser, "#tab-operator").click()
    wait_for(browser, lambda d: d.execute_script("return window.__waiting") == 1)
    _switch_instance(browser, f"{instance}-b")
    _all_answered(browser)

    pages = [u for u in _requested(browser, "/operator/deletions?") if f"/instances/{instance}/" in u]
    assert len(pages) == 2 and "continuation=" in pages[1], pages
    assert not [u for u in _requested(browser, "/operator/deletions?") if "continuation=" in u
                and f"/instances/{instance}/" not in u]


def test_a_dismissal_confirmed_anyway_after_the_instance_changed_dismisses_on_its_own_instance(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """The instance changes while the first POST of a dismissal is answered (409: a hold still stands); "Dismiss
    anyway" then posts to the instance the request was listed on, which dismisses it (before, to the new instance,
    which had no such request: 404, and the request stayed)."""
    put_request_beside(console_server, instance, "pending-later", kind="archive")
    put_hold_beside(console_server, instance, LATER, "pending-later")
    open_console(browser, console_server, instance, operator_key=OPERATOR_KEY)
    find(browser, "#tab-operator").click()
    find(browser, "#unreadable-deletions")
    wait_idle(browser)
    browser.execute_script("performance.clearResourceTimings()")
    _slow_answers(browser, "/dismiss", 1500)
    find(browser, '#unreadable-deletions li[data-request-id="pending-later"] button.dismiss').click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    wait_for(browser, lambda d: d.execute_script("return window.__waiting") == 1)
    _switch_instance(browser, f"{instance}-b")
    text_appears(browser, "dialog#confirm[open]", "Holds of this request still stand")
    browser.find_element(By.ID, "confirm-ok").click()
    _all_answered(browser)

    posts = _requested(browser, "/dismiss")
    assert len(posts) == 2 and all(f"/instances/{instance}/" in u for u in posts), posts
    assert operator_api.get("/operator/deletions").json()["unreadable"] == []
    store = console_server.open_store()
    try:  # forced: what the hold hides stays hidden
        assert store.get_record(Partition(instance, LATER), RecordKind.HOLD, "pending-later") is not None
    finally:
        store.close()
