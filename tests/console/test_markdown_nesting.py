"""One entry can never take the person's view down.

An agent that may write to a person's memory could store ">" repeated thousands of times (nested block quotes, far
under the 64 KB write limit). ``markdown.js`` recursed once per level, Chromium threw "Maximum call stack size
exceeded", and the whole memory view was replaced by that error: nothing in the scope could be seen or forgotten.
Quotes now nest at most ``MAX_NESTING`` (8) deep, deeper markers flattened into the innermost one, and each entry
is rendered on its own: should the renderer ever fail on one, that entry shows as plain text and the rest render.

Bounded in time: every wait is explicit (10 s at most each) and a page load stops after 30 s.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import text_appears
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer

_QUOTE_DEPTH = """
let deepest = 0;
for (const quote of document.querySelectorAll(arguments[0] + " blockquote")) {
  let depth = 0;
  for (let el = quote; el; el = el.parentElement) if (el.tagName === "BLOCKQUOTE") depth += 1;
  deepest = Math.max(deepest, depth);
}
return deepest;
"""


def test_an_entry_of_twenty_thousand_nested_quotes_renders_flattened_beside_the_others(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    for text in ("an ordinary fact", ">" * 20_000 + " the deepest words", "> > > three deep"):
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": text}).raise_for_status()
    open_console(browser, console_server, instance)  # the view shows: before, it was the stack overflow's error
    entries = text_appears(browser, "#entries", "an ordinary fact")
    assert "the deepest words" in entries.text and "three deep" in entries.text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#entries li.entry button.danger")) == 3  # each can be forgotten
    items = browser.find_elements(By.CSS_SELECTOR, "#entries li.entry")
    deep = next(i for i in items if "the deepest words" in i.text)
    shallow = next(i for i in items if "three deep" in i.text)
    browser.execute_script("arguments[0].id = 'deep'; arguments[1].id = 'shallow'", deep, shallow)
    assert browser.execute_script(_QUOTE_DEPTH, "#deep") == 8  # flattened past eight levels
    assert browser.execute_script(_QUOTE_DEPTH, "#shallow") == 3  # shallower quotes nest as written
    assert ">" not in deep.text  # the markers past the cap are taken off, not shown


def test_an_entry_the_renderer_fails_on_shows_as_plain_text(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """The page renders each entry with ``renderEntryContent``; given a renderer that throws, it shows the text as
    written (as text: never markup) with a note, instead of letting the error replace the view."""
    open_console(browser, console_server, instance)
    shown = browser.execute_async_script("""
      const done = arguments[arguments.length - 1];
      const app = [...document.scripts].find((s) => s.src.endsWith("/app.js")).src;
      import(app.replace(/app\\.js$/, "markdown.js")).then((md) => {
        const el = md.renderEntryContent("**kept** <b onclick=x>as text</b>", () => {
          throw new RangeError("Maximum call stack size exceeded");
        });
        done({ text: el.textContent, elements: [...el.querySelectorAll("*")].map((e) => e.tagName) });
      }, (error) => done({ error: String(error) }));
    """)
    assert "error" not in shown, shown
    assert "**kept** <b onclick=x>as text</b>" in shown["text"]
    assert "could not be formatted" in shown["text"]
    assert "B" not in shown["elements"]
