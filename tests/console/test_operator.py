"""An operator, in real headless Chromium, decides deletions, runs the sweep, reads audits, edits agent settings."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    Share,
    agent_hash,
)
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console, screenshot_dir
from tests.support.local_server import OPERATOR_KEY, RunningServer

AGENT = "agent-helpdesk-3"


def _open_operator(browser: WebDriver, server: RunningServer, instance: str, key: str | None = OPERATOR_KEY) -> None:
    open_console(browser, server, instance, operator_key=key)
    find(browser, "#tab-operator").click()  # waits: after a reload the tab comes with the restored sign-in
    find(browser, "#operator-key-form")
    wait_idle(browser)


def _row(browser: WebDriver, request_id: str):  # type: ignore[no-untyped-def]
    return find(browser, f'#deletions tr[data-request-id="{request_id}"]')


def _seed_requests(local_api: httpx.Client) -> tuple[str, str]:
    """The local user forgets one entry and clears an agent scope of two: two pending requests."""
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- keep me"}).raise_for_status()
    forget_me = local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- forget me"}).json()
    for text in ("- agent note one", "- agent note two"):
        local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": AGENT, "agent_name": "Helpdesk",
                                               "content_markdown": text}).raise_for_status()
    forget = local_api.delete(f"/memory/entries/{forget_me['entry_id']}")
    clear = local_api.post("/memory/clear", json={"scope": "agent", "agent_object_id": AGENT, "confirm": True})
    assert forget.status_code == clear.status_code == 202
    return forget.json()["request_id"], clear.json()["request_id"]


def test_an_operator_approves_and_rejects_then_sweeps(browser: WebDriver, console_server: RunningServer,
                                                      instance: str, local_api: httpx.Client,
                                                      operator_api: httpx.Client) -> None:
    forget_id, clear_id = _seed_requests(local_api)
    _open_operator(browser, console_server, instance)

    forget_row, clear_row = _row(browser, forget_id), _row(browser, clear_id)
    assert "local@localhost" in forget_row.text and "forget user" in forget_row.text
    cells = [c.text for c in clear_row.find_elements(By.TAG_NAME, "td")]
    assert cells[0] == "local@localhost" and cells[3] == f"clear agent ({AGENT})" and cells[4] == "2"
    assert forget_row.find_elements(By.TAG_NAME, "td")[4].text == "1"
    browser.save_screenshot(str(screenshot_dir() / "console-operator.png"))

    # approve the forget
    forget_row.find_element(By.XPATH, ".//button[text()='Approve']").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    status_says(browser, "Approved")
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f'tr[data-request-id="{forget_id}"]'))
    wait_idle(browser)

    # reject the clear, with a reason (required)
    _row(browser, clear_id).find_element(By.XPATH, ".//button[text()='Reject']").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()  # no reason yet: the dialog stays
    assert browser.find_element(By.ID, "confirm").get_attribute("open") is not None
    find(browser, "#reject-reason").send_keys("the user asked to keep it after all")
    browser.find_element(By.ID, "confirm-ok").click()
    status_says(browser, "Rejected")
    find(browser, "#no-deletions")
    wait_idle(browser)
    rejected = operator_api.get("/operator/deletions", params={"status": "rejected"}).json()["requests"]
    assert [(r["id"], r["reason"]) for r in rejected] == [(clear_id, "the user asked to keep it after all")]
    agent_entries = local_api.get("/memory/entries", params={"scope": "agent", "agentObjectId": AGENT}).json()
    assert len(agent_entries["entries"]) == 2  # rejected: the memory shows again

    # the sweep erases the approved one and says so
    find(browser, "#run-sweep").click()
    result = text_appears(browser, "#sweep-result", "executed 1 request")
    assert "erased 1 entry" in result.text
    executed = operator_api.get("/operator/deletions", params={"status": "executed"}).json()["requests"]
    assert [r["id"] for r in executed] == [forget_id]

    # the listing of decided requests shows who decided and why
    from selenium.webdriver.support.select import Select
    Select(find(browser, "#deletion-status")).select_by_value("rejected")
    row = _row(browser, clear_id)
    assert "operator-key" in row.text and "keep it after all" in row.text

    # the audit trail of the user
    wait_idle(browser)
    find(browser, "#audit-upn").send_keys("local@localhost")
    browser.find_element(By.XPATH, "//button[text()='Show audit trail']").click()
    audit = find(browser, "#operator-audit-table")
    for action in ("Asked to forget", "Asked to clear", "Deletion approved", "Deletion rejected", "Deletion carried out"):
        assert action in audit.text


def test_a_decision_another_operator_made_first_is_reported_and_the_stale_row_stops_offering_it(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
    operator_api: httpx.Client,
) -> None:
    """Another tab approves the request while this one shows it pending: this tab's Reject gets 409, says why, and
    reads the list again, rather than keep showing the request as pending with Approve and Reject."""
    forget_id, clear_id = _seed_requests(local_api)
    _open_operator(browser, console_server, instance)
    _row(browser, forget_id)
    operator_api.post(f"/operator/deletions/{forget_id}/approve").raise_for_status()

    _row(browser, forget_id).find_element(By.XPATH, ".//button[text()='Reject']").click()
    find(browser, "#reject-reason").send_keys("keep it")
    browser.find_element(By.ID, "confirm-ok").click()
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f'tr[data-request-id="{forget_id}"]'))
    assert "pending" in find(browser, "#status").text  # the service's reason: the request is no longer pending
    assert _row(browser, clear_id).find_elements(By.XPATH, ".//button[text()='Approve']")


def test_a_decision_on_a_request_that_is_gone_reads_the_list_again_instead_of_offering_it_still(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    """The request this tab shows as pending is gone by the time the operator approves it (another tab decided it
    and it was removed; here the test removes its record from the server's store): the API answers 404. The tab
    reads the list again, so the row that no longer exists stops offering a decision, and the status line says
    why nothing was approved, not that the service failed."""
    started = time.monotonic()
    forget_id, clear_id = _seed_requests(local_api)
    _open_operator(browser, console_server, instance)
    _row(browser, forget_id)
    store = console_server.open_store()
    try:
        partition = deletions_partition(instance)
        [record] = store.query_records(partition, RecordKind.DELETION_REQUEST, {"id": forget_id}, limit=1)
        assert store.delete_record(partition, RecordKind.DELETION_REQUEST, record.id)
    finally:
        store.close()

    _row(browser, forget_id).find_element(By.XPATH, ".//button[text()='Approve']").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f'tr[data-request-id="{forget_id}"]'))
    status = find(browser, "#status").text
    assert f"no deletion request {forget_id}" in status and "could not be reached" not in status
    assert "Approved" not in status
    assert _row(browser, clear_id).find_elements(By.XPATH, ".//button[text()='Approve']")  # the others still offered
    assert time.monotonic() - started < 30


def test_a_request_this_release_cannot_read_is_listed_apart_and_the_others_stay_decidable(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    """A pending request of a kind this release does not know (stored by a later release) sits among the pending
    ones: the view still opens (before, the listing answered 500 and the tab showed only the error), the readable
    requests keep their rows and decisions, and a note names the other with its kind, user and why, offering no
    decision, only its dismissal (test_operator_dismiss.py)."""
    forget_id, clear_id = _seed_requests(local_api)
    data = {"id": "of-a-later-kind", "instance_id": instance, "upn": "later@contoso.com", "kind": "archive",
            "status": "pending", "requested_by": "later@contoso.com", "requested_on": "2026-01-01T00:00:00+00:00"}
    store = console_server.open_store()
    try:
        store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST,
                                "2026-01-01T00:00:00.000000Z~of-a-later-kind", data))
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    assert _row(browser, forget_id).find_elements(By.XPATH, ".//button[text()='Approve']")
    assert _row(browser, clear_id).find_elements(By.XPATH, ".//button[text()='Approve']")
    note = find(browser, "#unreadable-deletions")
    assert "One stored deletion request cannot be read by this release" in note.text
    assert "operator dismiss <id>" in note.text  # the CLI's way out is named beside the button
    (item,) = note.find_elements(By.CSS_SELECTOR, 'li[data-request-id="of-a-later-kind"]')
    assert "archive" in item.text and "pending" in item.text and "later@contoso.com" in item.text
    assert [b.text for b in note.find_elements(By.TAG_NAME, "button")] == ["Dismiss"]  # no Approve or Reject
    assert not browser.find_elements(By.CSS_SELECTOR, '#deletions tr[data-request-id="of-a-later-kind"]')


def test_a_long_unbroken_agent_id_keeps_the_buttons_on_the_page(browser: WebDriver, console_server: RunningServer,
                                                                 instance: str, local_api: httpx.Client) -> None:
    """An agent id may be 1,024 characters with no space: its cell wraps, and Approve stays within the page (it
    was at x = 10,678 of a 10,783-pixel-wide page)."""
    agent = "agent-" + "x" * 1018
    local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": agent,
                                           "content_markdown": "- a fact"}).raise_for_status()
    local_api.post("/memory/clear", json={"scope": "agent", "agent_object_id": agent, "confirm": True})
    _open_operator(browser, console_server, instance)
    approve = find(browser, "tr[data-request-id] button")
    width = browser.execute_script("return window.innerWidth")
    assert browser.execute_script("return document.documentElement.scrollWidth") <= width
    assert approve.location["x"] + approve.size["width"] <= width


def test_an_operator_edits_agent_settings(browser: WebDriver, console_server: RunningServer, instance: str,
                                          operator_api: httpx.Client) -> None:
    _open_operator(browser, console_server, instance)
    find(browser, "#settings-agent").send_keys(AGENT)
    browser.find_element(By.XPATH, "//button[text()='Load settings']").click()
    enabled = find(browser, "#set-enabled")
    assert enabled.is_selected()
    assert find(browser, "#settings-changes").text.endswith("No changes recorded yet.")
    enabled.click()
    browser.find_element(By.ID, "set-policy").send_keys("Only remember travel preferences.")
    browser.find_element(By.ID, "set-groups").send_keys("group-a, group-b")
    browser.find_element(By.CSS_SELECTOR, "#settings-form button[type=submit]").click()
    status_says(browser, "Settings saved.")
    text_appears(browser, "#settings-audit-table", "Settings changed")
    change = find(browser, "#settings-audit-table tbody tr").text
    assert "operator-key" in change
    assert "enabled: true -> false; policy_instructions set; allowed_group_ids: any group -> \"group-a\", \"group-b\"" in change
    saved = operator_api.get("/operator/agent-settings", params={"agentObjectId": AGENT}).json()
    assert saved["enabled"] is False
    assert saved["policy_instructions"] == "Only remember travel preferences."
    assert saved["allowed_group_ids"] == ["group-a", "group-b"]


def test_instructions_holding_a_secret_are_refused_with_the_reason_shown(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client
) -> None:
    """Saving instructions that hold a token shows the service's refusal, not "Settings saved."; nothing is stored."""
    agent = f"{AGENT}-refused"
    _open_operator(browser, console_server, instance)
    find(browser, "#settings-agent").send_keys(agent)
    browser.find_element(By.XPATH, "//button[text()='Load settings']").click()
    find(browser, "#set-policy").send_keys("Call the weather API with ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2)
    browser.find_element(By.CSS_SELECTOR, "#settings-form button[type=submit]").click()
    status_says(browser, "policy_instructions looks like it contains a secret")
    saved = operator_api.get("/operator/agent-settings", params={"agentObjectId": agent}).json()
    assert saved["policy_instructions"] is None


def test_a_rejection_reason_holding_a_secret_is_refused_with_the_reason_shown(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
    operator_api: httpx.Client,
) -> None:
    """Rejecting with a token in the reason shows the service's refusal, not "Rejected."; the request stays
    pending and listed."""
    forget_id, _ = _seed_requests(local_api)
    _open_operator(browser, console_server, instance)
    _row(browser, forget_id).find_element(By.XPATH, ".//button[text()='Reject']").click()
    find(browser, "#reject-reason").send_keys("user re-sent ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2)
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    status_says(browser, "reason looks like it contains a secret")
    pending = operator_api.get("/operator/deletions", params={"status": "pending"}).json()["requests"]
    assert forget_id in [r["id"] for r in pending]
    assert _row(browser, forget_id).is_displayed()


def test_stored_instructions_holding_a_secret_are_flagged_in_the_form(
    browser: WebDriver, console_server: RunningServer, instance: str
) -> None:
    """Instructions stored before the screen, holding a token: the settings form says models do not receive them;
    saving clean instructions removes the notice."""
    agent = f"{AGENT}-withheld"
    store = console_server.open_store()
    try:
        store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(agent), AgentSettings(
            agent, policy_instructions="Use token ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2).to_data()))
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    find(browser, "#settings-agent").send_keys(agent)
    browser.find_element(By.XPATH, "//button[text()='Load settings']").click()
    assert "Models do not receive them" in find(browser, "#policy-withheld").text
    policy = find(browser, "#set-policy")
    policy.clear()
    policy.send_keys("Only travel preferences.")
    browser.find_element(By.CSS_SELECTOR, "#settings-form button[type=submit]").click()
    status_says(browser, "Settings saved.")
    browser.find_element(By.XPATH, "//button[text()='Load settings']").click()
    # One script reads the reloaded form at once: the form is replaced while it loads.
    wait_for(browser, lambda d: d.execute_script(
        "const p = document.getElementById('set-policy');"
        "return !!p && p.value === 'Only travel preferences.' && !document.getElementById('policy-withheld');"))


def test_an_operator_lists_the_configured_agents_and_opens_one(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client
) -> None:
    """The list shows each agent with stored settings, sorted by agent id (the API pages them in another order),
    flags withheld instructions, and opens an agent's form."""
    operator_api.put("/operator/agent-settings", params={"agentObjectId": "agent-travel"},
                     json={"auto_append": True, "policy_instructions": "Only travel."}).raise_for_status()
    for other in ("agent-b", "agent-a9", "agent-a10"):
        operator_api.put("/operator/agent-settings", params={"agentObjectId": other}, json={}).raise_for_status()
    store = console_server.open_store()
    try:
        store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash("agent-old"),
                                AgentSettings("agent-old", policy_instructions="token ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
                                              ).to_data()))
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    find(browser, "#list-agents").click()
    old = find(browser, '#agents-table tr[data-agent="agent-old"]')
    travel = find(browser, '#agents-table tr[data-agent="agent-travel"]')
    assert "withheld" in old.text and "ghp_" not in find(browser, "#agents-table").text
    shown = [row.get_attribute("data-agent")
             for row in browser.find_elements(By.CSS_SELECTOR, "#agents-table tbody tr")]
    assert shown == ["agent-a10", "agent-a9", "agent-b", "agent-old", "agent-travel"]
    assert [s["agent_object_id"] for s in operator_api.get("/operator/agents").json()["agents"]] != shown
    assert "yes" in travel.text and "set" in travel.text
    travel.find_element(By.TAG_NAME, "button").click()
    wait_for(browser, lambda d: d.execute_script(
        "const p = document.getElementById('set-policy'); return !!p && p.value === 'Only travel.';"))


def test_an_operator_reads_the_legacy_import_trail(browser: WebDriver, console_server: RunningServer, instance: str,
                                                   operator_api: httpx.Client) -> None:
    """The legacy section lists each legacy import and each one refused for a secret, newest first, with the
    operator, scope and agent; never the text."""
    operator_api.post("/operator/legacy-imports", json={"scope": "user", "content_markdown": "- prefers tea"}
                      ).raise_for_status()
    operator_api.post("/operator/legacy-imports", json={"scope": "agent", "agent_object_id": AGENT,
                                                        "content_markdown": "- uses the helpdesk portal"}
                      ).raise_for_status()
    assert operator_api.post("/operator/legacy-imports", json={
        "scope": "user", "content_markdown": "- token ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2}).status_code == 422
    _open_operator(browser, console_server, instance)
    find(browser, "#show-legacy-imports").click()
    table = text_appears(browser, "#legacy-audit-table", "Write refused")
    rows = [r.text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert len(rows) == 3
    assert "Write refused" in rows[0] and "operator-key" in rows[0] and "secret_detected" in rows[0]
    assert "Imported" in rows[1] and AGENT in rows[1] and "Imported" in rows[2] and "user" in rows[2]
    assert "tea" not in table.text and "helpdesk portal" not in table.text and "ghp_" not in table.text


def test_without_an_operator_credential_the_operator_view_says_what_opens_it(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    _open_operator(browser, console_server, instance, key=None)
    refused = find(browser, "#operator-refused")
    assert "operator key" in refused.text and "Memory.Operator" in refused.text
    assert not browser.find_elements(By.ID, "deletions")
    _open_operator(browser, console_server, instance, key="not-the-key")
    assert "invalid API key" in find(browser, "#operator-refused").text


def test_an_operator_scans_for_hidden_text_and_asks_to_forget_a_finding(
    browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client,
) -> None:
    """Entries stored with tag characters before writes were screened (written to the store as that version did):
    the scan lists each with its user, field and first character, never the text, and a legacy one without a
    forget; asking to forget one files a pending forget that the deletion requests then show. The findings stay
    on the redrawn view, the forgotten one marked, and after a reload too; another instance does not show them."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = console_server.open_store()
    try:
        for owner, share in (("alex@contoso.com", Share.PRIVATE), (SHARED_OWNER, Share.LEGACY)):
            key = ProfileKey(instance, owner, Scope.USER)
            entry = MemoryEntry(f"hidden-{share.value}", key, "- prefers tea" + hidden, EntryKind.APPEND,
                                datetime(2026, 1, 1, tzinfo=UTC), "" if owner == SHARED_OWNER else owner, share=share)
            store.append(MemoryProfile(key, None, None, None, entry.created_on, entry.created_on), entry)
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    find(browser, "#scan-hidden-text").click()
    text_appears(browser, "#hidden-text-summary", "2 entries hold hidden text")
    table = find(browser, "#hidden-text-table")
    rows = [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
            for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert [r[:5] for r in rows] == [["alex@contoso.com", "hidden-private", "user", "content", "U+E006F"],
                                     ["(legacy)", "hidden-legacy", "user", "content", "U+E006F"]]
    assert rows[1][6] == "legacy: never changed"
    assert "tea" not in table.text and hidden[0] not in browser.page_source
    table.find_element(By.XPATH, ".//button[text()='Ask to forget']").click()
    find(browser, "dialog#confirm[open] #confirm-ok").click()
    status_says(browser, "Forget requested")
    wait_idle(browser)
    pending = operator_api.get("/operator/deletions", params={"status": "pending"}).json()["requests"]
    assert [(r["kind"], r["upn"], r["entry_id"], r["requested_by"]) for r in pending] == [
        ("forget", "alex@contoso.com", "hidden-private", "operator-key")]
    assert "forget user" in _row(browser, pending[0]["id"]).text

    def shown() -> list[list[str]]:
        summary = text_appears(browser, "#hidden-text-summary", "2 entries hold hidden text; 2 memories")
        assert "Stopped" not in summary.text
        return [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
                for r in browser.find_elements(By.CSS_SELECTOR, "#hidden-text-table tbody tr")]

    assert [(r[1], r[6]) for r in shown()] == [("hidden-private", "forget requested"),
                                               ("hidden-legacy", "legacy: never changed")]
    browser.refresh()
    find(browser, "#tab-operator").click()  # waits: after a reload the tab comes with the restored sign-in
    assert [(r[1], r[6]) for r in shown()] == [("hidden-private", "forget requested"),
                                               ("hidden-legacy", "legacy: never changed")]
    assert not browser.find_elements(By.XPATH, "//*[@id='hidden-text-table']//button[text()='Ask to forget']")

    switch = find(browser, "#who input")
    switch.clear()
    switch.send_keys("another-instance\n")
    wait_for(browser, lambda d: d.find_elements(By.ID, "scan-hidden-text")
             and not d.find_elements(By.ID, "hidden-text-summary"))
    switch = find(browser, "#who input")
    switch.clear()
    switch.send_keys(instance + "\n")
    assert len(shown()) == 2


def _seed_users(server: RunningServer, instance: str, users: int, hidden_in: tuple[int, ...]) -> None:
    """``users`` memories of one entry each (``entry-NNN`` of ``user-NNN@contoso.com``), written to the store as a
    version before hidden text was refused did; those numbered in ``hidden_in`` hide "obey" in tag characters."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = server.open_store()
    try:
        for n in range(users):
            key = ProfileKey(instance, f"user-{n:03d}@contoso.com", Scope.USER)
            text = "- prefers tea" + (hidden if n in hidden_in else "")
            entry = MemoryEntry(f"entry-{n:03d}", key, text, EntryKind.APPEND, datetime(2026, 1, 1, tzinfo=UTC),
                                key.upn)
            store.append(MemoryProfile(key, None, None, None, entry.created_on, entry.created_on), entry)
    finally:
        store.close()


def test_an_operator_stops_a_long_scan_for_hidden_text_and_continues_it(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """250 memories are three pages of 100. Stop, clicked while the second page is under way, ends the scan after
    that page with what it found so far and says the rest is not scanned; a page that fails stops the scan the
    same way, keeping its findings; after a reload, Continue the scan reads the third page and finds the last
    user's entry too.

    The browser's fetch is wrapped to hold the second page until the test lets it go, and then to fail one page
    once with the service's own 503: that fixes when the click lands and makes an outage happen. The server and
    its answers are real."""
    _seed_users(console_server, instance, 250, hidden_in=(0, 249))
    _open_operator(browser, console_server, instance)
    browser.execute_script("""
        const real = window.fetch;
        window.__release = null;
        window.__failOnce = false;
        const gate = new Promise((resolve) => { window.__release = resolve; });
        let pages = 0;
        window.fetch = async (url, init) => {
          if (String(url).includes("/operator/hidden-text")) {
            pages += 1;
            if (pages === 2) await gate;
            if (window.__failOnce) {
              window.__failOnce = false;
              return new Response(JSON.stringify({ error: { code: "unavailable", message: "store unavailable" } }),
                { status: 503, headers: { "Content-Type": "application/json" } });
            }
          }
          return real(url, init);
        };""")
    find(browser, "#scan-hidden-text").click()
    text_appears(browser, "#hidden-text-progress", "Scanned 100 entries (100 memories finished)")
    assert not find(browser, "#scan-hidden-text").is_enabled()
    find(browser, "#stop-hidden-text").click()
    assert "Stopping after this page." in find(browser, "#hidden-text-progress").text
    assert not find(browser, "#stop-hidden-text").is_enabled()
    browser.execute_script("window.__release()")
    text_appears(browser, "#hidden-text-summary",
                 "Stopped: 1 entry holds hidden text in the 200 entries (200 memories finished) scanned so far; "
                 "the rest is not scanned yet.")
    assert [r.get_attribute("data-entry") for r in browser.find_elements(By.CSS_SELECTOR, "#hidden-text-table tbody tr")
            ] == ["entry-000"]

    browser.execute_script("window.__failOnce = true")
    find(browser, "#continue-hidden-text").click()
    status_says(browser, "store unavailable")
    text_appears(browser, "#hidden-text-summary", "Stopped: 1 entry holds hidden text in the 200 entries")

    # A reload keeps where the scan stopped and what it found; Continue goes on from there.
    browser.refresh()
    find(browser, "#tab-operator").click()  # waits: after a reload the tab comes with the restored sign-in
    text_appears(browser, "#hidden-text-summary", "Stopped: 1 entry holds hidden text in the 200 entries")
    find(browser, "#continue-hidden-text").click()
    text_appears(browser, "#hidden-text-summary", "2 entries hold hidden text; 250 memories (250 entries) scanned.")
    assert not browser.find_elements(By.ID, "continue-hidden-text")
    assert [r.get_attribute("data-entry") for r in browser.find_elements(By.CSS_SELECTOR, "#hidden-text-table tbody tr")
            ] == ["entry-000", "entry-249"]
    assert find(browser, "#scan-hidden-text").is_enabled()


def test_switching_instance_stops_a_scan_and_keeps_it_for_its_own_instance(
    browser: WebDriver, console_server: RunningServer, instance: str,
) -> None:
    """A scan runs for the instance it started on: switched to another while a page is under way, the console
    shows that other instance no progress and no findings, asks it for no page, and stops the scan after the
    page; switched back, the scan shows where it stopped, and Continue finishes it.

    The browser's fetch is wrapped to hold the first page until the test lets it go, and to count the pages
    asked; the server and its answers are real."""
    _seed_users(console_server, instance, 150, hidden_in=(0, 149))
    _open_operator(browser, console_server, instance)
    browser.execute_script("""
        const real = window.fetch;
        const gate = new Promise((resolve) => { window.__release = resolve; });
        window.__pages = 0;
        window.fetch = async (url, init) => {
          if (String(url).includes("/operator/hidden-text")) {
            window.__pages += 1;
            if (window.__pages === 1) await gate;
          }
          return real(url, init);
        };""")
    find(browser, "#scan-hidden-text").click()
    find(browser, "#hidden-text-progress")
    switch = find(browser, "#who input")
    switch.clear()
    switch.send_keys("another-instance\n")
    wait_for(browser, lambda d: d.find_elements(By.ID, "scan-hidden-text")
             and not d.find_element(By.ID, "scan-hidden-text").is_enabled())
    assert browser.find_element(By.ID, "hidden-text").text == ""
    browser.execute_script("window.__release()")
    wait_for(browser, lambda d: d.find_element(By.ID, "scan-hidden-text").is_enabled())
    wait_idle(browser)
    assert browser.execute_script("return window.__pages") == 1
    assert browser.find_element(By.ID, "hidden-text").text == ""

    switch = find(browser, "#who input")
    switch.clear()
    switch.send_keys(instance + "\n")
    text_appears(browser, "#hidden-text-summary", "Stopped: 1 entry holds hidden text in the 100 entries "
                                                  "(100 memories finished) scanned so far")
    find(browser, "#continue-hidden-text").click()
    text_appears(browser, "#hidden-text-summary", "2 entries hold hidden text; 150 memories (150 entries) scanned.")
    assert browser.execute_script("return window.__pages") == 2
