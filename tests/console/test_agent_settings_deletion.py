"""An operator deletes an agent's settings from the console, in real headless Chromium.

The form's "Delete settings" asks first: cancelled, nothing is sent; confirmed, the settings are erased, the form
shows the defaults and the changes below it tell the deletion, the agent leaves the list of configured agents,
"Delete settings" is off (none are stored), and the agent's memory is as it was. An agent stored by an older release
under an id the input rule refuses is deleted and opened again the same way.

Bounded in time: every wait is explicit (10 s at most each).
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.test_operator import _open_operator
from tests.support.local_server import RunningServer

AGENT = "agent-decommissioned"
ODD_AGENT = "agent\u202e-old"  # an agent id the input rule refuses, stored by an older release
KEPT = "agent-kept"
DEFAULTS_SHOWN = ("const p = document.getElementById('set-policy'), e = document.getElementById('set-enabled');"
                  "return !!p && !!e && p.value === '' && e.checked;")
LISTED = "return [...document.querySelectorAll('#agents-table tr[data-agent]')].map((r) => r.dataset.agent);"


def test_an_operator_deletes_an_agents_settings_after_confirming(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
        operator_api: httpx.Client) -> None:
    local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": AGENT,
                                           "content_markdown": "- prefers aisle seats"}).raise_for_status()
    operator_api.put("/operator/agent-settings", params={"agentObjectId": AGENT},
                     json={"enabled": False, "policy_instructions": "Only travel."}).raise_for_status()
    _open_operator(browser, console_server, instance)
    find(browser, "#list-agents").click()
    find(browser, f'#agents-table tr[data-agent="{AGENT}"] button').click()
    wait_for(browser, lambda d: d.execute_script(
        "const p = document.getElementById('set-policy'); return !!p && p.value === 'Only travel.';"))
    wait_idle(browser)

    find(browser, "#delete-settings").click()
    dialog = find(browser, "dialog#confirm[open]")
    assert "Delete this agent's settings?" in dialog.text and AGENT in dialog.text
    assert "Its memory stays as it is." in dialog.text
    find(browser, "#confirm-cancel").click()
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog#confirm[open]"))
    assert operator_api.get("/operator/agent-settings", params={"agentObjectId": AGENT}).json()["enabled"] is False

    find(browser, "#delete-settings").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    status_says(browser, "Settings deleted: the agent has the defaults.")
    # The form was opened again: the defaults, and the deletion at the top of the changes.
    wait_for(browser, lambda d: d.execute_script(DEFAULTS_SHOWN))
    newest = text_appears(browser, "#settings-audit-table tbody tr", "Settings deleted")
    assert "enabled: false -> true; policy_instructions removed" in newest.text
    # No settings are stored now: nothing to delete, and the agent is no longer listed as configured.
    assert not find(browser, "#delete-settings").is_enabled()
    assert "No settings are stored for this agent" in find(browser, "#no-settings-stored").text
    assert find(browser, "#agents-table").text == "No agent has stored settings yet."
    assert operator_api.get("/operator/agents").json()["agents"] == []
    memory = local_api.get("/memory", params={"scope": "agent", "agentObjectId": AGENT})
    assert memory.status_code == 200 and "aisle seats" in memory.json()["content_markdown"]


def test_an_old_agents_settings_are_deleted_and_it_opens_again_with_the_defaults(
        browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client) -> None:
    """Its id holds a right-to-left override (U+202E). The deletion tells success only once the form shows the
    defaults (it used to say so over the erased settings, the reopening answered 400); its row leaves the list, the
    other agent's stays; "Delete settings" is off."""
    store = console_server.open_store()
    try:
        store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(ODD_AGENT),
                                AgentSettings(ODD_AGENT, enabled=False).to_data()))
    finally:
        store.close()
    operator_api.put("/operator/agent-settings", params={"agentObjectId": KEPT},
                     json={"enabled": False}).raise_for_status()
    _open_operator(browser, console_server, instance)
    find(browser, "#list-agents").click()
    wait_for(browser, lambda d: d.execute_script(LISTED) == [KEPT, ODD_AGENT] or None)
    rows = browser.find_elements(By.CSS_SELECTOR, "#agents-table tr[data-agent] button")
    rows[1].click()
    wait_for(browser, lambda d: d.execute_script(
        "const e = document.getElementById('set-enabled'); return !!e && !e.checked;"))
    wait_idle(browser)
    assert find(browser, "#delete-settings").is_enabled()

    find(browser, "#delete-settings").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    status_says(browser, "Settings deleted: the agent has the defaults.")
    wait_for(browser, lambda d: d.execute_script(DEFAULTS_SHOWN))
    text_appears(browser, "#settings-audit-table tbody tr", "Settings deleted")
    wait_idle(browser)
    assert "could not be opened again" not in find(browser, "#status").text
    assert not find(browser, "#delete-settings").is_enabled()
    assert browser.execute_script(LISTED) == [KEPT]
    assert [a["agent_object_id"] for a in operator_api.get("/operator/agents").json()["agents"]] == [KEPT]
