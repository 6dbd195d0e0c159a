"""An agent whose settings were stored before agent and group IDs were held to their rule opens in the operator's
view, in real headless Chromium.

Its ID and a group each hold a right-to-left override (U+202E), as an older release could store them. The list of
configured agents used to fail whole (the API answered 500), and the agent could not be opened (400). Now the list
shows it, choosing it loads its form and its changes, and saving it without the refused group stores the settings
(sending that group back is refused, as any input holding it is: ``tests/api/test_stored_agent_settings_http.py``).

An agent stored with spaces around its ID opens from the list by exactly that ID, not the trimmed one (another
agent), and shows its spaces marked.

Bounded in time: every wait is explicit (10 s at most each).
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from tests.console.browser import find, status_says, wait_idle
from tests.console.test_operator import _open_operator
from tests.support.local_server import RunningServer

RLO = "\u202e"
AGENT = f"agent{RLO}-old"


def test_an_agent_stored_before_the_rule_is_listed_opened_and_saved(
        browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client) -> None:
    store = console_server.open_store()
    try:
        store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(AGENT),
                                AgentSettings(AGENT, allowed_group_ids=(f"g-{RLO}old",)).to_data()))
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    find(browser, "#list-agents").click()
    row = find(browser, "#agents-table tbody tr")
    assert row.find_elements(By.TAG_NAME, "td")[0].text == "agentU+202E-old"
    wait_idle(browser)
    row.find_element(By.TAG_NAME, "button").click()

    form = find(browser, "#settings-form")
    assert form.find_element(By.TAG_NAME, "h3").text == "Settings of agentU+202E-old"
    assert find(browser, "#settings-changes").text.endswith("No changes recorded yet.")
    find(browser, "#set-enabled").click()
    find(browser, "#set-groups").clear()
    find(browser, "#set-groups").send_keys("g-new")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    status_says(browser, "Settings saved.")
    saved = operator_api.get("/operator/agent-settings", params={"agentObjectId": AGENT}).json()
    assert (saved["enabled"], saved["allowed_group_ids"]) == (False, ["g-new"])


SPACED = "  agent-spaced "  # stored by an older release; the API's rule refuses surrounding space in new ids


def test_an_agent_id_with_surrounding_spaces_opens_as_stored_and_shows_its_spaces(
        browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client) -> None:
    """The list opens exactly the stored id, not its trimmed twin (whose settings differ), shows the id's spaces
    marked (one mark a space), and saving changes the spaced agent's settings and trail, not the twin's."""
    store = console_server.open_store()
    try:
        store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(SPACED),
                                AgentSettings(SPACED, policy_instructions="Spaced rules.").to_data()))
    finally:
        store.close()
    operator_api.put("/operator/agent-settings", params={"agentObjectId": SPACED.strip()},
                     json={"policy_instructions": "Twin rules."}).raise_for_status()
    _open_operator(browser, console_server, instance)
    find(browser, "#list-agents").click()
    row = find(browser, f'#agents-table tr[data-agent="{SPACED}"]')
    assert row.find_elements(By.TAG_NAME, "td")[0].text == "\u2423\u2423agent-spaced\u2423"
    wait_idle(browser)
    row.find_element(By.TAG_NAME, "button").click()

    form = find(browser, "#settings-form")
    assert form.find_element(By.TAG_NAME, "h3").text == "Settings of \u2423\u2423agent-spaced\u2423"
    assert find(browser, "#set-policy").get_attribute("value") == "Spaced rules."
    find(browser, "#set-enabled").click()
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    status_says(browser, "Settings saved.")
    spaced = operator_api.get("/operator/agent-settings", params={"agentObjectId": SPACED}).json()
    twin = operator_api.get("/operator/agent-settings", params={"agentObjectId": SPACED.strip()}).json()
    assert (spaced["enabled"], spaced["policy_instructions"]) == (False, "Spaced rules.")
    assert (twin["enabled"], twin["policy_instructions"]) == (True, "Twin rules.")
    assert "enabled: true -> false" in find(browser, "#settings-changes").text
