"""Text with no place to break (a log line, base64, a long tag or agent id) stays within the person's window."""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer


def _page_width(driver: WebDriver) -> tuple[int, int]:
    return driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")


def test_a_long_code_line_scrolls_in_its_block_and_leaves_the_page_as_wide_as_the_window(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    """A 2,000-character line in a fenced code block made the page 19,620 px wide, every Forget button with it."""
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "A short note."}).raise_for_status()
    local_api.post("/memory/append", json={"scope": "user",
                                           "content_markdown": "Token:\n```\n" + "QUJD" * 500 + "\n```"}
                   ).raise_for_status()
    open_console(browser, console_server, instance)
    page, window = _page_width(browser)
    assert page <= window
    for forget in browser.find_elements(By.CSS_SELECTOR, "#entries button.danger"):
        assert forget.location["x"] + forget.size["width"] <= window
    code = find(browser, "#entries pre")
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", code)


def test_a_long_tag_and_a_long_agent_id_wrap_in_the_search_form_and_the_pending_panel(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    """A tag may be 256 characters and an agent id 1,024, neither with a space: the tag's choice in the search form
    and the agent's line in the pending-deletions panel wrap rather than widen the page."""
    tag = "t" * 256
    agent = "agent-" + "x" * 1018
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- tagged", "tags": [tag]}
                   ).raise_for_status()
    local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": agent,
                                           "content_markdown": "- a fact"}).raise_for_status()
    local_api.post("/memory/clear", json={"scope": "agent", "agent_object_id": agent, "confirm": True})
    open_console(browser, console_server, instance)
    assert agent in find(browser, "#pending li").text
    assert find(browser, ".tag-choice").text.strip() == tag
    page, window = _page_width(browser)
    assert page <= window
