"""Orphan holds a URL cannot name, and what the panel cannot do, in real headless Chromium against ``serve``.

Every hold the listing names is released from the panel: the release names the request id and the listing's
``release_upn`` in its body (``POST .../operator/orphan-holds/release``), so an id of ".", "..", or one holding "/"
(which a path resolves or splits) is released as listed, and so is a team-shared hold whose stored author is no
valid UPN (released as ``~shared``). Before, each of those rows said it could not be released from the console. Only
a hold the listing says no release names (``release_upn`` null: a memory whose owner is no valid UPN) says why in
place of a button, posting nothing. A refused listing is said with its status and code, the page read before it
marked as not current.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, Hold, Scope
from memory_core.domain.records import DELETIONS_OWNER
from memory_core.domain.service import MemoryService
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.test_orphan_holds import (
    UNTIL,
    _dialog_text,
    _listed,
    _open_panel,
    _releases,
    _remember,
    _row,
)
from tests.support.console_session import OPERATOR_STORE
from tests.support.later_release import LATER, put_holds_beside
from tests.support.local_server import USER_KEY, RunningServer

# Ids a release URL's path resolves away or splits, or holding what a path would decode: released from the body.
PATHLESS = [".", "..", "a/b", "/", "../x", "%2F", "%2e%2e"]
# Ids holding URL syntax a path could carry encoded: released the same way.
PLAIN = ["a?b#c", "50%", "x y+z&upn=~shared", "...", ".a"]


def _release_posts(browser: WebDriver) -> list[str]:
    return list(browser.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name).filter((u) => u.includes('/release'))"))


def _release(browser: WebDriver, request_id: str, owner: str = LATER) -> None:
    """Release ``request_id``'s row, its button scrolled clear of the status line fixed at the page's foot."""
    button = _releases(_row(browser, request_id, owner))[0]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    wait_for(browser, lambda d: not _releases(_row(d, request_id, owner)))


def test_every_listed_id_is_released_from_the_console_those_no_url_names_included(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """".", "..", "a/b", "/", "../x", "%2F", "%2e%2e" and ids holding "?", "#", "%", "+", "&" or dots: each row
    offers a Release (none says it cannot be released); each click posts one release to the body-named route and
    lifts one hold; the listing is then empty and the fact shows again."""
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, LATER, *(Hold(rid, None, UNTIL) for rid in PATHLESS + PLAIN))
    _open_panel(browser, console_server, instance)
    browser.execute_script("performance.clearResourceTimings()")
    assert not browser.find_elements(By.CSS_SELECTOR, "#orphan-holds .unreleasable")
    for rid in PATHLESS + PLAIN:
        _release(browser, rid)
        assert "released" in _row(browser, rid).text
    posts = _release_posts(browser)
    assert len(posts) == len(PATHLESS + PLAIN)
    assert {p.rsplit("/operator/", 1)[1] for p in posts} == {"orphan-holds/release"}
    assert _listed(operator_api) == []
    with console_server.client(LATER) as http:
        entries = http.get(f"/instances/{instance}/memory/entries", params={"scope": "user"}).json()["entries"]
    assert len(entries) == 1


def test_a_shared_hold_whose_stored_author_is_no_valid_upn_is_released_as_shared(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A team-shared hold whose stored author holds an override: the row shows that author isolated and offers a
    Release; the dialog says it is released as ``~shared`` and audited in the ``~deletions`` trail; released, 1 hold
    lifted, the event there and none in any user's trail."""
    author = "mallory\u202e@contoso.com"
    _remember(console_server, instance, share="team")
    put_holds_beside(console_server, instance, SHARED_OWNER, Hold("shared-one", None, UNTIL, author_upn=author))
    _open_panel(browser, console_server, instance)
    row = _row(browser, "shared-one", SHARED_OWNER)
    assert not row.find_elements(By.CSS_SELECTOR, ".unreleasable")
    _releases(row)[0].click()
    dialog = _dialog_text(browser)
    assert "malloryU+202E@contoso.com (no valid user principal name, so released as ~shared)" in dialog
    assert "Audited in the instance's ~deletions trail" in dialog
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    text_appears(browser, "#orphan-release-outcome", "1 hold lifted")
    assert _listed(operator_api) == []
    trail = operator_api.get("/operator/audit", params={"upn": DELETIONS_OWNER}).json()["events"]
    assert [e["request_id"] for e in trail if e["action"] == "hold_released"] == ["shared-one"]


def test_a_shared_hold_whose_author_no_entry_has_says_it_hides_nothing_and_a_cut_author_says_it_is_cut(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """Before: a team-shared hold whose stored author is "" was shown as hiding "every author's team-shared copies",
    which show again when released, though it hides none of any user's; and an author the listing cut to 320
    characters was shown as a whole name ("<upn> (no valid user principal name, …)"). Now the first says its author,
    empty, no entry has and that nothing of any user's shows again; the second that it is cut, ending in "…"."""
    upn_320 = "a" * 200 + "@" + "b" * 60 + "." + "c" * 58
    _remember(console_server, instance, share="team")
    put_holds_beside(console_server, instance, SHARED_OWNER, Hold("empty-author", None, UNTIL, author_upn=""))
    put_holds_beside(console_server, instance, SHARED_OWNER, Hold("long-author", None, UNTIL,
                                                                  author_upn=upn_320 + "zz"))
    _open_panel(browser, console_server, instance)

    empty = _row(browser, "empty-author", SHARED_OWNER)
    assert "no user's copies (its author, empty, no entry has)" in empty.text
    assert "every author" not in empty.text
    assert _releases(empty)[0].get_attribute("aria-label") == (
        "Release \u2068empty-author\u2069 on no user's copies (its author, empty, no entry has)")
    _releases(empty)[0].click()
    dialog = _dialog_text(browser)
    assert "nothing of any user's shows again: its author, empty, is one no entry has" in dialog
    assert "every author" not in dialog
    find(browser, "dialog#confirm[open] #confirm-cancel").click()

    long = _row(browser, "long-author", SHARED_OWNER)
    assert f"the team-shared copies of an author cut here to {upn_320}\u2026" in long.text
    _releases(long)[0].click()
    assert (f"of an author cut here to {upn_320}\u2026 (a longer name, so released as ~shared) show again"
            in _dialog_text(browser))
    find(browser, "dialog#confirm[open] #confirm-cancel").click()
    assert sorted(h["request_id"] for h in operator_api.get("/operator/orphan-holds").json()["holds"]) == [
        "empty-author", "long-author"]


def test_a_hold_in_a_memory_no_users_name_reaches_says_why_and_posts_nothing(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A hold in the memory of an owner stored as "Later@Contoso.com" (no valid UPN as stored: another release's
    layout) is listed with ``release_upn`` null: its row says why it cannot be released and offers no button, and
    nothing is posted; a hold beside it in a valid user's memory keeps its Release."""
    odd = "Later@Contoso.com"
    store = console_server.open_store()
    try:
        MemoryService(store).append(Caller(odd), instance, Scope.USER, None, "- stored by another release")
    finally:
        store.close()
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, odd, Hold("odd-one", None, UNTIL))
    put_holds_beside(console_server, instance, LATER, Hold("fine-one", None, UNTIL))
    _open_panel(browser, console_server, instance)
    browser.execute_script("performance.clearResourceTimings()")
    row = _row(browser, "odd-one", odd)
    assert _releases(row) == []
    assert "no valid user principal name, which no release names" in row.find_element(
        By.CSS_SELECTOR, ".unreleasable").text
    assert _releases(_row(browser, "fine-one"))
    assert _release_posts(browser) == []
    assert [h["release_upn"] for h in operator_api.get("/operator/orphan-holds").json()["holds"]
            if h["request_id"] == "odd-one"] == [None]


def test_a_refused_listing_is_said_on_the_panel_with_its_status_and_code_and_the_old_page_marked(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """With a person's key in place of the operator's (another tab put it there), List orphan holds is refused: the
    panel says so with 403 ``forbidden`` and marks the page read before as read before the refusal; a listing then
    accepted clears both."""
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, LATER, Hold("gone-a", None, UNTIL))
    _open_panel(browser, console_server, instance)
    key = browser.execute_script("return sessionStorage.getItem(arguments[0])", OPERATOR_STORE)
    browser.execute_script("sessionStorage.setItem(arguments[0], arguments[1])", OPERATOR_STORE, USER_KEY)
    find(browser, "#list-orphan-holds").click()
    refused = text_appears(browser, "#orphan-holds-refused", "refused")
    assert "(403 forbidden)" in refused.text and "may be out of date" in refused.text
    status_says(browser, "403 forbidden")
    assert find(browser, "#orphan-holds-summary").text.startswith("Read before the refusal: Page 1:")

    browser.execute_script("sessionStorage.setItem(arguments[0], arguments[1])", OPERATOR_STORE, key)
    find(browser, "#list-orphan-holds").click()
    wait_for(browser, lambda d: not d.find_elements(By.ID, "orphan-holds-refused"))
    wait_idle(browser)
    assert find(browser, "#orphan-holds-summary").text.startswith("Page 1: 1 orphan hold found")
