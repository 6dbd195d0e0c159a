"""An operator, in real headless Chromium against ``serve``, lists the holds whose deletion request is gone and
releases them (``GET .../operator/orphan-holds``, ``POST .../orphan-holds/release`` naming the hold in its body).

Before, only the REST route and the CLI showed them: the console had no view of memory hidden behind no request.
The panel lists a page at a time (ids, whose memory, scope, what kind of hold: never memory text), asks before each
release naming what shows again, and says what the API answered, with its status and code when it refused.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from memory_core.domain.models import SHARED_OWNER, Hold
from memory_core.domain.records import DELETIONS_OWNER
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.console.test_keyboard import _focused_matches
from tests.support.console_session import OPERATOR_STORE
from tests.support.later_release import LATER, put_holds_beside, put_request_beside
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer

WORDS = "a fact a later release hid"
UNTIL = datetime(2099, 1, 1, tzinfo=UTC)


def _remember(server: RunningServer, instance: str, upn: str = LATER, *, share: str | None = None) -> None:
    body: dict[str, str] = {"scope": "user", "content_markdown": f"- {WORDS}"}
    if share:
        body["share"] = share
    with server.client(upn) as http:
        http.post(f"/instances/{instance}/memory/append", json=body).raise_for_status()


def _entries(server: RunningServer, instance: str, upn: str = LATER) -> list[str]:
    with server.client(upn) as http:
        answer = http.get(f"/instances/{instance}/memory/entries", params={"scope": "user"})
    answer.raise_for_status()
    return [e["content_markdown"] for e in answer.json()["entries"]]


def _listed(operator_api: httpx.Client) -> list[tuple[str, str | None]]:
    return [(h["request_id"], h["upn"]) for h in operator_api.get("/operator/orphan-holds").json()["holds"]]


def _open_panel(browser: WebDriver, server: RunningServer, instance: str) -> WebElement:
    open_console(browser, server, instance, operator_key=OPERATOR_KEY)
    find(browser, "#tab-operator").click()
    find(browser, "#list-orphan-holds").click()
    summary = find(browser, "#orphan-holds-summary")
    wait_idle(browser)
    return summary


def _row(browser: WebDriver, request_id: str, owner: str = LATER) -> WebElement:
    """The row listing ``request_id``'s hold in ``owner``'s partition (compared as text: an id may hold quotes)."""
    def listed(d: WebDriver) -> WebElement | bool:
        try:
            for row in d.find_elements(By.CSS_SELECTOR, "#orphan-holds-table tbody tr"):
                if (row.get_attribute("data-request-id"), row.get_attribute("data-owner")) == (request_id, owner):
                    return row
        except StaleElementReferenceException:  # drawn again between find and read
            pass
        return False
    return wait_for(browser, listed)


def _releases(row: WebElement) -> list[WebElement]:
    return row.find_elements(By.CSS_SELECTOR, "button.release-hold")


def _released(browser: WebDriver, request_id: str) -> bool:
    """Whether ``request_id``'s row offers no Release any more (it is marked released)."""
    try:
        return "released" in _row(browser, request_id).text and not _releases(_row(browser, request_id))
    except StaleElementReferenceException:
        return False


def _dialog_text(browser: WebDriver) -> str:
    return str(find(browser, "dialog#confirm[open] #confirm-text").text)


def _marks(where: WebElement) -> list[str]:
    return [m.text for m in where.find_elements(By.CSS_SELECTOR, ".invisible-char")]


def test_an_operator_releases_an_orphan_hold_and_the_memory_shows_again(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """Listed by its ids (request, whose memory, every scope, written up to when), never the text; the dialog names
    what shows again; released, the outcome line counts the hold lifted, the row is marked, the focus is on that
    line, and the fact is read again through the REST API."""
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, LATER, Hold("gone-erasure", None, UNTIL))
    assert _entries(console_server, instance) == []

    summary = _open_panel(browser, console_server, instance)
    assert summary.text == "Page 1: 1 orphan hold found; users' memories read whole: 1."
    row = _row(browser, "gone-erasure")
    assert "later@contoso.com's memory" in row.text and "every scope" in row.text
    assert "everything written up to" in row.text and "2099" in row.text
    assert WORDS not in find(browser, "#orphan-holds").text
    button = row.find_element(By.CSS_SELECTOR, "button.release-hold")
    assert button.get_attribute("aria-label") == (
        "Release \u2068gone-erasure\u2069 on \u2068later@contoso.com\u2069's memory")

    button.click()
    text = _dialog_text(browser)
    assert "gone-erasure" in text and "no longer stored" in text and "every scope" in text
    assert "later@contoso.com's memory and of their team-shared copies shows again" in text
    assert "Nothing is erased" in text
    browser.find_element(By.ID, "confirm-ok").click()

    outcome = text_appears(browser, "#orphan-release-outcome", "Released")
    assert outcome.text == (
        "Released gone-erasure on later@contoso.com's memory: 1 hold lifted; what it hid shows again.")
    status_says(browser, "1 hold lifted")
    wait_for(browser, lambda d: _focused_matches(d, "#orphan-release-outcome"))
    assert _releases(_row(browser, "gone-erasure")) == []
    assert "released" in _row(browser, "gone-erasure").text
    assert _entries(console_server, instance) == [f"- {WORDS}"]
    assert _listed(operator_api) == []
    trail = operator_api.get("/operator/audit", params={"upn": LATER}).json()["events"]
    assert [e["request_id"] for e in trail if e["action"] == "hold_released"] == ["gone-erasure"]


def test_a_release_whose_request_reappeared_is_refused_with_its_code_and_the_request_listed_to_decide(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """The request is stored again while the panel lists its hold: the release answers 409 ``hold_not_orphaned``,
    the outcome line says so with the status and code, the row offers no release any more, the deletion table lists
    the request with Approve, and the fact stays hidden."""
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, LATER, Hold("back-again", None, UNTIL))
    _open_panel(browser, console_server, instance)
    put_request_beside(console_server, instance, "back-again")  # a pending forget of that id, readable
    _row(browser, "back-again").find_element(By.CSS_SELECTOR, "button.release-hold").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()

    outcome = text_appears(browser, "#orphan-release-outcome", "Not released")
    assert "(409 hold_not_orphaned)" in outcome.text and "decide it under Deletion requests" in outcome.text
    status_says(browser, "409 hold_not_orphaned")
    row = find(browser, '#deletions tr[data-request-id="back-again"]')
    assert row.find_elements(By.XPATH, ".//button[text()='Approve']")
    listed = _row(browser, "back-again")
    assert _releases(listed) == []
    assert "its request is stored again" in listed.text
    wait_for(browser, lambda d: _focused_matches(d, "#orphan-release-outcome"))
    assert _entries(console_server, instance) == []


def test_refusals_are_shown_with_their_status_and_code_and_the_release_stays_offered(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """With a person's key in place of the operator's, the caller is no operator (403): the refusal is said with its
    status and code, nothing is released, and the Release button stays for a second try."""
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, LATER, Hold("plain", None, UNTIL))
    _open_panel(browser, console_server, instance)

    # Another tab put a person's key where the operator's was: valid, with no operator rights.
    browser.execute_script("sessionStorage.setItem(arguments[0], arguments[1])", OPERATOR_STORE, USER_KEY)
    _row(browser, "plain").find_element(By.CSS_SELECTOR, "button.release-hold").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    outcome = text_appears(browser, "#orphan-release-outcome", "Not released plain")
    assert "(403 forbidden)" in outcome.text, outcome.text
    assert _releases(_row(browser, "plain"))
    assert _listed(operator_api) == [("plain", LATER)]


def test_a_shared_hold_naming_no_author_is_released_as_shared(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A team-shared hold naming no author hides every author's copies: listed as such, the dialog says they show
    again to the team, and the release names ``~shared``, audited in the instance's ``~deletions`` trail."""
    _remember(console_server, instance, share="team")
    put_holds_beside(console_server, instance, SHARED_OWNER, Hold("authorless", None, UNTIL))
    _open_panel(browser, console_server, instance)
    row = _row(browser, "authorless", SHARED_OWNER)
    assert "every author's team-shared copies" in row.text
    button = row.find_element(By.CSS_SELECTOR, "button.release-hold")
    assert button.get_attribute("aria-label") == "Release \u2068authorless\u2069 on every author's team-shared copies"
    button.click()
    assert "every author's team-shared copies it hides show again to the team" in _dialog_text(browser)
    browser.find_element(By.ID, "confirm-ok").click()
    text_appears(browser, "#orphan-release-outcome", "1 hold lifted")
    assert _listed(operator_api) == []
    trail = operator_api.get("/operator/audit", params={"upn": DELETIONS_OWNER}).json()["events"]
    assert [e["request_id"] for e in trail if e["action"] == "hold_released"] == ["authorless"]


def test_the_holds_are_listed_a_page_at_a_time(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """501 holds on one user's memory: a request of the listing reads 500 and ends inside that memory. The first
    page shows 100 of them with a button for more, and a release there moves the focus to the next hold's Release;
    Next page shows the last one and says it was the last, and a release on it focuses the outcome line, no other
    Release being on the page."""
    _remember(console_server, instance)
    put_holds_beside(console_server, instance, LATER, *(Hold(f"gone-{n:03}", None, UNTIL) for n in range(501)))
    summary = _open_panel(browser, console_server, instance)
    assert summary.text == (
        "Page 1: 500 orphan holds found; users' memories read whole: 0 (a page ends after 500 holds); more are left "
        "to read.")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#orphan-holds-table tbody tr")) == 100
    assert "400 not shown" in find(browser, "#show-more-orphan-holds").text
    _releases(_row(browser, "gone-000"))[0].click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    wait_for(browser, lambda d: _released(d, "gone-000"))
    wait_for(browser, lambda d: _focused_matches(d, '#orphan-holds-table tr[data-request-id="gone-001"] button'))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#orphan-holds-table tbody tr")) == 100
    find(browser, "#next-orphan-holds").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "orphan-holds-summary").text.startswith("Page 2:"))
    assert find(browser, "#orphan-holds-summary").text == (
        "Page 2: 1 orphan hold found; users' memories read whole: 1; that was the last page.")
    assert [r.get_attribute("data-request-id") for r in
            browser.find_elements(By.CSS_SELECTOR, "#orphan-holds-table tbody tr")] == ["gone-500"]
    assert not browser.find_elements(By.ID, "next-orphan-holds")
    _row(browser, "gone-500").find_element(By.CSS_SELECTOR, "button.release-hold").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    text_appears(browser, "#orphan-release-outcome", "1 hold lifted")
    wait_for(browser, lambda d: _focused_matches(d, "#orphan-release-outcome"))


def test_pages_of_memories_holding_no_orphan_are_read_past_to_the_next_that_does(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """150 users' memories (a request reads 100), the only orphan hold on the last: one page of the panel reads on
    past the hundred holding none and shows it, having read all 150."""
    for n in range(150):
        _remember(console_server, instance, f"user{n:03}@contoso.com")
    put_holds_beside(console_server, instance, "user149@contoso.com", Hold("last-one", None, UNTIL))
    summary = _open_panel(browser, console_server, instance)
    assert summary.text == "Page 1: 1 orphan hold found; users' memories read whole: 150."
    _row(browser, "last-one", "user149@contoso.com")


ZWSP, RLO, TAG_A = "\u200b", "\u202e", "\U000e0041"
HOSTILE = {
    "html": '<img src=x onerror="window.__xss=1">',
    "bidi": f"gone{RLO}evil",
    "hidden": f"later{ZWSP}one{TAG_A}",
}


def test_hostile_ids_are_rendered_inert_with_what_draws_as_nothing_marked(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """Ids holding markup, a right-to-left override and a zero-width space or tag character (another release's, or a
    damaged store's): the markup is text (no element made, ``window.__xss`` unset), each character drawn as nothing
    is a marked code point in the table, in the dialog and on the outcome line, each Release button's name spells
    them ("laterU+200Bone"), and a user stored with an override in a shared hold is isolated the same way."""
    _remember(console_server, instance, share="team")
    put_holds_beside(console_server, instance, LATER, *(Hold(rid, (f"profile{ZWSP}x",), UNTIL, (f"entry{RLO}1",))
                                                        for rid in HOSTILE.values()))
    put_holds_beside(console_server, instance, SHARED_OWNER,
                     Hold("shared-one", None, UNTIL, author_upn=f"mallory{RLO}@contoso.com"))
    _open_panel(browser, console_server, instance)
    panel = find(browser, "#orphan-holds")
    assert panel.find_elements(By.CSS_SELECTOR, "img, script, iframe, svg") == []
    assert browser.execute_script("return window.__xss") is None

    hidden = _row(browser, HOSTILE["hidden"])
    assert hidden.find_element(By.TAG_NAME, "code").text == "laterU+200BoneU+E0041"
    assert _marks(hidden) == ["U+200B", "U+E0041", "U+200B", "U+202E"]  # id, profile id, entry id
    assert "Release \u2068laterU+200BoneU+E0041\u2069 on" in str(
        hidden.find_element(By.CSS_SELECTOR, "button.release-hold").get_attribute("aria-label"))
    bidi = _row(browser, HOSTILE["bidi"])
    assert bidi.find_element(By.TAG_NAME, "code").text == "goneU+202Eevil"
    assert "Release \u2068goneU+202Eevil\u2069 on" in str(
        bidi.find_element(By.CSS_SELECTOR, "button.release-hold").get_attribute("aria-label"))
    html = _row(browser, HOSTILE["html"])
    assert html.find_element(By.TAG_NAME, "code").text == HOSTILE["html"]
    shared = _row(browser, "shared-one", SHARED_OWNER)
    assert "mallory" in shared.text and _marks(shared) == ["U+202E"]
    whose = shared.find_elements(By.TAG_NAME, "td")[1]
    assert whose.text == "malloryU+202E@contoso.com's team-shared copies"
    assert whose.find_element(By.TAG_NAME, "bdi").text == "malloryU+202E@contoso.com"  # isolated
    assert _releases(shared)  # released as ~shared: test_orphan_hold_refusals.py

    listed = hidden.find_element(By.TAG_NAME, "code").get_attribute("innerHTML")
    hidden.find_element(By.CSS_SELECTOR, "button.release-hold").click()
    dialog = find(browser, "dialog#confirm[open] #confirm-text")
    assert dialog.find_element(By.TAG_NAME, "code").get_attribute("innerHTML") == listed
    browser.find_element(By.ID, "confirm-ok").click()
    outcome = text_appears(browser, "#orphan-release-outcome", "1 hold lifted")
    assert outcome.find_element(By.TAG_NAME, "code").get_attribute("innerHTML") == listed
    status_says(browser, "laterU+200BoneU+E0041")
    for rid in (HOSTILE["bidi"], HOSTILE["html"]):
        _row(browser, rid).find_element(By.CSS_SELECTOR, "button.release-hold").click()
        find(browser, "dialog#confirm[open] #confirm-ok").click()
        wait_for(browser, lambda d, rid=rid: _released(d, rid))
    assert browser.execute_script("return window.__xss") is None
    assert _listed(operator_api) == [("shared-one", f"mallory{RLO}@contoso.com")]
