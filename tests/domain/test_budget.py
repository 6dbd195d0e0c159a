"""Budgeted reads (MemoryService.get_within): the fill rule, its edges, Unicode, and custody, on the SQLite store."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import InvalidInput
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryEntry, Scope, Share
from memory_core.domain.rendering import render_scope
from memory_core.domain.section_cuts import cut_section
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.wire.budget import omission_notice
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com", name="Alex", user_name="alex")
SAM = Caller(upn="sam@contoso.com", name="Sam", user_name="sam")
AGENT = AgentContext("/agents/benefits", "Benefits Assistant")
MARKER = "[memory-core: entry cut to fit the budget;"
# Characters a careless cut would split: a surrogate-pair emoji, a ZWJ family, a flag,
# combining accents, a CJK line, and a CRLF line end.
TRICKY = ["- 🎉 party", "- 👨‍👩‍👧‍👦 family", "- 🇳🇴 flag", "- e\u0301te\u0301 accents", "- 東京に住んでいます", "- crlf line\r\n- next"]


NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _service(path: Path, mode: DeletionMode = DeletionMode.IMMEDIATE, **kw: object) -> MemoryService:
    return MemoryService(SqliteMemoryStore(path), clock=TickingClock(NOON), deletion_mode=mode, **kw)  # type: ignore[arg-type]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    yield _service(tmp_path / "m.sqlite3")


def _oracle(scope: Scope, entries: list[MemoryEntry], budget: int) -> str:
    """The reference rule, written plainly: the longest newest suffix whose document fits."""
    for count in range(len(entries), -1, -1):
        document = render_scope(scope, entries[len(entries) - count:], viewer=ALEX.upn)
        if len(document) <= budget:
            return document
    return ""


def _fill_user(service: MemoryService, texts: list[str]) -> list[MemoryEntry]:
    for text in texts:
        service.append(ALEX, "i", Scope.USER, None, text)
    return service.entries(ALEX, "i", Scope.USER, None)


def test_a_budget_large_enough_answers_exactly_the_unbudgeted_document(service: MemoryService) -> None:
    """With room for everything, a budgeted read is the plain read, and nothing is reported left out."""
    for n in range(5):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
        service.append(ALEX, "i", Scope.AGENT, AGENT, f"- agent fact {n}")
    full = service.get(ALEX, "i", Scope.COMBINED, AGENT).content_markdown
    view = service.get_within(ALEX, "i", Scope.COMBINED, AGENT, len(full))
    assert view.content_markdown == full
    assert view.budget is not None and view.budget.omitted_entries == 0 and view.budget.shown_entries == 10


def test_every_budget_keeps_the_newest_whole_entries_and_counts_the_rest_exactly(service: MemoryService) -> None:
    """For every budget from 0 to the full length: the longest newest run of whole entries that fits, no
    longer than the budget, and an exact count and date range of the older entries left out."""
    entries = _fill_user(service, [f"- fact {n}: {'x' * (n % 7)}" for n in range(12)] + TRICKY)
    full = service.get(ALEX, "i", Scope.USER, None).content_markdown
    for budget in range(0, len(full) + 2):
        view = service.get_within(ALEX, "i", Scope.USER, None, budget)
        assert view.budget is not None
        (report,) = view.budget.scopes
        assert len(view.content_markdown) <= budget
        if report.cut_entry_id is None:
            assert view.content_markdown == _oracle(Scope.USER, entries, budget), budget
        assert report.shown_entries + report.omitted_entries == len(entries)
        left_out = entries[: report.omitted_entries]
        if left_out:
            assert (report.omitted_from, report.omitted_to) == (left_out[0].created_on, left_out[-1].created_on)
        else:
            assert report.omitted_from is None and report.omitted_to is None


def test_a_budget_never_splits_a_character_or_a_line(service: MemoryService) -> None:
    """Every line answered, at any budget, is a whole line of the full document or the cut marker, except
    the one line the marker says was cut: a prefix of a line of the newest entry ending between grapheme
    clusters. So no code point, surrogate pair, grapheme cluster or CRLF pair is ever split."""
    _fill_user(service, ["- " + "🎉👨‍👩‍👧‍👦🇳🇴e\u0301" * 3 + "\r\n- second 東京\n- third"] * 2 + TRICKY)
    full = service.get(ALEX, "i", Scope.USER, None).content_markdown
    full_lines = set(full.split("\n"))
    for budget in range(0, len(full) + 1):
        content = service.get_within(ALEX, "i", Scope.USER, None, budget).content_markdown
        lines = content.split("\n")
        for index, line in enumerate(lines):
            if line in full_lines or line.startswith(MARKER):
                continue
            assert lines[index + 1].startswith(MARKER) and "characters of line" in lines[index + 1], (budget, line)
            whole = next(f for f in full_lines if f.startswith(line) and f != line)
            assert _between_clusters(whole, len(line)) and "\r" not in line, (budget, line)
        content.encode("utf-8")  # no lone surrogate


def _between_clusters(text: str, at: int) -> bool:
    """Whether ``text[:at]`` ends between two grapheme clusters (for the characters the tests use)."""
    if at in (0, len(text)):
        return True
    before, after = text[at - 1], text[at]
    if unicodedata.combining(after) or after in "\u200d\ufe0f" or before == "\u200d":
        return False
    regional = [c for c in text[:at][::-1]]
    run = next((i for i, c in enumerate(regional) if not 0x1F1E6 <= ord(c) <= 0x1F1FF), len(regional))
    return not (0x1F1E6 <= ord(after) <= 0x1F1FF and run % 2 == 1)


def test_budget_zero_shows_nothing_and_counts_everything(service: MemoryService) -> None:
    """maxChars=0 answers no markdown; the report still counts every entry and its dates."""
    entries = _fill_user(service, ["- a", "- b", "- c"])
    view = service.get_within(ALEX, "i", Scope.USER, None, 0)
    assert view.content_markdown == "" and view.budget is not None
    assert view.budget.omitted_entries == 3 and view.budget.shown_entries == 0
    assert view.budget.omitted_from == entries[0].created_on and view.budget.omitted_to == entries[-1].created_on


def test_a_budget_smaller_than_one_entry_shows_nothing(service: MemoryService) -> None:
    """Less room than the title, the newest heading and its first line: nothing is shown, all is counted."""
    _fill_user(service, ["- a short fact", "- the newest fact"])
    view = service.get_within(ALEX, "i", Scope.USER, None, 40)
    assert view.content_markdown == "" and view.budget is not None and view.budget.omitted_entries == 2


def test_an_entry_larger_than_the_budget_is_shown_in_whole_lines_and_marked(service: MemoryService) -> None:
    """When the newest entry alone is larger than the budget, its heading and first whole lines are shown,
    then a marker line; it counts as shown (cut), and every older entry is counted as left out."""
    lines = [f"- line {n} of a long imported document" for n in range(200)]
    _fill_user(service, ["- older fact", "\n".join(lines)])
    view = service.get_within(ALEX, "i", Scope.USER, None, 500)
    content = view.content_markdown
    assert len(content) <= 500 and view.budget is not None
    assert content.startswith("# User memory\n\n## Appended ") and "- line 0 of a long" in content
    assert content.rstrip("\n").split("\n")[-1].startswith(MARKER) and "of 202 lines shown]" in content
    (report,) = view.budget.scopes
    assert report.cut_entry_id is not None and report.shown_entries == 1 and report.omitted_entries == 1


def test_one_line_longer_than_the_room_is_cut_inside_between_whole_characters() -> None:
    """A section whose first line of text does not fit is cut inside that line, after whole characters, and
    the marker says how many of the line's characters are shown; None only when not one character fits."""
    section = "## Appended 2026-03-01 12:00:00 UTC\n\n- " + "🎉" * 100
    cut = cut_section(section, 200)
    assert cut is not None and len(cut) <= 200
    text, marker = cut.split("\n")[2:]
    assert text == "- " + "🎉" * (len(text) - 2) and len(text) > 2
    assert marker == f"{MARKER} 2 of 3 lines shown, then {len(text)} of 102 characters of line 3]"
    assert cut_section(section, 37 + 1 + len(marker)) is None  # the heading, a blank line, no character
    assert cut_section(section, 300) is not None


@pytest.mark.parametrize("unit", ["e\u0301", "👨‍👩‍👧‍👦", "🇳🇴", "👍🏽", "❤\ufe0f", "東"])
def test_a_line_cut_inside_keeps_each_grapheme_cluster_whole(unit: str) -> None:
    """At every room, the cut ends between clusters: a combining accent, a ZWJ sequence, a flag (a pair of
    regional indicators), a skin tone modifier or a variation selector stays with its base character."""
    line = "- " + unit * 60
    section = "## Appended 2026-03-01 12:00:00 UTC\n\n" + line
    for room in range(0, len(section) + 120):
        cut = cut_section(section, room)
        if cut is None:
            continue
        assert len(cut) <= room
        shown = cut.split("\n")[2]
        assert line.startswith(shown) and _between_clusters(line, len(shown)), (unit, room, shown)
        assert shown == line or (len(shown) - 2) % len(unit) == 0, (unit, room, shown)


def test_a_single_line_far_larger_than_the_budget_is_cut_not_hidden(service: MemoryService) -> None:
    """The newest entry is one line of 50,000 characters: its start is shown within a budget of 500, cut inside
    the line and marked; it counts as shown (cut), and the older entries are left out and counted."""
    huge = "- " + "the user compared many rail passes " * 1430
    entries = _fill_user(service, ["- an older short fact", "- another", huge])
    view = service.get_within(ALEX, "i", Scope.USER, None, 500)
    content = view.content_markdown
    assert view.budget is not None and len(content) <= 500 and view.budget.chars == len(content)
    title, blank, heading, blank_too, text, marker, end = content.split("\n")
    assert (title, blank, blank_too, end) == ("# User memory", "", "", "") and heading.startswith("## Appended ")
    assert huge.startswith(text) and len(text) > 300 and len(content) == 500
    assert marker == f"{MARKER} 2 of 3 lines shown, then {len(text)} of {len(huge)} characters of line 3]"
    (report,) = view.budget.scopes
    assert (report.cut_entry_id, report.shown_entries, report.omitted_entries) == (entries[-1].id, 1, 2)
    assert (report.omitted_from, report.omitted_to) == (entries[0].created_on, entries[1].created_on)


def test_a_long_single_line_summary_no_longer_hides_its_scope_in_a_combined_read(service: MemoryService) -> None:
    """The audit's case: 20 user facts of about 500 characters, then agent memory of a short summary and a newest
    one-line summary of 8,845 characters, read at 16,000. The newest summary is shown cut (the older one is left
    out, as the rule says for entries older than a cut one), and the notice says which entry was cut and how."""
    for i in range(20):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {i}: " + "likes trains " * 40)
    service.append(ALEX, "i", Scope.AGENT, AGENT, "The user booked the Lisbon trip (hotel Bairro Alto).")
    long = "Long discussion summary: " + "the user compared many rail passes and hotel options in detail " * 140
    assert len(long) == 8845
    service.append(ALEX, "i", Scope.AGENT, AGENT, long)
    view = service.get_within(ALEX, "i", Scope.COMBINED, AGENT, 16_000)
    assert view.budget is not None and len(view.content_markdown) <= 16_000
    user, agent = view.budget.scopes
    newest = service.entries(ALEX, "i", Scope.AGENT, AGENT)[-1]
    assert (agent.shown_entries, agent.omitted_entries, agent.cut_entry_id) == (1, 1, newest.id)
    assert "Long discussion summary: the user compared" in view.content_markdown
    assert user.shown_entries >= 10 and user.cut_entry_id is None
    notice = omission_notice(view.budget)
    assert notice is not None and "shown only in part: the newest agent memory entry (2 of 3" in notice and " of 8845 characters" in notice


@pytest.mark.parametrize("budget", [0, 1, 2, 10, 80])
def test_a_budget_too_small_for_one_character_shows_nothing_and_counts_everything(
        service: MemoryService, budget: int) -> None:
    """Budgets of 0, 1 and a few characters, with a huge single-line newest entry: no markdown, no marker,
    every entry counted as left out (a budget smaller than the title, a heading and one character)."""
    entries = _fill_user(service, ["- older", "- " + "x" * 60_000])
    view = service.get_within(ALEX, "i", Scope.USER, None, budget)
    assert view.content_markdown == "" and view.budget is not None
    (report,) = view.budget.scopes
    assert (report.shown_entries, report.omitted_entries, report.cut_entry_id) == (0, 2, None)
    assert (report.omitted_from, report.omitted_to) == (entries[0].created_on, entries[1].created_on)


def test_a_document_exactly_the_budget_is_whole_and_a_line_exactly_the_budget_is_cut(service: MemoryService) -> None:
    """A single-line entry whose document is exactly the budget is shown whole, unmarked; one character less cuts
    it inside the line. A line exactly as long as the budget is cut to fit (the title and heading need room)."""
    line = "- " + "y" * 998
    _fill_user(service, [line])
    full = service.get(ALEX, "i", Scope.USER, None).content_markdown
    assert service.get_within(ALEX, "i", Scope.USER, None, len(full)).content_markdown == full
    less = service.get_within(ALEX, "i", Scope.USER, None, len(full) - 1)
    assert less.budget is not None and less.budget.scopes[0].cut_entry_id is not None
    assert len(less.content_markdown) <= len(full) - 1 and "of 1000 characters of line 3]" in less.content_markdown
    exact = service.get_within(ALEX, "i", Scope.USER, None, len(line)).content_markdown
    assert 0 < len(exact) <= len(line) and MARKER in exact


def test_crlf_lines_stay_whole_and_a_long_crlf_line_is_cut_before_its_return(service: MemoryService) -> None:
    """An entry of CRLF lines whose first line is long: cut inside that line, the shown part never holds its
    "\r"; when the long line is the second one, the first stays whole with its "\r\n"."""
    _fill_user(service, ["- " + "z" * 3000 + "\r\n- short\r\n"])
    content = service.get_within(ALEX, "i", Scope.USER, None, 700).content_markdown
    assert "\r" not in content and "zzz" in content and "2 of 4 lines shown, then" in content and "of 3003 characters of line 3]" in content
    _fill_user(service, ["- first\r\n- " + "w" * 3000 + "\r\n- third"])
    content = service.get_within(ALEX, "i", Scope.USER, None, 700).content_markdown
    assert "\n- first\r\n" in content and "ww" not in content and "3 of 5 lines shown]" in content


def test_combined_splits_evenly_and_hands_on_an_unused_share(service: MemoryService) -> None:
    """Much user memory and little agent memory: agent memory is shown whole and user memory takes the rest;
    with much of both, each gets about half."""
    for n in range(200):
        service.append(ALEX, "i", Scope.USER, None, f"- user fact {n}")
    service.append(ALEX, "i", Scope.AGENT, AGENT, "- the only agent fact")
    view = service.get_within(ALEX, "i", Scope.COMBINED, AGENT, 2000)
    assert view.budget is not None
    user, agent = view.budget.scopes
    assert agent.shown_entries == 1 and agent.omitted_entries == 0
    assert user.omitted_entries == 200 - user.shown_entries and 1900 <= len(view.content_markdown) <= 2000
    for n in range(200):
        service.append(ALEX, "i", Scope.AGENT, AGENT, f"- agent fact {n}")
    view = service.get_within(ALEX, "i", Scope.COMBINED, AGENT, 2000)
    assert view.budget is not None
    user_doc, agent_doc = view.content_markdown.split("# Agent memory")
    assert abs(len(user_doc) - len(agent_doc)) < 100 and len(view.content_markdown) <= 2000
    assert "- agent fact 199" in agent_doc and "- user fact 199" in user_doc


def test_combined_with_one_scope_empty_gives_the_other_the_whole_budget(service: MemoryService) -> None:
    for n in range(50):
        service.append(ALEX, "i", Scope.AGENT, AGENT, f"- agent fact {n}")
    view = service.get_within(ALEX, "i", Scope.COMBINED, AGENT, 1000)
    assert view.content_markdown == _oracle(Scope.AGENT, service.entries(ALEX, "i", Scope.AGENT, AGENT), 1000)


def test_holds_clears_and_replace_are_honoured_like_the_plain_read(tmp_path: Path) -> None:
    """Entries hidden by a pending clear, a pending forget (user memory) or a replace import (agent memory)
    are neither shown nor counted."""
    service = _service(tmp_path / "c.sqlite3", DeletionMode.OPERATOR_APPROVAL)
    for n in range(10):
        service.append(ALEX, "i", Scope.USER, None, f"- before clear {n}")
        service.append(ALEX, "i", Scope.AGENT, AGENT, f"- before replace {n}")
    service.clear(ALEX, "i", Scope.USER, None, confirm=True)  # hidden at once, pending approval
    service.import_markdown(ALEX, "i", Scope.AGENT, AGENT, "- replaced", ImportMode.REPLACE)
    for n in range(10):
        service.append(ALEX, "i", Scope.USER, None, f"- after {n}")
        service.append(ALEX, "i", Scope.AGENT, AGENT, f"- agent after {n}")
    service.forget(ALEX, "i", service.entries(ALEX, "i", Scope.USER, None)[-1].id)  # pending approval
    user = service.entries(ALEX, "i", Scope.USER, None)
    agent = service.entries(ALEX, "i", Scope.AGENT, AGENT)
    assert len(user) == 9 and "after 9" not in str(user) and "before" not in str(user)
    assert len(agent) == 11 and "before" not in str(agent)
    for budget in (0, 150, 400, 10_000):
        for scope, visible in ((Scope.USER, user), (Scope.AGENT, agent)):
            view = service.get_within(ALEX, "i", scope, AGENT, budget)
            assert view.content_markdown == _oracle(scope, visible, budget)
            assert view.budget is not None and view.budget.shown_entries + view.budget.omitted_entries == len(visible)
        combined = service.get_within(ALEX, "i", Scope.COMBINED, AGENT, budget)
        assert combined.budget is not None
        assert [s.shown_entries + s.omitted_entries for s in combined.budget.scopes] == [9, 11]


def test_an_empty_replace_starts_an_empty_document(service: MemoryService) -> None:
    _fill_user(service, ["- old"])
    service.import_markdown(ALEX, "i", Scope.USER, None, "", ImportMode.REPLACE)
    view = service.get_within(ALEX, "i", Scope.USER, None, 0)
    assert view.content_markdown == "" and view.budget is not None and view.budget.omitted_entries == 0


def test_team_reads_merge_shared_entries_under_the_same_rule(tmp_path: Path) -> None:
    service = _service(tmp_path / "t.sqlite3", allow_sharing_override=True)
    for n in range(5):
        service.append(SAM, "i", Scope.USER, None, f"- sam shares {n}", WriteOptions(share=Share.TEAM))
        service.append(ALEX, "i", Scope.USER, None, f"- alex fact {n}")
    visible = service.entries(ALEX, "i", Scope.USER, None, SharingPolicy.TEAM)
    assert len(visible) == 10
    for budget in (0, 300, 10_000):
        view = service.get_within(ALEX, "i", Scope.USER, None, budget, SharingPolicy.TEAM)
        assert view.content_markdown == _oracle(Scope.USER, visible, budget)


def test_a_negative_budget_is_refused(service: MemoryService) -> None:
    with pytest.raises(InvalidInput) as raised:
        service.get_within(ALEX, "i", Scope.USER, None, -1)
    assert raised.value.code == "invalid_budget"


@pytest.mark.parametrize("text", ["- the replacement", ""])
def test_a_replace_held_for_approval_reads_like_the_plain_read(tmp_path: Path, text: str) -> None:
    """An import replace under operator approval (held until approved) is budgeted like the plain read shows it."""
    service = _service(tmp_path / "h.sqlite3", DeletionMode.OPERATOR_APPROVAL)
    for n in range(10):
        service.append(ALEX, "i", Scope.USER, None, f"- before {n}")
    service.import_markdown(ALEX, "i", Scope.USER, None, text, ImportMode.REPLACE)
    for n in range(3):
        service.append(ALEX, "i", Scope.USER, None, f"- after {n}")
    visible = [e for e in service.entries(ALEX, "i", Scope.USER, None) if e.content_markdown.strip()]
    for budget in (0, 120, 10_000):
        view = service.get_within(ALEX, "i", Scope.USER, None, budget)
        assert view.content_markdown == _oracle(Scope.USER, visible, budget)
        assert view.budget is not None and view.budget.shown_entries + view.budget.omitted_entries == len(visible)
    assert service.get_within(ALEX, "i", Scope.USER, None, 10_000).content_markdown == (
        service.get(ALEX, "i", Scope.USER, None).content_markdown)


def test_an_older_sqlite_store_gains_the_kind_index_on_open(tmp_path: Path) -> None:
    """A database from before budgeted reads (schema 3) gets the index the newest-replace look-up uses."""
    import sqlite3

    path = tmp_path / "old.sqlite3"
    SqliteMemoryStore(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP INDEX entries_by_kind")
    db.execute("PRAGMA user_version=3")
    db.commit()
    db.close()
    SqliteMemoryStore(path).close()
    db = sqlite3.connect(path)
    try:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert "entries_by_kind" in names
        plan = " ".join(str(row) for row in db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM entries WHERE instance_id=? AND upn=? AND profile_id=? AND kind=?"
            " ORDER BY created_on DESC LIMIT 1", ["i", "u", "p", "replace"]))
        assert "entries_by_kind" in plan
    finally:
        db.close()
