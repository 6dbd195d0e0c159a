"""The person's agent list, in real headless Chromium, when the API answers it a page at a time.

``GET /memory/agents`` pages in the order of the agents' profile ids (stable under writes, not by time); the
console reads every page and shows the most recently updated agent first, as it did when the API answered
one list.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, agent_hash
from tests.console.browser import find
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer

T0 = datetime(2026, 3, 1, tzinfo=UTC)
AGENTS = 503  # one page of 500 (the console's page) and a second of 3


def test_the_agent_list_reads_every_page_and_shows_the_most_recently_updated_first(
    browser: WebDriver, console_server: RunningServer, instance: str
) -> None:
    """503 agents, each updated a second after the one before (so time and id orders differ): the console asks
    for two pages and lists all 503 agents beside "About me", newest first, with no note that the list was cut
    short; choosing an agent only the second page named shows its memory."""
    store = console_server.open_store()
    try:
        for n in range(AGENTS):
            key = ProfileKey(instance, "local@localhost", Scope.AGENT, f"agent-{n:03}")
            at = T0 + timedelta(seconds=n)
            store.append(MemoryProfile(key, None, None, f"Agent {n:03}", at, at),
                         MemoryEntry(f"e{n}", key, f"- fact of agent {n:03}", EntryKind.APPEND, at, key.upn,
                                     agent_name=f"Agent {n:03}"))
    finally:
        store.close()
    by_id = sorted(range(AGENTS), key=lambda n: agent_hash(f"agent-{n:03}"))
    assert by_id[:500] != sorted(by_id[:500], reverse=True)  # the API's first page is not the newest 500

    open_console(browser, console_server, instance)
    buttons = find(browser, "nav ul.scopes").find_elements(By.CSS_SELECTOR, "button[data-scope]")
    assert [b.get_attribute("data-scope") for b in buttons] == ["user"] + [
        f"agent:agent-{n:03}" for n in reversed(range(AGENTS))]
    assert not browser.find_elements(By.CSS_SELECTOR, "nav .cut-short")
    reads = browser.execute_script(
        "return performance.getEntriesByType('resource').map((r) => r.name).filter((n) => n.includes('/memory/agents'))")
    assert len(reads) == 2 and all("limit=500" in r for r in reads)

    later = by_id[-1]  # an agent only the second page named
    find(browser, f'button[data-scope="agent:agent-{later:03}"]').click()
    title = find(browser, "#scope-title").text  # the name, then the agent's id beside it
    assert title.startswith(f"Agent: Agent {later:03}") and title.endswith(f"agent-{later:03}")
    assert f"fact of agent {later:03}" in find(browser, "#entries").text
