"""Characters drawn as nothing in an entry's text show as marked code points.

A write refuses runs of zero-width characters, but one alone is stored (a joiner has its uses), and text stored
before the rule, or by a legacy import, may hold anything: a zero-width space inside an account number, a word
joiner, a soft hyphen, a right-to-left override that shows the rest of a line backwards. Every agent reads them,
and the entry showed nothing. The person's view now shows each as its code point, marked ("U+200B"), where it
stands, as it shows where a misleading link leads; the stored text is unchanged. A joiner inside an emoji
sequence or between Persian letters, an emoji's variation selector and a flag keep their visible use. A run of
them is one mark.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from tests.console.browser import find
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer

# Accepted by a write today: one zero-width character at a time.
SHOWN_MARKED = {
    "account": ("Pay to account 12\u200b34 today.", "Pay to account 12U+200B34 today.", ["zero-width space"]),
    "joiner": ("Call me Al\u2060ex.", "Call me AlU+2060ex.", ["word joiner"]),
    "soft hyphen": ("Drive on the Auto\u00adbahn.", "Drive on the AutoU+00ADbahn.", ["soft hyphen"]),
    "latin joiner": ("Ship to Ro\u200dme.", "Ship to RoU+200Dme.", ["zero-width joiner"]),
}
# Each character here has its visible use.
KEPT = ["Family: \U0001f468\u200d\U0001f469\u200d\U0001f467", "Persian: \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
        "Likes \u2764\ufe0f tea", "Supports \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"]
# Refused by a write since the hidden-text rule: stored as an older version did.
OVERRIDDEN = "Wire to IBAN \u202e4321 GB\u202c now."
RUN = "Bits\u200b\u200c\u200b\u200b here."


def _entry(driver: WebDriver, words: str):  # type: ignore[no-untyped-def]
    return next(e for e in driver.find_elements(By.CSS_SELECTOR, "#entries .markdown") if words in e.text)


def test_a_character_drawn_as_nothing_shows_as_its_code_point(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    for content in [text for text, _, _ in SHOWN_MARKED.values()] + KEPT:
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": content}).raise_for_status()
    for refused in (OVERRIDDEN, RUN):
        assert local_api.post("/memory/append", json={"scope": "user", "content_markdown": refused}).status_code == 422
    store = console_server.open_store()
    try:
        key = ProfileKey(instance, "local@localhost", Scope.USER)
        at = datetime(2026, 1, 1, tzinfo=UTC)
        for n, text in enumerate((OVERRIDDEN, RUN)):
            store.append(MemoryProfile(key, None, None, None, at, at),
                         MemoryEntry(f"refused-{n}", key, text, EntryKind.APPEND, at, key.upn))
    finally:
        store.close()
    open_console(browser, console_server, instance)
    find(browser, "#entries .markdown")

    for _, shown, names in SHOWN_MARKED.values():
        entry = _entry(browser, shown[:8])
        assert entry.text == shown
        marks = entry.find_elements(By.CSS_SELECTOR, ".invisible-char")
        assert [m.get_attribute("title").split(":")[0] for m in marks] == names
    # The override is marked, so the rest of the line reads in the order agents read it, not backwards.
    assert _entry(browser, "Wire to IBAN").text == "Wire to IBAN U+202E4321 GB\u202c now."  # the pop is no override
    # A run is one mark naming each character: thousands of them make one mark, not thousands.
    (run,) = _entry(browser, "Bits").find_elements(By.CSS_SELECTOR, ".invisible-char")
    assert run.text == "U+200B U+200C U+200B U+200B" and _entry(browser, "Bits").text == f"Bits{run.text} here."
    for text in KEPT:
        entry = _entry(browser, text.split(":")[0][:8])
        assert entry.text == text and not entry.find_elements(By.CSS_SELECTOR, ".invisible-char")

    # Only the page changed: the stored text keeps each character.
    stored = {e["content_markdown"] for e in local_api.get("/memory/entries", params={"scope": "user"}).json()["entries"]}
    assert {text for text, _, _ in SHOWN_MARKED.values()} | set(KEPT) | {OVERRIDDEN, RUN} <= stored
