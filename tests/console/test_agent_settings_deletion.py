"""An operator deletes an agent's settings from the console, in real headless Chromium.

The form's "Delete settings" asks first: cancelled, nothing is sent; confirmed, the settings are erased, the form
shows the defaults and the changes below it tell the deletion, and the agent's memory is as it was.

Bounded in time: every wait is explicit (10 s at most each).
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.test_operator import _open_operator
from tests.support.local_server import RunningServer

AGENT = "agent-decommissioned"


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
    wait_for(browser, lambda d: d.execute_script(
        "const p = document.getElementById('set-policy'), e = document.getElementById('set-enabled');"
        "return !!p && !!e && p.value === '' && e.checked;"))
    newest = text_appears(browser, "#settings-audit-table tbody tr", "Settings deleted")
    assert "enabled: false -> true; policy_instructions removed" in newest.text
    assert operator_api.get("/operator/agents").json()["agents"] == []
    memory = local_api.get("/memory", params={"scope": "agent", "agentObjectId": AGENT})
    assert memory.status_code == 200 and "aisle seats" in memory.json()["content_markdown"]
