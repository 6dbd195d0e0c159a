"""An agent's settings: what an operator may store in its instructions, and the trail of changes.

The policy instructions are sent word for word to every model that calls memory as the
agent (the MCP instructions and append_memory's description), so they pass the same
secret screen as a write. Every change leaves an audit event, written with it. On the
real SQLite store with the real scanner.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.composition import ScannerOnFirstScan
from memory_core.domain.agent_settings import (
    AGENT_SETTINGS,
    CACHE_SECONDS,
    PUT_ATTEMPTS,
    SCREENED_UNDER,
    SETTINGS_OWNER,
    AgentSettings,
    AgentSettingsBook,
)
from memory_core.domain.audit import AuditTrail
from memory_core.domain.errors import Conflict, InvalidInput, SecretDetected
from memory_core.domain.models import agent_hash, sha256_hex
from memory_core.domain.records import Partition, Record
from memory_core.domain.settings_changes import settings_change
from memory_core.domain.views import ContentScanner
from memory_core.secrets import SecretScanner
from memory_core.secrets.detectors import CUSTOM_DETECTORS
from memory_core.secrets.identifiers import IDENTIFIER_DETECTORS
from memory_core.secrets.library import library_detectors
from memory_core.secrets.ruleset import ruleset
from tests.support.clock import TickingClock
from tests.support.scanning import CountingScanner

INSTANCE = "inst-settings"
AGENT = "/agents/travel"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
FULL_WIDTH_CARD = "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in "4111 1111 1111 1111")
OPERATOR = "operator-key"


def _book(store: SqliteMemoryStore, scanner: ContentScanner | None = None) -> AgentSettingsBook:
    """A book as the service builds it (a new one per call: a new process's, with an empty cache)."""
    return AgentSettingsBook(store, AuditTrail(store, TickingClock(datetime(2026, 12, 5, tzinfo=UTC))),
                             scanner=scanner)


@pytest.mark.parametrize(
    ("instructions", "detector"),
    [
        (f"Call the weather tool with token {GITHUB_TOKEN}.", "GitHub Token"),
        (f"Bill trips to the company card {FULL_WIDTH_CARD}.", "Payment Card Number"),
    ],
    ids=["token", "full-width card"],
)
def test_instructions_holding_a_secret_are_refused_and_the_old_settings_kept(
    store: SqliteMemoryStore, instructions: str, detector: str
) -> None:
    """The put raises SecretDetected naming the field; this process and a new one still read the old settings."""
    book = _book(store, ScannerOnFirstScan())
    before = book.put(INSTANCE, AgentSettings(AGENT, policy_instructions="Only travel preferences."), actor=OPERATOR)
    with pytest.raises(SecretDetected) as refused:
        book.put(INSTANCE, AgentSettings(AGENT, auto_append=True, policy_instructions=instructions), actor=OPERATOR)
    assert refused.value.where == "policy_instructions" and detector in refused.value.detectors
    assert str(refused.value).startswith("policy_instructions looks like it contains a secret")
    assert book.get(INSTANCE, AGENT) == before
    assert _book(store).get(INSTANCE, AGENT) == before
    assert len(book.trail(INSTANCE, limit=10).items) == 1  # the first put's event; none for the refusal


def test_ordinary_instructions_with_numbers_are_stored(store: SqliteMemoryStore) -> None:
    """Dates, times, amounts and ids in instructions are not secrets: stored and read back as written."""
    book = _book(store, ScannerOnFirstScan())
    instructions = ("Remember trips booked after 2026-01-15 14:30 UTC, budgets under $4,000, "
                    "and booking references like TRV-2026-000123. 予算は１２万円まで。")
    stored = book.put(INSTANCE, AgentSettings(AGENT, policy_instructions=instructions), actor=OPERATOR)
    assert _book(store).get(INSTANCE, AGENT) == stored
    assert stored.policy_instructions == instructions


def test_settings_without_instructions_are_read_without_the_scanner(store: SqliteMemoryStore) -> None:
    """A put of settings with no instructions scans only what it stores that operators are shown (the agent's id,
    its groups as one text); reading them never starts the scanner: its first scan loads the detectors, and a read
    is on every MCP call."""

    class Records:
        ruleset = "screen-records"

        def __init__(self) -> None:
            self.scanned: list[str] = []

        def scan(self, text: str) -> list[object]:
            self.scanned.append(text)
            return []

    class Refuses:
        ruleset = "screen-refuses"

        def scan(self, text: str) -> list[object]:
            raise AssertionError(f"scanned {text!r}")

    records = Records()
    book = _book(store, records)
    assert book.put(INSTANCE, AgentSettings(AGENT, enabled=False), actor=OPERATOR).enabled is False
    assert book.put(INSTANCE, AgentSettings(AGENT, allowed_group_ids=("g-1", "g-2")), actor=OPERATOR).enabled
    assert records.scanned == [AGENT, AGENT, "g-1\ng-2"]
    assert _book(store, Refuses()).for_models(INSTANCE, AGENT).allowed_group_ids == ("g-1", "g-2")
    assert _book(store, Refuses()).for_models(INSTANCE, "/agents/never-set") == AgentSettings("/agents/never-set")


def _stored_before_the_screen(store: SqliteMemoryStore, settings: AgentSettings) -> None:
    """Settings as a version without the screen at put stored them: the record alone."""
    store.put_record(Record(Partition(INSTANCE, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(settings.agent_object_id),
                            settings.to_data()))


def test_stored_instructions_holding_a_secret_are_withheld_from_models(
    store: SqliteMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Instructions stored before the screen existed, holding a token: get (the operator's view) answers them as
    stored; for_models leaves them out and keeps every other setting; a warning names the agent and the detector,
    never the token; once an operator saves clean instructions, models receive those."""
    old = AgentSettings(AGENT, auto_append=True, default_write_scope="agent",
                        policy_instructions=f"Call the weather tool with token {GITHUB_TOKEN}.")
    _stored_before_the_screen(store, old)
    book = _book(store, ScannerOnFirstScan())
    with caplog.at_level(logging.WARNING, logger="memory_core.agent_settings"):
        seen = book.for_models(INSTANCE, AGENT)
    assert book.get(INSTANCE, AGENT) == old
    assert seen == AgentSettings(AGENT, auto_append=True, default_write_scope="agent", policy_instructions=None)
    (warning,) = caplog.records
    assert AGENT in warning.getMessage() and "GitHub Token" in warning.getMessage()
    assert GITHUB_TOKEN[:8] not in warning.getMessage()
    book.put(INSTANCE, AgentSettings(AGENT, auto_append=True, policy_instructions="Only travel preferences."),
             actor=OPERATOR)
    assert book.for_models(INSTANCE, AGENT).policy_instructions == "Only travel preferences."
    assert _book(store, ScannerOnFirstScan()).for_models(INSTANCE, AGENT).policy_instructions == (
        "Only travel preferences.")


def test_stored_instructions_holding_hidden_text_are_withheld_from_models(
    store: SqliteMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Instructions saved before hidden text was refused, holding Unicode tag characters, are left out for models
    at every read, marked or not (the mark covers the secret screen only); the operator's view and the withheld
    flag show them; the warning names the first character and carries none of the hidden text."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    old = AgentSettings(AGENT, auto_append=True, policy_instructions="Only travel preferences." + hidden)
    store.put_record(Record(Partition(INSTANCE, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(AGENT),
                            old.to_data() | {SCREENED_UNDER: ruleset()}))
    book = _book(store, CountingScanner())
    with caplog.at_level(logging.WARNING, logger="memory_core.agent_settings"):
        seen = book.for_models(INSTANCE, AGENT)
    assert seen == AgentSettings(AGENT, auto_append=True, policy_instructions=None)
    assert book.get(INSTANCE, AGENT) == old and book.stored(INSTANCE, AGENT).instructions_withheld
    (warning,) = caplog.records
    message = warning.getMessage()
    assert AGENT in message and "(U+E006F)" in message and hidden[0] not in message


def _mark(store: SqliteMemoryStore, agent_object_id: str) -> object:
    record = store.get_record(Partition(INSTANCE, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(agent_object_id))
    assert record is not None
    return record.data.get(SCREENED_UNDER)


def test_instructions_saved_through_the_screen_are_not_scanned_again(store: SqliteMemoryStore) -> None:
    """A put marks its record with the screen's ruleset, so a new process's read does not scan (nor load the
    detectors) for it; a record without the mark is scanned."""
    saved = _book(store, ScannerOnFirstScan()).put(
        INSTANCE, AgentSettings(AGENT, policy_instructions="Only travel preferences."), actor=OPERATOR)
    assert _mark(store, AGENT) == ruleset()
    _stored_before_the_screen(store, AgentSettings("/agents/old", policy_instructions="Only seat preferences."))
    counts = CountingScanner()
    reader = _book(store, counts)
    assert reader.for_models(INSTANCE, AGENT) == saved and counts.scanned == []
    assert reader.for_models(INSTANCE, "/agents/old").policy_instructions == "Only seat preferences."
    assert counts.scanned == ["Only seat preferences."]


@pytest.mark.parametrize("mark", [None, True, "screen-0000000000000000"],
                         ids=["stored before the screen", "marked by round 2's first screen", "another ruleset"])
def test_a_read_whose_scan_finds_nothing_marks_the_record_so_no_process_scans_it_again(
    store: SqliteMemoryStore, mark: object
) -> None:
    """Instructions not marked with the current ruleset are scanned once: the read that finds nothing marks the
    record (settings unchanged, no audit event: nobody changed a setting), and a new process reads it unscanned."""
    old = AgentSettings(AGENT, auto_append=True, policy_instructions="Only seat preferences.")
    data = old.to_data() | ({} if mark is None else {"screened_at_put" if mark is True else SCREENED_UNDER: mark})
    store.put_record(Record(Partition(INSTANCE, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(AGENT), data))
    first, second = CountingScanner(), CountingScanner()
    assert _book(store, first).for_models(INSTANCE, AGENT) == old and first.scanned == [old.policy_instructions]
    assert _mark(store, AGENT) == ruleset()
    assert _book(store, second).for_models(INSTANCE, AGENT) == old and second.scanned == []
    assert _book(store).get(INSTANCE, AGENT) == old
    assert _book(store).trail(INSTANCE, limit=10).items == []


def test_a_process_warns_once_per_stored_version_of_withheld_instructions(
    store: SqliteMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Withheld instructions are read from the store again every CACHE_SECONDS, each time withheld; the process
    warns at the first of those reads and logs a debug line at the others, naming the agent and never the token.
    Another stored version that fails warns again, and so does a new process."""
    now = [1000.0]
    book = AgentSettingsBook(store, AuditTrail(store, TickingClock(datetime(2026, 12, 5, tzinfo=UTC))),
                             clock=lambda: now[0], scanner=ScannerOnFirstScan())
    _stored_before_the_screen(store, AgentSettings(AGENT, policy_instructions=f"Use token {GITHUB_TOKEN}."))
    with caplog.at_level(logging.DEBUG, logger="memory_core.agent_settings"):
        for _ in range(3):
            assert book.stored(INSTANCE, AGENT).instructions_withheld
            now[0] += CACHE_SECONDS + 1
        assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
        _stored_before_the_screen(store, AgentSettings(AGENT, policy_instructions=f"Now use {GITHUB_TOKEN}!"))
        assert book.stored(INSTANCE, AGENT).instructions_withheld
        assert _book(store, ScannerOnFirstScan()).stored(INSTANCE, AGENT).instructions_withheld
    assert [r.levelno for r in caplog.records][3:] == [logging.WARNING, logging.WARNING]
    assert all(AGENT in r.getMessage() and GITHUB_TOKEN[:8] not in r.getMessage() for r in caplog.records)


def test_instructions_are_screened_again_once_an_upgrade_adds_a_detector(
    store: SqliteMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Instructions saved through a screen that could not see their token (the detectors before GitHub's were
    added) are withheld from models by the first process with the detector, and by every one after it: a
    record that fails is not marked, and its warning repeats until an operator saves clean instructions."""
    before_upgrade = SecretScanner([d for d in library_detectors() + CUSTOM_DETECTORS + IDENTIFIER_DETECTORS
                                    if d.name != "GitHub Token"])
    assert before_upgrade.ruleset != ruleset()
    stored = AgentSettings(AGENT, policy_instructions=f"Call the weather tool as {GITHUB_TOKEN}.")
    assert _book(store, before_upgrade).put(INSTANCE, stored, actor=OPERATOR) == stored
    with caplog.at_level(logging.WARNING, logger="memory_core.agent_settings"):
        for _ in range(2):
            upgraded = _book(store, ScannerOnFirstScan()).stored(INSTANCE, AGENT)
            assert upgraded.instructions_withheld and upgraded.for_models == AgentSettings(AGENT)
            assert upgraded.settings == stored
    assert len(caplog.records) == 2 and all("GitHub Token" in r.getMessage() for r in caplog.records)
    assert not any(GITHUB_TOKEN[:8] in r.getMessage() for r in caplog.records)
    assert _mark(store, AGENT) == before_upgrade.ruleset


def test_a_mark_never_brings_back_settings_saved_after_the_read_it_follows(
    racing: tuple[RacingStore, AgentSettingsBook],
) -> None:
    """Another operator saves the agent's settings between a read that scans unmarked instructions and that
    read's mark: the mark does not land, so the stored settings are the other operator's, not the ones read."""
    store, _ = racing
    _stored_before_the_screen(store, AgentSettings(AGENT, policy_instructions="Only seat preferences."))
    store.races = 1
    reader = _book(store, ScannerOnFirstScan())
    assert reader.for_models(INSTANCE, AGENT).policy_instructions == "Only seat preferences."  # as read
    assert _book(store).get(INSTANCE, AGENT) == AgentSettings(AGENT, enabled=False)
    assert [e.actor for e in _book(store).trail(INSTANCE, limit=10).items] == ["racer"]


def test_the_instances_agents_are_listed_a_page_at_a_time_with_withheld_instructions_flagged(
    store: SqliteMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """page lists each agent with stored settings once across pages (not the trail's events beside them, not
    another instance's), each with what models see; listing logs no warning."""
    book = _book(store, ScannerOnFirstScan())
    for n in range(4):
        book.put(INSTANCE, AgentSettings(f"/agents/a{n}", enabled=n % 2 == 0), actor=OPERATOR)
    book.put("inst-other", AgentSettings("/agents/elsewhere"), actor=OPERATOR)
    _stored_before_the_screen(store, AgentSettings("/agents/old", policy_instructions=f"token {GITHUB_TOKEN}"))
    listed, continuation = [], None
    with caplog.at_level(logging.WARNING, logger="memory_core.agent_settings"):
        while True:
            page = book.page(INSTANCE, limit=2, continuation=continuation)
            listed += page.items
            continuation = page.continuation
            if continuation is None:
                break
    by_agent = {s.settings.agent_object_id: s for s in listed}
    assert sorted(by_agent) == ["/agents/a0", "/agents/a1", "/agents/a2", "/agents/a3", "/agents/old"]
    assert len(listed) == 5 and [by_agent[f"/agents/a{n}"].settings.enabled for n in range(4)] == [
        True, False, True, False]
    assert by_agent["/agents/old"].instructions_withheld and by_agent["/agents/old"].for_models.policy_instructions is None
    assert not any(s.instructions_withheld for a, s in by_agent.items() if a != "/agents/old")
    assert caplog.records == []
    with pytest.raises(InvalidInput):
        book.page(INSTANCE, limit=2, continuation="not-a-token")


def test_is_stored_names_exactly_the_agents_whose_settings_are_stored(store: SqliteMemoryStore) -> None:
    """How an id input rules refuse is still named (``api.operator``): true for the stored id, character for
    character, and only while its settings are stored; a record whose id differs from the one asked is not it."""
    odd = "agent\u202e-old"
    _stored_before_the_screen(store, AgentSettings(odd))
    store.put_record(Record(Partition(INSTANCE, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash("/agents/hashed-as"),
                            AgentSettings("/agents/other").to_data()))
    book = _book(store)
    assert book.is_stored(INSTANCE, odd)
    assert not book.is_stored(INSTANCE, "agent-old") and not book.is_stored(INSTANCE, odd + " ")
    assert not book.is_stored("inst-other", odd)
    assert not book.is_stored(INSTANCE, "/agents/hashed-as")


def test_stored_instructions_that_pass_reach_models_unchanged(store: SqliteMemoryStore) -> None:
    """Ordinary stored instructions, even ones stored before the screen, are what models receive."""
    old = AgentSettings(AGENT, policy_instructions="Remember trips booked after 2026-01-15, budgets under $4,000.")
    _stored_before_the_screen(store, old)
    assert _book(store, ScannerOnFirstScan()).for_models(INSTANCE, AGENT) == old


def test_every_change_leaves_an_event_naming_who_changed_what(store: SqliteMemoryStore) -> None:
    """Each put is in the instance's settings trail: the operator, the agent, each changed setting with its
    old and new value, and the instructions' SHA-256 and size, never their text."""
    book = _book(store, ScannerOnFirstScan())
    first = "Only travel preferences."
    second = "Only seat and meal preferences."
    book.put(INSTANCE, AgentSettings(AGENT, policy_instructions=first), actor=OPERATOR)
    book.put(INSTANCE, AgentSettings(AGENT, enabled=False, default_write_scope="agent", policy_instructions=second,
                                     allowed_group_ids=("g-travel", "g-ops")), actor="entra:ops@contoso.com")
    events = book.trail(INSTANCE, limit=10).items
    assert [(e.action.value, e.actor, e.agent_object_id) for e in events] == [
        ("agent_settings", OPERATOR, AGENT), ("agent_settings", "entra:ops@contoso.com", AGENT)]
    assert events[0].detail == "policy_instructions set"
    assert events[1].detail == ("enabled: true -> false; default_write_scope: user -> agent; policy_instructions "
                                "replaced; allowed_group_ids: any group -> \"g-travel\", \"g-ops\"")
    assert (events[1].content_sha256, events[1].byte_count) == (sha256_hex(second), len(second))
    assert not any(text in str(e.to_data()) for e in events for text in (first, second))


def test_the_trail_pages_newest_first_and_one_agent_at_a_time(store: SqliteMemoryStore) -> None:
    """The trail reads back newest first when asked, and with an agent only that agent's changes."""
    book = _book(store)
    for agent in ("/agents/a", "/agents/b", "/agents/a"):
        book.put(INSTANCE, AgentSettings(agent, auto_append=agent == "/agents/b"), actor=OPERATOR)
    newest = book.trail(INSTANCE, limit=2, newest_first=True)
    rest = book.trail(INSTANCE, limit=2, newest_first=True, continuation=newest.continuation)
    only_a = book.trail(INSTANCE, limit=10, agent_object_id="/agents/a").items
    assert [e.agent_object_id for e in [*newest.items, *rest.items]] == ["/agents/a", "/agents/b", "/agents/a"]
    assert [e.detail for e in only_a] == ["no change", "no change"]
    assert book.trail("another-instance", limit=10).items == []


@pytest.mark.parametrize(
    ("before", "after", "detail"),
    [
        (AgentSettings(AGENT), AgentSettings(AGENT), "no change"),
        (AgentSettings(AGENT, allowed_group_ids=("a", "b")), AgentSettings(AGENT, allowed_group_ids=("b", "c")),
         "allowed_group_ids: added \"c\"; removed \"a\""),
        (AgentSettings(AGENT, allowed_group_ids=("a",)), AgentSettings(AGENT, allowed_group_ids=()),
         "allowed_group_ids: removed \"a\""),
        (AgentSettings(AGENT, allowed_group_ids=("a",)), AgentSettings(AGENT), "allowed_group_ids: \"a\" -> any group"),
        (AgentSettings(AGENT, policy_instructions="x"), AgentSettings(AGENT, auto_append=True),
         "auto_append: false -> true; policy_instructions removed"),
        (AgentSettings(AGENT), AgentSettings(AGENT, allowed_group_ids=("any group; enabled: true -> false",)),
         "allowed_group_ids: any group -> \"any group; enabled: true -> false\""),
    ],
    ids=["nothing", "groups swapped", "no group left", "groups lifted", "instructions removed",
         "a group named like the trail's words"],
)
def test_a_change_is_described_setting_by_setting(before: AgentSettings, after: AgentSettings, detail: str) -> None:
    assert settings_change(before, after) == detail


class RacingStore(SqliteMemoryStore):
    """The real SQLite store, where another operator's save of the agent's settings lands right after
    each of the next ``races`` reads of them: between a put's read and its write."""

    def __init__(self, path: Path, clock: TickingClock) -> None:
        super().__init__(path)
        self.races = 0
        self._racer = AgentSettingsBook(self, AuditTrail(self, clock))
        self._enabled = True

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        record = super().get_record(partition, kind, record_id)
        if kind == AGENT_SETTINGS and self.races > 0:
            self.races -= 1
            races, self.races = self.races, 0  # the racer's own read does not race
            self._enabled = not self._enabled
            self._racer.put(INSTANCE, AgentSettings(AGENT, enabled=self._enabled), actor="racer")
            self.races = races
        return record


class PausingStore(SqliteMemoryStore):
    """The real SQLite store, pausing 1 ms after each read of an agent's settings."""

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        record = super().get_record(partition, kind, record_id)
        if kind == AGENT_SETTINGS:
            time.sleep(0.001)
        return record


@pytest.fixture
def racing(tmp_path: Path) -> Iterator[tuple[RacingStore, AgentSettingsBook]]:
    clock = TickingClock(datetime(2026, 12, 5, tzinfo=UTC))
    store = RacingStore(tmp_path / "m.sqlite3", clock)
    yield store, AgentSettingsBook(store, AuditTrail(store, clock))
    store.close()


@pytest.mark.parametrize("stored_first", [False, True], ids=["first save", "settings stored"])
def test_a_change_saved_while_another_lands_is_described_against_the_one_it_replaced(
    racing: tuple[RacingStore, AgentSettingsBook], stored_first: bool
) -> None:
    """Another operator disables the agent between this put's read and its write. The put is then
    described against what it really replaced, so the trail says it enabled the agent again; described
    against its read, it would have hidden that."""
    store, book = racing
    if stored_first:
        book.put(INSTANCE, AgentSettings(AGENT, default_write_scope="agent"), actor=OPERATOR)
    store.races = 1
    book.put(INSTANCE, AgentSettings(AGENT, auto_append=True), actor=OPERATOR)
    events = book.trail(INSTANCE, limit=10).items[-2:]
    assert [(e.actor, e.detail) for e in events] == [
        ("racer", "enabled: true -> false" + ("; default_write_scope: agent -> user" if stored_first else "")),
        (OPERATOR, "enabled: false -> true; auto_append: false -> true"),
    ]
    assert _book(store).get(INSTANCE, AGENT) == AgentSettings(AGENT, auto_append=True)


def test_a_put_that_loses_every_attempt_stores_nothing_and_says_conflict(
    racing: tuple[RacingStore, AgentSettingsBook],
) -> None:
    """When other saves land between every read and write, the put gives up with Conflict after
    ``PUT_ATTEMPTS``: the settings and the trail are the other operator's alone."""
    store, book = racing
    store.races = PUT_ATTEMPTS
    with pytest.raises(Conflict):
        book.put(INSTANCE, AgentSettings(AGENT, auto_append=True), actor=OPERATOR)
    assert [e.actor for e in book.trail(INSTANCE, limit=10).items] == ["racer"] * PUT_ATTEMPTS
    assert _book(store).get(INSTANCE, AGENT) == AgentSettings(AGENT, enabled=PUT_ATTEMPTS % 2 == 0)


def test_concurrent_saves_leave_a_trail_where_each_change_starts_from_the_one_before(tmp_path: Path) -> None:
    """Two operators save conflicting settings 40 times each from two threads, through two books (two
    processes' worth), on a store that pauses 1 ms after each read of the settings so the other
    thread's save often lands in between. Every save lands or raises Conflict having stored nothing;
    each event's old values are the previous event's new ones: no change is described against
    settings another save had already replaced."""
    clock = TickingClock(datetime(2026, 12, 5, tzinfo=UTC))
    store = PausingStore(tmp_path / "m.sqlite3")
    values = {"ops-a": AgentSettings(AGENT, enabled=False), "ops-b": AgentSettings(AGENT, auto_append=True)}
    landed = {actor: 0 for actor in values}

    def save(actor: str) -> None:
        book = AgentSettingsBook(store, AuditTrail(store, clock))
        for _ in range(40):
            try:
                book.put(INSTANCE, values[actor], actor=actor)
                landed[actor] += 1
            except Conflict:
                pass  # lost PUT_ATTEMPTS races in a row: nothing stored, the operator is told to try again

    threads = [threading.Thread(target=save, args=(actor,)) for actor in values]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = AuditTrail(store, clock).page(INSTANCE, SETTINGS_OWNER, limit=1000).items
    store.close()
    assert [sum(e.actor == actor for e in events) for actor in values] == list(landed.values())
    assert min(landed.values()) > 0
    changes = 0
    previous = AgentSettings(AGENT)
    for event in events:
        assert event.detail == settings_change(previous, values[event.actor]), event
        changes += previous != values[event.actor]
        previous = values[event.actor]
    assert changes > 1
