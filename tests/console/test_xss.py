"""Memory content is user-controlled: stored payloads must never run in the console.

Every payload is stored through the API (as an agent would), then shown in the person's view,
in search results, in an agent's scope and in the operator's view. The page's own flag
``window.__xss`` is never set, no dialog opens, no active element (script, img, iframe, svg,
object) appears in the page, and no link leads anywhere but http(s) or mailto. Then a
sanitizer bug is simulated: the test injects markup with an inline handler, and the
Content-Security-Policy refuses it and reports the violation.
"""

from __future__ import annotations

import httpx
import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import (
    browser_log,
    csp_violations,
    find,
    text_appears,
    wait_for,
    wait_idle,
)
from tests.console.conftest import open_console
from tests.support.local_server import OPERATOR_KEY, RunningServer

PAYLOADS = [
    '<img src=x onerror="window.__xss=1;alert(1)">',
    "<script>window.__xss=2;alert(2)</script>",
    "[click me](javascript:window.__xss=3)",
    "[CLICK](JaVaScRiPt:window.__xss=4)",
    "[tabbed](java\tscript:window.__xss=5)",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCg2KTwvc2NyaXB0Pg==)",
    '<a href="javascript:window.__xss=7">html link</a>',
    "![pixel](javascript:window.__xss=8)",
    "![tracker](https://tracker.example/pixel.gif)",
    "<svg onload=window.__xss=9>",
    "<iframe src=javascript:window.__xss=10></iframe>",
    '[nested [x](javascript:window.__xss=11)](https://ok.example)',
    "[entity](&#106;avascript:window.__xss=12)",
    '[quote](https://ok.example" onmouseover="window.__xss=13)',
    "<details open ontoggle=window.__xss=14>",
    "`<img src=x onerror=window.__xss=15>`",
    "**<b onmouseover=window.__xss=16>bold</b>**",
]
ACTIVE = "script, img, iframe, svg, object, embed, frame, details[ontoggle], [onerror], [onload], [onmouseover]"
AGENT = "agent-<img src=x onerror=window.__xss=20>"


def _assert_nothing_ran(driver: WebDriver) -> None:
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - reading it is the check
    assert driver.execute_script("return window.__xss") is None
    assert driver.find_elements(By.CSS_SELECTOR, f"#main :is({ACTIVE})") == []
    for link in driver.find_elements(By.CSS_SELECTOR, "#main a[href]"):
        assert link.get_attribute("href").startswith(("https://", "http://", "mailto:")), link.get_attribute("href")
    assert csp_violations(browser_log(driver)) == []


def _click_every_link_and_hover(driver: WebDriver) -> None:
    for el in driver.find_elements(By.CSS_SELECTOR, "#entries .markdown *"):
        driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('mouseover', {bubbles: true}))", el)
    for link in driver.find_elements(By.CSS_SELECTOR, "#entries a"):
        driver.execute_script("arguments[0].removeAttribute('target')", link)
        href = link.get_attribute("href")
        assert href.startswith("https://ok.example"), href


def test_stored_payloads_never_run(browser: WebDriver, console_server: RunningServer, instance: str,
                                   local_api: httpx.Client) -> None:
    browser_log(browser)  # start from an empty log
    for payload in PAYLOADS:
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": payload,
                                               "tags": ["<img src=x onerror=window.__xss=30>"]}).raise_for_status()
    local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": AGENT,
                                           "agent_name": "<script>window.__xss=21</script>",
                                           "content_markdown": PAYLOADS[0]}).raise_for_status()
    local_api.delete(f"/memory/entries/{local_api.get('/memory/entries', params={'scope': 'user'}).json()['entries'][0]['id']}")

    open_console(browser, console_server, instance)
    text = find(browser, "#entries").text
    assert "<script>window.__xss=2;alert(2)</script>" in text  # shown as text, not run
    assert '<img src=x onerror="window.__xss=1;alert(1)">' not in text  # forgotten: hidden at once
    assert "click me (javascript:window.__xss=3)" in text
    assert "[image: tracker] https://tracker.example/pixel.gif" in text  # never loaded
    _click_every_link_and_hover(browser)
    _assert_nothing_ran(browser)

    find(browser, "#search-q").send_keys("xss")
    browser.find_element(By.CSS_SELECTOR, "#search-form button[type=submit]").click()
    text_appears(browser, "#search-results", "Search results")
    _assert_nothing_ran(browser)

    agent = next(b for b in browser.find_elements(By.CSS_SELECTOR, ".scopes button") if "script" in b.text)
    assert agent.text.startswith("<script>window.__xss=21</script>")
    agent.click()
    text_appears(browser, "#scope-title", "<script>window.__xss=21</script>")
    wait_idle(browser)
    _assert_nothing_ran(browser)

    browser.find_element(By.ID, "tab-audit").click()
    find(browser, "#own-audit")
    _assert_nothing_ran(browser)

    # the operator sees the user's pending request, whose agent id carries a payload
    local_api.post("/memory/clear", json={"scope": "agent", "agent_object_id": AGENT, "confirm": True})
    open_console(browser, console_server, instance, operator_key=OPERATOR_KEY)
    browser.find_element(By.ID, "tab-operator").click()
    text_appears(browser, "#deletions", AGENT)
    _assert_nothing_ran(browser)


def test_the_policy_blocks_injected_markup_if_rendering_ever_failed(browser: WebDriver, console_server: RunningServer,
                                                                     instance: str) -> None:
    """Defence in depth: markup injected past the renderer still cannot run (the CSP refuses it)."""
    open_console(browser, console_server, instance)
    browser_log(browser)
    browser.execute_script("""
        const box = document.createElement('div');
        box.id = 'injected';
        box.innerHTML = '<img src="x" onerror="window.__xss=40">' + '<a id="js" href="javascript:window.__xss=41">x</a>';
        document.getElementById('main').append(box);
        const s = document.createElement('script');
        s.textContent = 'window.__xss = 42';
        document.body.append(s);
        document.getElementById('js').click();
    """)
    violations: list[str] = []
    wait_for(browser, lambda d: violations.extend(csp_violations(browser_log(d))) or len(violations) >= 2)
    assert browser.execute_script("return window.__xss") is None
    assert any("inline" in v for v in violations)
