"""The person's agent list, in real headless Chromium, when the API answers it a page at a time.

``GET /memory/agents`` pages in the order of the agents' profile ids (stable under writes, not by time); the
console reads every page and shows the most recently updated agent first, as it did when the API answered
one list.

The list beside "About me" shows 100 agents at a time, with the button the operator's long lists use
(``ui.showMore``): listed whole, 2,000 agents took most of a second to show and made the side navigation tens of
thousands of pixels long (docs/performance.md, "Web console"). Bounded in time: every wait is explicit (10 s at
most each).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, agent_hash
from tests.console.browser import find, wait_for
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer

T0 = datetime(2026, 3, 1, tzinfo=UTC)
AGENTS = 503  # one page of 500 (the console's page) and a second of 3
LISTED = "nav .scopes button[data-scope^='agent:']"  # the agents listed beside "About me"


def _seed_agents(server: RunningServer, instance: str, count: int) -> None:
    """``count`` agents, each with one entry, agent n updated a second after agent n - 1."""
    store = server.open_store()
    try:
        for n in range(count):
            key = ProfileKey(instance, "local@localhost", Scope.AGENT, f"agent-{n:03}")
            at = T0 + timedelta(seconds=n)
            store.append(MemoryProfile(key, None, None, f"Agent {n:03}", at, at),
                         MemoryEntry(f"e{n}", key, f"- fact of agent {n:03}", EntryKind.APPEND, at, key.upn,
                                     agent_name=f"Agent {n:03}"))
    finally:
        store.close()


def _listed(driver: WebDriver) -> list[str]:
    return [b.get_attribute("data-scope") or "" for b in driver.find_elements(By.CSS_SELECTOR, LISTED)]


def _show_more(driver: WebDriver, listed: int) -> None:
    find(driver, "#show-more-scopes").click()
    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, LISTED)) == listed)


def test_the_agent_list_reads_every_page_and_shows_the_most_recently_updated_first(
    browser: WebDriver, console_server: RunningServer, instance: str
) -> None:
    """503 agents, each updated a second after the one before (so time and id orders differ): the console asks
    for two pages and lists all 503 agents (100 at a time) beside "About me", newest first, with no note that the
    list was cut short; choosing an agent only the second page named shows its memory."""
    _seed_agents(console_server, instance, AGENTS)
    by_id = sorted(range(AGENTS), key=lambda n: agent_hash(f"agent-{n:03}"))
    assert by_id[:500] != sorted(by_id[:500], reverse=True)  # the API's first page is not the newest 500

    open_console(browser, console_server, instance)
    assert find(browser, "nav ul.scopes button[data-scope]").get_attribute("data-scope") == "user"
    for listed in (200, 300, 400, 500, AGENTS):
        _show_more(browser, listed)
    assert _listed(browser) == [f"agent:agent-{n:03}" for n in reversed(range(AGENTS))]
    assert not browser.find_elements(By.CSS_SELECTOR, "nav .cut-short")
    reads = browser.execute_script(
        "return performance.getEntriesByType('resource').map((r) => r.name).filter((n) => n.includes('/memory/agents'))")
    assert len(reads) == 2 and all("limit=500" in r for r in reads)

    later = by_id[-1]  # an agent only the second page named
    find(browser, f'button[data-scope="agent:agent-{later:03}"]').click()
    title = find(browser, "#scope-title").text  # the name, then the agent's id beside it
    assert title.startswith(f"Agent: Agent {later:03}") and title.endswith(f"agent-{later:03}")
    assert f"fact of agent {later:03}" in find(browser, "#entries").text


def test_the_agents_beside_about_me_show_100_at_a_time_and_the_one_chosen_stays_listed(
    browser: WebDriver, console_server: RunningServer, instance: str
) -> None:
    """230 agents: the newest 100 are listed, then 200; choosing one the button listed redraws the view with the
    200 still listed and that one current; the button lists the rest, and the line that says so takes the focus."""
    _seed_agents(console_server, instance, 230)
    open_console(browser, console_server, instance)
    assert _listed(browser) == [f"agent:agent-{n:03}" for n in range(229, 129, -1)]
    assert find(browser, "#show-more-scopes").text == "Show 100 more (130 not shown)"
    _show_more(browser, 200)

    find(browser, 'button[data-scope="agent:agent-050"]').click()  # the 180th, listed by the button
    wait_for(browser, lambda d: d.find_element(By.ID, "scope-title").text.startswith("Agent: Agent 050"))
    current = find(browser, 'nav button[aria-current="true"]')
    assert current.get_attribute("data-scope") == "agent:agent-050"
    assert len(_listed(browser)) == 200
    assert find(browser, "#show-more-scopes").text == "Show 30 more (30 not shown)"

    _show_more(browser, 230)
    done = find(browser, "#show-more-scopes-done")
    assert done.text == "All 230 agents shown." and browser.switch_to.active_element == done
    assert _listed(browser)[-1] == "agent:agent-000"
