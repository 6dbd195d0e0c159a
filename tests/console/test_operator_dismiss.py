"""An operator, in real headless Chromium, dismisses a stored deletion request this release cannot read.

The note of unreadable requests offers a Dismiss button per request (before, it only named the CLI command). Each
asks first; a request whose holds still stand (409 ``holds_standing``) opens a second dialog that says how many and
that the memory they hide stays hidden, offering "Dismiss anyway" (``?force=true``); one that became readable
meanwhile (409 ``readable_request``) is said so, and the view read again. The audit view reads the instance's
``~deletions`` trail, where a dismissal of a request naming no user is audited.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from memory_core.domain.records import Partition, RecordKind
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.console.test_keyboard import _focused_matches, _keys, _tab_to
from tests.support.later_release import put_hold_beside, put_request_beside
from tests.support.local_server import OPERATOR_KEY, RunningServer

LATER = "later@contoso.com"


def _hold(server: RunningServer, instance: str, request_id: str) -> None:
    """The hold ``request_id`` filed in its user's partition: the memory it hides stays hidden while it stands."""
    put_hold_beside(server, instance, LATER, request_id)


def _hold_stands(server: RunningServer, instance: str, request_id: str) -> bool:
    store = server.open_store()
    try:
        return store.get_record(Partition(instance, LATER), RecordKind.HOLD, request_id) is not None
    finally:
        store.close()


def _open_operator(browser: WebDriver, server: RunningServer, instance: str) -> None:
    open_console(browser, server, instance, operator_key=OPERATOR_KEY)
    find(browser, "#tab-operator").click()
    find(browser, "#unreadable-deletions")
    wait_idle(browser)


def _dismiss_button(browser: WebDriver, request_id: str):  # type: ignore[no-untyped-def]
    return find(browser, f'#unreadable-deletions li[data-request-id="{request_id}"] button.dismiss')


def _unreadable(operator_api: httpx.Client) -> list[str]:
    return [u["request_id"] for u in operator_api.get("/operator/deletions").json()["unreadable"]]


def _dialog_text(browser: WebDriver) -> str:
    find(browser, "dialog#confirm[open]")
    return str(browser.find_element(By.ID, "confirm").text)


def test_an_operator_dismisses_an_unreadable_request_whose_holds_are_gone(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """Dismiss asks first, naming the request; confirmed, the request is gone from the store and the note, the line
    above the note says what was dismissed, and focus goes to the next request's Dismiss."""
    put_request_beside(console_server, instance, "of-a-later-kind", kind="archive")
    put_request_beside(console_server, instance, "another-later-one", kind="archive")
    _open_operator(browser, console_server, instance)
    button = _dismiss_button(browser, "of-a-later-kind")
    assert "of-a-later-kind" in str(button.get_attribute("aria-label"))
    button.click()
    text = _dialog_text(browser)
    assert "Dismiss this unreadable request?" in text and "of-a-later-kind" in text and "archive" in text
    browser.find_element(By.ID, "confirm-ok").click()

    outcome = text_appears(browser, "#dismissal-outcome", "Dismissed request")
    assert "of-a-later-kind" in outcome.text and "No hold of it stood" in outcome.text
    status_says(browser, "Dismissed request")
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, 'li[data-request-id="of-a-later-kind"]'))
    assert _unreadable(operator_api) == ["another-later-one"]
    wait_for(browser, lambda d: _focused_matches(d, 'li[data-request-id="another-later-one"] button.dismiss'))


def test_holds_standing_are_told_and_the_operator_dismisses_anyway(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A later release's pending erasure whose hold still stands: the dismissal is refused (409), and a second
    dialog says one hold stands and the memory it hides stays hidden. Cancel keeps the request; "Dismiss anyway"
    dismisses it forced, the hold left standing, and says so."""
    put_request_beside(console_server, instance, "pending-later", kind="archive")
    _hold(console_server, instance, "pending-later")
    _open_operator(browser, console_server, instance)

    _dismiss_button(browser, "pending-later").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    wait_for(browser, lambda d: "Holds of this request still stand" in _dialog_text(d))
    text = _dialog_text(browser)
    assert "1 hold it filed still stands" in text and "stays hidden" in text
    assert browser.find_element(By.ID, "confirm-ok").text == "Dismiss anyway"
    browser.find_element(By.ID, "confirm-cancel").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)
    assert _unreadable(operator_api) == ["pending-later"]  # cancelled: nothing dismissed

    _dismiss_button(browser, "pending-later").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    wait_for(browser, lambda d: "Holds of this request still stand" in _dialog_text(d))
    browser.find_element(By.ID, "confirm-ok").click()
    outcome = text_appears(browser, "#dismissal-outcome", "Dismissed request")
    assert "1 hold it filed still stands (dismissed anyway)" in outcome.text and "pending" in outcome.text
    wait_for(browser, lambda d: not d.find_elements(By.ID, "unreadable-deletions"))
    assert _unreadable(operator_api) == []
    assert _hold_stands(console_server, instance, "pending-later")  # what it hid stays hidden


def test_a_request_that_became_readable_meanwhile_is_said_so_and_listed_to_decide(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A release rewrites the request readable while the note shows it: Dismiss answers 409 ``readable_request``;
    the line above the note says it became readable and nothing was dismissed, and the view, read again, lists it
    in the table with Approve."""
    put_request_beside(console_server, instance, "rewritten", kind="archive")
    _open_operator(browser, console_server, instance)
    put_request_beside(console_server, instance, "rewritten")  # readable now: a pending forget
    _dismiss_button(browser, "rewritten").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    outcome = text_appears(browser, "#dismissal-outcome", "became readable meanwhile")
    assert "nothing was dismissed" in outcome.text
    row = find(browser, '#deletions tr[data-request-id="rewritten"]')
    assert row.find_elements(By.XPATH, ".//button[text()='Approve']")
    assert not browser.find_elements(By.ID, "unreadable-deletions")
    assert [r["id"] for r in operator_api.get("/operator/deletions").json()["requests"]] == ["rewritten"]


def test_the_trail_of_dismissals_naming_no_user_is_shown(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """A request whose stored user is no UPN is dismissed into the instance's ``~deletions`` trail, which the audit
    view's "Dismissals of requests naming no user" shows (before, the view could not read it)."""
    put_request_beside(console_server, instance, "no-user", upn=7, kind="archive")
    _open_operator(browser, console_server, instance)
    _dismiss_button(browser, "no-user").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    text_appears(browser, "#dismissal-outcome", "naming no user")
    wait_idle(browser)
    find(browser, "#show-deletions-trail").click()
    table = find(browser, "#operator-audit-table")
    assert "Unreadable deletion request dismissed" in table.text
    assert find(browser, "#operator-audit h3").text == "Dismissals of requests naming no user"


def test_an_operator_dismisses_past_standing_holds_with_the_keyboard_alone(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """Tab reaches Dismiss; each dialog opens on its safe choice (Cancel); Tab and Enter confirm, then "Dismiss
    anyway"; the focus then rests on the line that says what was dismissed, not at the top of the page."""
    put_request_beside(console_server, instance, "pending-later", kind="archive")
    _hold(console_server, instance, "pending-later")
    _open_operator(browser, console_server, instance)
    browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    _tab_to(browser, '#unreadable-deletions li[data-request-id="pending-later"] button.dismiss')
    _keys(browser, Keys.ENTER)
    find(browser, "dialog#confirm[open]")
    assert _focused_matches(browser, "#confirm-cancel")
    _keys(browser, Keys.TAB, Keys.ENTER)
    wait_for(browser, lambda d: "Holds of this request still stand" in _dialog_text(d))
    wait_for(browser, lambda d: _focused_matches(d, "#confirm-cancel"))
    _keys(browser, Keys.TAB)
    assert _focused_matches(browser, "#confirm-ok")
    _keys(browser, Keys.ENTER)
    text_appears(browser, "#dismissal-outcome", "Dismissed request")
    wait_for(browser, lambda d: _focused_matches(d, "#dismissal-outcome"))
    assert _unreadable(operator_api) == []


ZWSP, TAG_A = "\u200b", "\U000e0041"  # a zero-width space and the tag character for "A": both drawn as nothing
HIDDEN_ID = f"later{ZWSP}one{TAG_A}"  # an id a person reads as "laterone", stored by another release


def _marks(where: WebElement) -> list[str]:
    return [m.text for m in where.find_elements(By.CSS_SELECTOR, ".invisible-char")]


def test_the_dismiss_dialogs_show_a_stored_id_as_the_note_does_with_what_draws_as_nothing_marked(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """A request whose stored id and kind hold a zero-width space or a tag character: the note marks each
    ("U+200B"); both dialogs show the id exactly as the note does (the same marked <code>) and mark the kind too
    (before, the dialogs built a string, and "later\u200bone" read as "laterone", another request)."""
    put_request_beside(console_server, instance, HIDDEN_ID, kind=f"arc{ZWSP}{TAG_A}hive")
    _hold(console_server, instance, HIDDEN_ID)
    _open_operator(browser, console_server, instance)
    note = find(browser, f'#unreadable-deletions li[data-request-id="{HIDDEN_ID}"]')
    listed = note.find_element(By.TAG_NAME, "code")
    assert listed.text == "laterU+200BoneU+E0041" and _marks(listed) == ["U+200B", "U+E0041"]
    assert _marks(note) == ["U+200B", "U+E0041", "U+200B U+E0041"]  # the id's two, the kind's run

    note.find_element(By.CSS_SELECTOR, "button.dismiss").click()
    for title, ok in (("Dismiss this unreadable request?", "#confirm-ok"),
                      ("Holds of this request still stand", "#confirm-cancel")):
        wait_for(browser, lambda d, title=title: title in _dialog_text(d))
        text = find(browser, "dialog#confirm[open] #confirm-text")
        shown = text.find_element(By.TAG_NAME, "code")
        assert shown.get_attribute("innerHTML") == listed.get_attribute("innerHTML")
        assert _marks(text) == _marks(note)
        assert "(stored as arcU+200B U+E0041hive, pending, for later@contoso.com)" in text.text
        browser.find_element(By.CSS_SELECTOR, ok).click()
    wait_for(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)
    assert _unreadable(operator_api) == [HIDDEN_ID]  # cancelled at the second dialog: nothing dismissed


def test_the_lines_saying_what_a_dismissal_came_to_show_a_stored_id_as_the_note_does(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """The Dismiss button's name spells what draws as nothing in the id ("U+200B"), and the line saying the request
    was dismissed, or became readable meanwhile, shows the id as the note does (the same marked <code>). Before,
    both lines and the button's name were built as strings, and "later\u200bone" read as "laterone", another id."""
    readable = f"readable{ZWSP}one{TAG_A}"
    put_request_beside(console_server, instance, HIDDEN_ID, kind="archive")
    put_request_beside(console_server, instance, readable, kind="archive")
    _open_operator(browser, console_server, instance)
    note = find(browser, f'#unreadable-deletions li[data-request-id="{HIDDEN_ID}"]')
    listed = note.find_element(By.TAG_NAME, "code").get_attribute("innerHTML")
    button = note.find_element(By.CSS_SELECTOR, "button.dismiss")
    assert "laterU+200BoneU+E0041" in str(button.get_attribute("aria-label"))
    button.click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    outcome = text_appears(browser, "#dismissal-outcome", "Dismissed request")
    assert outcome.find_element(By.TAG_NAME, "code").get_attribute("innerHTML") == listed
    assert _marks(outcome) == ["U+200B", "U+E0041"]

    readable_note = find(browser, f'#unreadable-deletions li[data-request-id="{readable}"]')
    # Readable now (a pending forget), while the note still lists it.
    put_request_beside(console_server, instance, readable)
    listed = readable_note.find_element(By.TAG_NAME, "code").get_attribute("innerHTML")
    readable_note.find_element(By.CSS_SELECTOR, "button.dismiss").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    outcome = text_appears(browser, "#dismissal-outcome", "became readable meanwhile")
    assert outcome.find_element(By.TAG_NAME, "code").get_attribute("innerHTML") == listed
    assert _marks(outcome) == ["U+200B", "U+E0041"]
    assert _unreadable(operator_api) == []
