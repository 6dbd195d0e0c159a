"""Characters drawn as nothing in an entry's text show as marked code points.

A write refuses runs of zero-width characters, but one alone is stored (a joiner has its uses), and text stored
before the rule, or by a legacy import, may hold anything: a zero-width space inside an account number, a word
joiner, a soft hyphen, a right-to-left override that shows the rest of a line backwards. Every agent reads them,
and the entry showed nothing. The person's view now shows each as its code point, marked ("U+200B"), where it
stands, as it shows where a misleading link leads; the stored text is unchanged. A joiner inside an emoji
sequence or between Persian letters, an emoji's variation selector and a flag keep their visible use. A run of
them is one mark.

Every bidirectional control is marked, the marks, embeddings and isolates a write accepts as well as the overrides
it refuses: each is drawn as nothing and read by agents, and the pop after a marked override was the one character
of the pair left unseen. A stored name or tag is isolated (``<bdi>``), so that an override left open in it cannot
show the text around it (the agent's ID beside its name) in another order.

Bounded in time: every wait is explicit (10 s at most each).
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from tests.console.browser import find, text_appears
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
# Accepted by a write (the domain refuses only the overrides): each bidirectional mark, embedding and isolate.
BIDI_MARKED = {
    "Marks: a\u200eb\u200fc\u061cd": ("Marks: aU+200EbU+200FcU+061Cd",
                                      ["left-to-right mark", "right-to-left mark", "Arabic letter mark"]),
    "Embedded: \u202aAB\u202c, \u202bCD\u202c.": ("Embedded: U+202AABU+202C, U+202BCDU+202C.",
                                                  ["left-to-right embedding", "pop directional formatting",
                                                   "right-to-left embedding", "pop directional formatting"]),
    "Isolated: \u2066EF\u2069, \u2067GH\u2069, \u2068IJ\u2069.": (
        "Isolated: U+2066EFU+2069, U+2067GHU+2069, U+2068IJU+2069.",
        ["left-to-right isolate", "pop directional isolate", "right-to-left isolate", "pop directional isolate",
         "first strong isolate", "pop directional isolate"]),
}


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
    # The override is marked, so the rest of the line reads in the order agents read it, not backwards; and its pop,
    # drawn as nothing like it, is marked too.
    assert _entry(browser, "Wire to IBAN").text == "Wire to IBAN U+202E4321 GBU+202C now."
    # A run is one mark naming each character: thousands of them make one mark, not thousands.
    (run,) = _entry(browser, "Bits").find_elements(By.CSS_SELECTOR, ".invisible-char")
    assert run.text == "U+200B U+200C U+200B U+200B" and _entry(browser, "Bits").text == f"Bits{run.text} here."
    for text in KEPT:
        entry = _entry(browser, text.split(":")[0][:8])
        assert entry.text == text and not entry.find_elements(By.CSS_SELECTOR, ".invisible-char")

    # Only the page changed: the stored text keeps each character.
    stored = {e["content_markdown"] for e in local_api.get("/memory/entries", params={"scope": "user"}).json()["entries"]}
    assert {text for text, _, _ in SHOWN_MARKED.values()} | set(KEPT) | {OVERRIDDEN, RUN} <= stored


def test_bidirectional_marks_embeddings_and_isolates_show_as_marked_code_points(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    for content in BIDI_MARKED:
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": content}).raise_for_status()
    open_console(browser, console_server, instance)
    find(browser, "#entries .markdown")

    for shown, names in BIDI_MARKED.values():
        entry = _entry(browser, shown.split(":")[0])
        assert entry.text == shown
        marks = entry.find_elements(By.CSS_SELECTOR, ".invisible-char")
        assert [m.get_attribute("title").split(":")[0] for m in marks] == names
    stored = {e["content_markdown"] for e in local_api.get("/memory/entries", params={"scope": "user"}).json()["entries"]}
    assert set(BIDI_MARKED) <= stored


# Where the text node reading ``arguments[1]`` inside ``arguments[0]`` is drawn, and that element's ``.agent-id``:
# [left, right] of each.
_PLACES = """
const [root, words] = arguments;
const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
let node = walker.nextNode();
while (node && node.data !== words) node = walker.nextNode();
const range = document.createRange();
range.selectNodeContents(node);
const name = range.getBoundingClientRect();
const id = root.querySelector(".agent-id").getBoundingClientRect();
return [name.left, name.right, id.left, id.right];
"""


def test_an_override_in_an_agents_name_reorders_nothing_around_it(
        browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    """An agent's name stored before overrides were refused, with a right-to-left override left open: beside "About
    me" and in the scope's heading, the agent's ID still shows after the name, in its order, not reversed and
    drawn before the name's end."""
    name = "Mallory\u202eevil"
    store = console_server.open_store()
    try:
        key = ProfileKey(instance, "local@localhost", Scope.AGENT, "agent-rlo")
        at = datetime(2026, 1, 1, tzinfo=UTC)
        store.append(MemoryProfile(key, None, None, name, at, at),
                     MemoryEntry("rlo-0", key, "kept by Mallory", EntryKind.APPEND, at, key.upn, agent_name=name))
    finally:
        store.close()
    open_console(browser, console_server, instance)
    button = find(browser, "nav button[data-scope='agent:agent-rlo']")
    button.click()
    heading = text_appears(browser, "#scope-title", "Mallory")
    find(browser, "#entries .markdown")
    for where in (find(browser, "nav button[data-scope='agent:agent-rlo']"), heading):
        name_left, name_right, id_left, id_right = browser.execute_script(_PLACES, where, name)
        assert name_left < name_right <= id_left + 0.5 < id_right, (where.text, name_right, id_left)
