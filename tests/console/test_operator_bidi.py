"""What others stored reorders nothing in the operator's view.

A UPN, an agent's ID, a decision's reason, a group ID or an audit event's detail is stored by others, some of it
before hidden text was refused. The operator's view put each into the words it builds around it ("clear agent
(…) for <upn>, asked …", "<decided by>, <time> — <reason>", "<kind>, <status>, <upn>: <why>"), so a right-to-left
override (U+202E) left open in one showed the rest of the line backwards: "Duplicate request" read "tseuqer
etacilpuD", and the reason for a refusal sat before the user it named. The view now isolates each such text
(``<bdi>``) and marks its invisible characters as the person's view marks an entry's, and isolates it (U+2068 …
U+2069) inside the names of buttons and the confirmation dialog's text, its bidirectional controls written there as
code points ("U+202E"), so that a U+2069 of its own cannot close the isolate early.

Where the words are drawn is measured in the browser: each must come after the one before it in reading order
(below it, or on its line and to its right).

Bounded in time: every wait is explicit (10 s at most each).
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.select import Select

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.audit import AuditAction, AuditEvent
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, agent_hash
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from tests.console.browser import find, text_appears, wait_for, wait_idle
from tests.console.test_operator import _open_operator
from tests.support.local_server import RunningServer

RLO = "\u202e"
PDI = "\u2069"
MALLORY = f"mallory{RLO}@contoso.com"  # an override left open, stored before the rule
MALLORY_SHOWN = "malloryU+202E@contoso.com"  # as a string the view builds shows it
AT = datetime(2026, 1, 1, tzinfo=UTC)
HEBREW = "\u05e7\u05d1\u05d5\u05e6\u05d4"  # a group named in right-to-left letters, as a write accepts

# Where each of ``arguments[1]`` (words) is first drawn inside ``arguments[0]``: [top, left] of each, or null when
# one is not there.
_PLACES = """
const [root, words] = arguments;
const places = [];
for (const word of words) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let node = walker.nextNode();
  while (node && !node.data.includes(word)) node = walker.nextNode();
  if (!node) return null;
  const range = document.createRange();
  const at = node.data.indexOf(word);
  range.setStart(node, at);
  range.setEnd(node, at + word.length);
  const box = range.getBoundingClientRect();
  places.push([box.top, box.left]);
}
return places;
"""


def _in_reading_order(driver: WebDriver, where: WebElement, *words: str) -> None:
    """Each of ``words`` is drawn after the one before it: on a lower line, or on its line and to its right."""
    places = driver.execute_script(_PLACES, where, list(words))
    assert places is not None, (where.text, words)
    for (top_a, left_a), (top_b, left_b) in pairwise(places):
        assert top_b > top_a + 4 or (abs(top_b - top_a) <= 4 and left_b > left_a), (where.text, words, places)


def _marked(where: WebElement) -> list[str]:
    return [m.text for m in where.find_elements(By.CSS_SELECTOR, ".invisible-char")]


def _seed_requests(server: RunningServer, instance: str) -> None:
    """A pending clear of an agent's scope for a UPN holding an override, and a rejected forget whose operator and
    reason hold one; and a request of a kind this release does not read, for that UPN."""
    pending = DeletionRequest("req-rlo", instance, MALLORY, DeletionKind.CLEAR, DeletionStatus.PENDING, MALLORY, AT,
                              scope="agent", agent_object_id=f"agent{PDI}{RLO}-rlo")
    rejected = DeletionRequest("req-rejected", instance, "bob@contoso.com", DeletionKind.FORGET,
                               DeletionStatus.REJECTED, "bob@contoso.com", AT, scope="user", entry_id="e-1",
                               decided_by=f"op{RLO}@contoso.com", decided_on=AT, reason=f"{RLO}Duplicate request")
    later = Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, "2026-01-02T00:00:00.000000Z~later",
                   {"id": "later", "instance_id": instance, "upn": MALLORY, "kind": "archive", "status": "pending",
                    "requested_by": MALLORY, "requested_on": "2026-01-02T00:00:00+00:00"})
    store = server.open_store()
    try:
        store.put_records([pending.to_record(), rejected.to_record(), later])
    finally:
        store.close()


def test_an_override_in_a_stored_request_reorders_nothing_around_it(
        browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    _seed_requests(console_server, instance)
    _open_operator(browser, console_server, instance)
    row = find(browser, '#deletions tr[data-request-id="req-rlo"]')

    # The UPN and the agent's ID show their override as a marked code point, in the order they are stored.
    cells = row.find_elements(By.TAG_NAME, "td")
    assert cells[0].text == "malloryU+202E@contoso.com" and _marked(cells[0]) == ["U+202E"]
    assert cells[3].text == "clear agent (agentU+2069 U+202E-rlo)"
    # Each button's name isolates the UPN and the agent's ID: "for" and "asked" stay where they are. Their
    # bidirectional controls are written as code points: the agent ID's own U+2069 cannot close its isolate early
    # and leave its override open over the rest of the name.
    approve = row.find_element(By.CSS_SELECTOR, "button.primary").get_attribute("aria-label")
    assert approve.startswith("Approve clear \u2068agent\u2069 (\u2068agentU+2069 U+202E-rlo\u2069)"
                              f" for \u2068{MALLORY_SHOWN}\u2069, asked "), approve

    # The note of a request this release cannot read: why, after the UPN, still reads forwards.
    note = find(browser, '#unreadable-deletions li[data-request-id="later"]')
    assert _marked(note) == ["U+202E"]
    _in_reading_order(browser, note, "mallory", "@contoso.com", "cannot", "be read", "release")
    # Its Dismiss names it with each stored text isolated, and its dialog reads forwards after the UPN.
    dismiss = note.find_element(By.CSS_SELECTOR, "button.dismiss")
    assert dismiss.get_attribute("aria-label") == ("Dismiss \u2068later\u2069 (stored as \u2068archive\u2069, "
                                                   f"\u2068pending\u2069, for \u2068{MALLORY_SHOWN}\u2069)")
    dismiss.click()
    _in_reading_order(browser, find(browser, "dialog#confirm[open] #confirm-text"), "contoso.com", "cannot", "be read")
    find(browser, "#confirm-cancel").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)

    # The dialog's text isolates the UPN: "memory shows again" is not drawn backwards before it.
    row.find_element(By.CSS_SELECTOR, "button.danger").click()
    text = find(browser, "dialog#confirm[open] #confirm-text")
    assert text.get_attribute("textContent") == f"\u2068{MALLORY_SHOWN}\u2069's memory shows again."
    _in_reading_order(browser, text, "memory", "shows", "again")
    find(browser, "#confirm-cancel").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)

    # A decided request: who decided, when, and why, in that order.
    Select(find(browser, "#deletion-status")).select_by_value("all")
    decided = find(browser, '#deletions tr[data-request-id="req-rejected"]').find_elements(By.TAG_NAME, "td")[6]
    assert _marked(decided) == ["U+202E", "U+202E"]
    _in_reading_order(browser, decided, "@contoso.com", "Duplicate", "request")


def test_the_sweep_lists_a_request_for_a_upn_with_an_override_in_order(
        browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    """An approved purge of a UPN holding an override (filed before a purge's UPN was screened): the sweep's line
    for it reads forwards."""
    purge = DeletionRequest("purge-rlo", instance, MALLORY, DeletionKind.PURGE, DeletionStatus.APPROVED,
                            "operator-key", AT, decided_by="operator-key", decided_on=AT)
    store = console_server.open_store()
    try:
        store.put_records([purge.to_record()])
    finally:
        store.close()
    _open_operator(browser, console_server, instance)
    find(browser, "#run-sweep").click()
    result = text_appears(browser, "#sweep-result", "executed 1 request")
    (item,) = result.find_elements(By.CSS_SELECTOR, "li")
    assert item.text == "purge for malloryU+202E@contoso.com: 0 entries" and _marked(item) == ["U+202E"]
    _in_reading_order(browser, item, "purge", "mallory", "@contoso.com", "0 entries")


def test_an_override_in_an_audit_event_an_agents_settings_or_a_finding_reorders_nothing(
        browser: WebDriver, console_server: RunningServer, instance: str) -> None:
    """An audit event whose operator and detail hold an override; an agent whose ID does, with a group named in
    Hebrew; an entry with hidden text in the memory of a UPN holding an override."""
    agent = f"agent{RLO}-x"
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    key = ProfileKey(instance, MALLORY, Scope.USER)
    event = AuditEvent(AT, f"op{RLO}@contoso.com", AuditAction.DELETION_REJECTED, instance, "bob@contoso.com",
                       scope="user", detail=f"reason: {RLO}Duplicate request")
    store = console_server.open_store()
    try:
        store.put_record(
            Record(Partition(instance, "bob@contoso.com"), RecordKind.AUDIT, f"{AT.isoformat()}~rlo", event.to_data()))
        store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(agent),
                                AgentSettings(agent, allowed_group_ids=(f"{HEBREW}1", "2")).to_data()))
        store.append(MemoryProfile(key, None, None, None, AT, AT),
                     MemoryEntry("entry-rlo", key, "- prefers tea" + hidden, EntryKind.APPEND, AT, key.upn))
    finally:
        store.close()
    _open_operator(browser, console_server, instance)

    # The audit trail: the operator and the detail are marked, and the reason reads forwards.
    find(browser, "#audit-upn").send_keys("bob@contoso.com")
    browser.find_element(By.XPATH, "//button[text()='Show audit trail']").click()
    (audit,) = find(browser, "#operator-audit-table").find_elements(By.CSS_SELECTOR, "tbody tr")
    cells = audit.find_elements(By.TAG_NAME, "td")
    assert _marked(cells[2]) == ["U+202E"] and _marked(cells[5]) == ["U+202E"]
    _in_reading_order(browser, cells[5], "reason:", "Duplicate", "request")

    # The configured agents: the agent's ID is marked; a group named in Hebrew and a digit does not take the
    # next group's digit into its right-to-left run (unisolated, "2" was drawn first).
    wait_idle(browser)
    find(browser, "#list-agents").click()
    row = find(browser, "#agents-table tbody tr")
    cells = row.find_elements(By.TAG_NAME, "td")
    assert cells[0].text == "agentU+202E-x" and _marked(cells[0]) == ["U+202E"]
    assert cells[4].text == f"{HEBREW}1, 2"
    _in_reading_order(browser, cells[4], HEBREW, "2")

    # The hidden-text scan: the UPN is marked, and isolated in the button's name and in the dialog's text.
    wait_idle(browser)
    find(browser, "#scan-hidden-text").click()
    text_appears(browser, "#hidden-text-summary", "1 entry holds hidden text")
    finding = find(browser, '#hidden-text-table tr[data-entry="entry-rlo"]')
    assert _marked(finding.find_elements(By.TAG_NAME, "td")[0]) == ["U+202E"]
    forget = finding.find_element(By.TAG_NAME, "button")
    assert forget.get_attribute("aria-label") == f"Ask to forget \u2068entry-rlo\u2069 of \u2068{MALLORY_SHOWN}\u2069"
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", forget)
    forget.click()
    text = find(browser, "dialog#confirm[open] #confirm-text")
    _in_reading_order(browser, text, "entry", "is hidden", "approval")
    find(browser, "#confirm-cancel").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)
