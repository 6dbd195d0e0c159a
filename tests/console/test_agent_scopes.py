"""The person's agent scopes: one that fails stays in its place, and two agents never look the same.

An agent scope can fail to read while the rest of the person's memory reads fine (an operator switched the agent's
memory off: 403 ``agent_memory_disabled``; or any other error). The whole view was replaced by the error, and since
the view remembered the scope, "My memory" showed the error again until a reload. A stand-in front, between the
browser and ``serve``, fails that one scope's listing here, whatever the service answers for a disabled agent.

An agent's display name is the agent platform's choice: "About me (all agents)" or "Hel\\u200bper" would pass for
another item of the list. The agent's id is shown beside the name (cut short, whole in its title).

Bounded in time: every wait is explicit (10 s at most each) and a page load stops after 30 s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.support.console_session import open_afresh
from tests.support.local_server import RunningServer
from tests.support.stand_in_front import PassingFront, serving

FAILING_AGENT = "agent-switched-off"
REFUSAL = {"error": {"code": "agent_memory_disabled", "message": "memory is switched off for this agent"}}


class _FailingScopeFront(PassingFront):
    """Passes every request to ``serve``, but answers 403 to a listing of ``FAILING_AGENT``'s entries."""

    def answers_itself(self) -> bool:
        if "/memory/entries?" in self.path and f"agentObjectId={FAILING_AGENT}" in self.path:
            self.reply(403, json.dumps(REFUSAL).encode(), {"Content-Type": "application/json"})
            return True
        return False


@pytest.fixture
def failing_front(console_server: RunningServer) -> Iterator[str]:
    _FailingScopeFront.backend = console_server.base_url
    with serving(_FailingScopeFront) as url:
        yield url


def test_a_failing_agent_scope_shows_its_error_in_place_and_about_me_stays_one_click_away(
    browser: WebDriver, failing_front: str, instance: str, local_api: httpx.Client,
) -> None:
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "a fact about me"}).raise_for_status()
    local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": FAILING_AGENT, "agent_name": "Helper",
                                           "content_markdown": "kept by the helper"}).raise_for_status()
    open_afresh(browser, f"{failing_front}/api/console", instance=instance)
    text_appears(browser, "#entries", "a fact about me")
    wait_idle(browser)

    find(browser, f"nav button[data-scope='agent:{FAILING_AGENT}']").click()
    error = text_appears(browser, "#scope-error", "memory is switched off for this agent")
    assert error.get_attribute("role") == "alert"
    assert "Helper" in find(browser, "#scope-title").text
    wait_for(browser, lambda d: d.execute_script("return document.activeElement.id") == "back-to-user")

    browser.find_element(By.ID, "tab-memory").click()  # the tab shows the same, with its way back: not a dead end
    find(browser, "#scope-error")
    find(browser, "#back-to-user").click()
    text_appears(browser, "#entries", "a fact about me")
    assert find(browser, "#scope-title").text == "About me"

    find(browser, f"nav button[data-scope='agent:{FAILING_AGENT}']").click()  # and the nav's own item leads back
    find(browser, "#scope-error")
    find(browser, "nav button[data-scope=user]").click()
    text_appears(browser, "#entries", "a fact about me")


LONG_ID = "3f2c9a1e-7b44-4c1d-9e0a-5d6b7c8d9e0f"
ALIKE = "5e8a7c3b-0000-4000-8000-00000000000"  # two ids alike to their last character


def test_agents_with_look_alike_names_show_their_ids(browser: WebDriver, console_server: RunningServer,
                                                     instance: str, local_api: httpx.Client) -> None:
    # A zero-width character in a name is refused at a write now; letters of another script are not (U+041D U+0435 "lper",
    # Cyrillic En and Ie, reads as "Helper"): the id beside each name is what tells them apart.
    agents = {"agent-a": "About me (all agents)", "agent-b": "Helper", LONG_ID: "\u041d\u0435lper",
              f"{ALIKE}1": "Helper", f"{ALIKE}2": "Helper"}
    for agent_id, name in agents.items():
        local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": agent_id, "agent_name": name,
                                               "content_markdown": f"kept by {agent_id}"}).raise_for_status()
    open_console(browser, console_server, instance)
    buttons = browser.find_elements(By.CSS_SELECTOR, "nav .scopes button")
    shown = [b.text for b in buttons]
    assert len(set(shown)) == len(shown) == 6, shown  # "About me" and five agents, each reading differently
    for agent_id in agents:
        button = browser.find_element(By.CSS_SELECTOR, f"nav button[data-scope='agent:{agent_id}']")
        label = button.find_element(By.CSS_SELECTOR, ".agent-id")
        assert label.get_attribute("title") == agent_id  # the whole id, however long
        assert label.text.rstrip("\u2026") in agent_id and label.text.startswith(agent_id[:8])
        if agent_id.startswith(ALIKE):
            assert label.text == agent_id  # ids whose short forms are alike are shown whole
    long_label = browser.find_element(By.CSS_SELECTOR, f"nav button[data-scope='agent:{LONG_ID}'] .agent-id").text
    assert long_label.endswith("\u2026") and len(long_label) < len(LONG_ID)  # cut short in the list
    browser.find_element(By.CSS_SELECTOR, f"nav button[data-scope='agent:{LONG_ID}']").click()
    text_appears(browser, "#scope-title", "lper")
    assert LONG_ID[:8] in find(browser, "#scope-title").text  # the scope's heading names the id too
