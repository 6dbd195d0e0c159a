"""What the Orphan holds panel cannot do, said on the panel, in real headless Chromium against ``serve``.

A hold whose request id no release URL can name (".", "..", an id holding "/"), or whose stored user is no valid UPN
(the route refuses its ``?upn=``, and ``~shared`` does not count it), is listed with why it cannot be released from
the console instead of a Release button that could never work; nothing is posted. A refused listing is said with its
status and code, the page read before it marked as not current. Before, each of these offered a Release that
answered "released already" or an error, or said the refusal only in the status line over a page that looked current.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.identity import InvalidCallerId, caller_upn
from memory_core.domain.models import SHARED_OWNER, Hold
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.console.test_orphan_holds import UNTIL, _holds, _listed, _open_panel, _releases, _remember, _row
from tests.support.console_session import OPERATOR_STORE
from tests.support.later_release import LATER
from tests.support.local_server import USER_KEY, RunningServer

UNNAMEABLE = [".", "..", "a/b", "/", "../x"]
# Ids holding URL syntax that encodeURIComponent does carry: released as any other.
NAMEABLE = ["a?b#c", "50%", "%2e%2e", "%2F", "x y+z&upn=~shared", "...", ".a"]


def _release_posts(browser: WebDriver) -> list[str]:
    return list(browser.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name).filter((u) => u.endsWith('/release')"
        " || u.includes('/release?'))"))


def test_ids_no_url_can_name_are_said_unreleasable_and_never_posted_while_others_are_released(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """"." and ".." are dot segments the browser resolves away (the POST reached another route, which answered
    that no hold stood) and "/" splits the id: each row says why it cannot be released from the console and offers
    no button. Ids holding "?", "#", "%", "+", "&" or dots beside other characters are released."""
    _remember(console_server, instance)
    _holds(console_server, instance, LATER, *(Hold(rid, None, UNTIL) for rid in UNNAMEABLE + NAMEABLE))
    _open_panel(browser, console_server, instance)
    browser.execute_script("performance.clearResourceTimings()")
    for rid in UNNAMEABLE:
        row = _row(browser, rid)
        assert _releases(row) == [], rid
        why = row.find_element(By.CSS_SELECTOR, ".unreleasable").text
        assert why.startswith("Cannot be released from the console: its request ID") and "docs/console.md" in why
    for rid in NAMEABLE:
        _releases(_row(browser, rid))[0].click()
        find(browser, "dialog#confirm[open] #confirm-ok").click()
        text_appears(browser, "#orphan-release-outcome", "1 hold lifted")
        wait_for(browser, lambda d, rid=rid: not _releases(_row(d, rid)))
    assert len(_release_posts(browser)) == len(NAMEABLE)
    assert sorted(r for r, _ in _listed(operator_api)) == sorted(UNNAMEABLE)


def test_a_hold_whose_stored_user_is_no_valid_upn_says_why_instead_of_offering_a_release(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A team-shared hold whose stored author holds an override: the API refuses that ``?upn=`` (400
    ``invalid_upn``) and ``~shared`` does not count it, so the row says why it cannot be released and offers no
    button; an authorless shared hold beside it keeps its Release."""
    author = "mallory\u202e@contoso.com"
    _remember(console_server, instance, share="team")
    _holds(console_server, instance, SHARED_OWNER, Hold("shared-one", None, UNTIL, author_upn=author),
           Hold("authorless", None, UNTIL))
    _open_panel(browser, console_server, instance)
    row = _row(browser, "shared-one", SHARED_OWNER)
    assert _releases(row) == []
    assert "no valid user principal name" in row.find_element(By.CSS_SELECTOR, ".unreleasable").text
    assert _releases(_row(browser, "authorless", SHARED_OWNER))
    refused = operator_api.post("/operator/orphan-holds/shared-one/release", params={"upn": author}, json={})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_upn")


def test_the_panels_upn_rule_is_the_apis(browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    """The panel's ``isCallerUpn`` takes exactly the names the API's ``caller_upn`` takes."""
    names = ["later@contoso.com", "Later@Contoso.com", " later@contoso.com ", "alex_contoso.com#ext#@x.contoso.com",
             "mallory\u202e@contoso.com", "\u212aate@contoso.com", "no-at-sign", "a@b", "a@-b.com", "a@b-.com",
             "a/b@c.com", "a?b@c.com", "a@b..com", "", " ", "~shared", "a" * 257 + "@b.com",
             "a@" + ".".join(["b" * 63] * 5), "a@" + "b" * 64 + ".com", "x@y.z\u00e9"]
    open_console(browser, console_server, instance)
    taken = browser.execute_async_script("""
      const [names, done] = arguments;
      const app = [...document.scripts].find((s) => s.src.endsWith("/app.js")).src;
      import(app.replace(/app\\.js$/, "hold_release.js")).then((m) => done(names.map((n) => m.isCallerUpn(n))),
        (error) => done(String(error)));""", names)
    assert dict(zip(names, taken, strict=True)) == {name: _api_takes(name) for name in names}


def _api_takes(name: str) -> bool:
    try:
        caller_upn(name)
    except InvalidCallerId:
        return False
    return True


def test_a_refused_listing_is_said_on_the_panel_with_its_status_and_code_and_the_old_page_marked(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """With a person's key in place of the operator's (another tab put it there), List orphan holds is refused: the
    panel says so with 403 ``forbidden`` and marks the page read before as read before the refusal; a listing then
    accepted clears both."""
    _remember(console_server, instance)
    _holds(console_server, instance, LATER, Hold("gone-a", None, UNTIL))
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
