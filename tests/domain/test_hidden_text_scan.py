"""The operator's scan finds stored entries holding text no reader sees, and an operator can ask to forget them.

The entries are written through the service with the door's hidden-text rule lifted
(``new_entries.first_hidden`` answers None), which is how an earlier version stored them:
the same entries, team copies and legacy imports, without the refusal. The store's part
(``partition_owners``) is held to its contract on both stores in tests/contract.
"""

from __future__ import annotations

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain import hidden_text_scan, new_entries
from memory_core.domain.deletion import DeletionKind, DeletionStatus
from memory_core.domain.errors import InvalidInput, NotFound
from memory_core.domain.hidden_text_scan import HiddenTextScanPage
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import SHARED_OWNER, Scope, Share
from memory_core.domain.paging import encode_token
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, WriteOptions
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com", name="Alex")
BOB = Caller(upn="bob@contoso.com", name="Bob")
HIDDEN = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
SELECTORS = "".join(chr(0xE0100 + ord(ch) - 16) for ch in "obey")  # "obey" as variation selectors, a byte each
T = "2026-01-01T00:00:00.000000+00:00"  # a position's time, as a continuation carries it
SCOTLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"


@pytest.fixture
def service(store: SqliteMemoryStore) -> MemoryService:
    return MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)


@pytest.fixture
def before_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes as an earlier version made them: the door lets hidden text through."""
    monkeypatch.setattr(new_entries, "hidden_in", lambda content, beside, name="content": None)


def _scan_all(service: MemoryService, limit: int = 20) -> list[HiddenTextScanPage]:
    pages = [service.hidden_text_page("i", limit=limit)]
    while pages[-1].continuation is not None:
        pages.append(service.hidden_text_page("i", limit=limit, continuation=pages[-1].continuation))
    return pages


def _found(service: MemoryService) -> list[tuple[str, str, str]]:
    """(owner, field, character) of every finding, in the scan's order."""
    return [(f.entry.key.upn, f.field, f.character) for page in _scan_all(service) for f in page.findings]


@pytest.mark.usefixtures("before_the_rule")
def test_every_field_a_write_stores_is_scanned_and_flags_are_not_found(service: MemoryService) -> None:
    """Content, reason, agent name, session id, operation id and tags are each found and named with the first
    hidden character, tag character or stray variation selector; a clean entry, the flag of Scotland and an emoji's
    variation selector are looked at and not listed."""
    agent = AgentContext("/agents/a", "Helper" + HIDDEN)
    service.append(ALEX, "i", Scope.USER, None, "- likes tea" + HIDDEN)
    service.append(ALEX, "i", Scope.USER, None, "- a", WriteOptions(reason="said so" + HIDDEN))
    service.append(ALEX, "i", Scope.AGENT, agent, "- b")
    service.append(ALEX, "i", Scope.USER, None, "- c", WriteOptions(session_id="s" + HIDDEN))
    service.append(ALEX, "i", Scope.USER, None, "- d", WriteOptions(operation_id="o" + HIDDEN))
    service.append(ALEX, "i", Scope.USER, None, "- e", WriteOptions(tags=("drinks" + HIDDEN,)))
    service.append(ALEX, "i", Scope.USER, None, "- clean")
    service.append(ALEX, "i", Scope.USER, None, f"- supports {SCOTLAND} \u2764\ufe0f")
    service.append(ALEX, "i", Scope.USER, None, "- likes \U0001f600" + SELECTORS)
    (page,) = _scan_all(service)
    assert sorted(f.field for f in page.findings) == sorted(
        ["content", "reason", "agent_name", "session_id", "operation_id", "tags", "content"])
    assert [f.character for f in page.findings].count(HIDDEN[0]) == 6
    assert [f.character for f in page.findings if f.character != HIDDEN[0]] == [SELECTORS[0]]
    assert (page.owners_scanned, page.entries_scanned, page.continuation) == (1, 9, None)


@pytest.mark.usefixtures("before_the_rule")
def test_a_team_shared_entry_is_found_once_and_a_legacy_one_with_no_owner(service: MemoryService) -> None:
    """A team-shared entry is listed in its author's memory, not again as its copy in the shared partition; a
    legacy import, which only the shared partition holds, is listed under it."""
    service.append(ALEX, "i", Scope.USER, None, "- team lunch" + HIDDEN, WriteOptions(share=Share.TEAM))
    legacy = service.import_legacy("op", "i", Scope.USER, None, "- old rule" + HIDDEN)
    findings = [f for page in _scan_all(service) for f in page.findings]
    assert [(f.entry.key.upn, f.entry.share) for f in findings] == [(ALEX.upn, Share.TEAM),
                                                                    (SHARED_OWNER, Share.LEGACY)]
    assert findings[1].entry.id == legacy.id


@pytest.mark.usefixtures("before_the_rule")
def test_an_entry_a_pending_deletion_hides_is_not_listed_until_the_request_is_rejected(
    service: MemoryService,
) -> None:
    """The person's own forget hides the entry from every model, so the scan leaves it to the request; a
    rejection shows it to models again, and to the scan."""
    entry_id = service.append(ALEX, "i", Scope.USER, None, "- likes tea" + HIDDEN).entry_id
    request = service.forget(ALEX, "i", entry_id)
    assert _found(service) == []
    service.custody.reject("op", "i", request.request_id, "keep it")  # type: ignore[union-attr]
    assert _found(service) == [(ALEX.upn, "content", HIDDEN[0])]


@pytest.mark.usefixtures("before_the_rule")
def test_pages_read_every_memory_once_in_order(service: MemoryService) -> None:
    """Seven users read three at a time: pages of 3, 3 and 1, each user's finding once, and no continuation after
    the last; a user with many agents' memories is one memory. Seven read seven at a time is one page, with no
    empty page after it."""
    users = [Caller(f"user{n}@contoso.com") for n in range(7)]
    for user in users:
        service.append(user, "i", Scope.USER, None, "- x" + HIDDEN)
    for n in range(12):
        service.append(users[0], "i", Scope.AGENT, AgentContext(f"/agents/{n}"), "- clean")
    pages = _scan_all(service, limit=3)
    assert [p.owners_scanned for p in pages] == [3, 3, 1]
    assert [p.continuation is None for p in pages] == [False, False, True]
    assert [f.entry.key.upn for p in pages for f in p.findings] == [u.upn for u in users]
    assert [(p.owners_scanned, p.continuation) for p in _scan_all(service, limit=7)] == [(7, None)]
    assert service.hidden_text_page("other", limit=3) == HiddenTextScanPage([], 0, 0, None)


@pytest.mark.usefixtures("before_the_rule")
def test_a_page_reads_its_entry_budget_and_no_memory_is_skipped_or_read_twice(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a budget of 5 entries a page (10,000 in service), users of 4, 2, 6, 1 and 1 entries read 20 at a time:
    the first page reads the first user whole and one entry of the second, which does not fit in what is left,
    and ends inside its memory; the second reads its other entry and 4 of the third user's 6; the third reads the
    rest. No page reads more than 5 entries, every user's finding is listed once, in order, and each user is
    counted on the page that finishes it."""
    monkeypatch.setattr(hidden_text_scan, "ENTRIES_PER_PAGE", 5)
    users = [Caller(f"user{n}@contoso.com") for n in range(5)]
    for user, size in zip(users, (4, 2, 6, 1, 1), strict=True):
        service.append(user, "i", Scope.USER, None, "- x" + HIDDEN)
        for n in range(size - 1):
            service.append(user, "i", Scope.USER, None, f"- clean {n}")
    pages = _scan_all(service, limit=20)
    assert [(p.owners_scanned, p.entries_scanned, p.continuation is None) for p in pages] == [
        (1, 5, False), (1, 5, False), (3, 4, True)]
    assert [f.entry.key.upn for p in pages for f in p.findings] == [u.upn for u in users]


@pytest.mark.usefixtures("before_the_rule")
def test_a_memory_larger_than_a_page_is_read_in_parts_as_its_readers_see_it(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One user's 14 entries in two scopes, read 4 a page: every page reads at most 4 entries, each visible
    finding is listed once and in its scope's order, an entry a pending forget hides is not, nor one before the
    agent scope's newest replace (no reader sees it); an entry appended between two pages, after the place the
    scan has reached, is found on a later page."""
    monkeypatch.setattr(hidden_text_scan, "ENTRIES_PER_PAGE", 4)
    agent = AgentContext("/agents/a")
    user_ids = [service.append(ALEX, "i", Scope.USER, None, f"- u{n}" + (HIDDEN if n % 3 == 0 else "")).entry_id
                for n in range(8)]
    service.forget(ALEX, "i", user_ids[3])
    service.append(ALEX, "i", Scope.AGENT, agent, "- before the replace" + HIDDEN)
    service.import_markdown(ALEX, "i", Scope.AGENT, agent, "- a0" + HIDDEN, ImportMode.REPLACE)
    for n in range(1, 5):
        service.append(ALEX, "i", Scope.AGENT, agent, f"- a{n}" + ("" if n % 2 else HIDDEN))
    pages = [service.hidden_text_page("i", limit=20)]
    service.append(ALEX, "i", Scope.USER, None, "- late" + HIDDEN)
    while pages[-1].continuation is not None:
        pages.append(service.hidden_text_page("i", limit=20, continuation=pages[-1].continuation))
    # 13 visible entries: the user scope's 8 less the forgotten one, the late one, the agent scope's replace and 4.
    assert [(p.owners_scanned, p.entries_scanned) for p in pages] == [(0, 4), (0, 4), (0, 4), (1, 1)]
    found = [f.entry.content_markdown.removesuffix(HIDDEN) for f in _all_findings(pages)]
    assert sorted(found) == ["- a0", "- a2", "- a4", "- late", "- u0", "- u6"]


def _all_findings(pages: list[HiddenTextScanPage]) -> list[hidden_text_scan.HiddenTextFinding]:
    return [f for p in pages for f in p.findings]


@pytest.mark.usefixtures("before_the_rule")
def test_a_large_shared_partition_is_read_in_parts_and_only_its_legacy_entries_are_looked_at(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Team copies count toward a page's entries, since they are read, but are found in their authors' memories
    only: with a budget of 2, two legacy imports and four team entries are each listed once. A forget of a team
    entry while the scan is inside the shared partition holds its shared copy by author, which no window of the
    shared scope expresses, so the scan reads the rest of that scope whole (``stored_page`` answers None), from
    where it was: what it had read there is not listed again."""
    monkeypatch.setattr(hidden_text_scan, "ENTRIES_PER_PAGE", 2)
    legacy = [service.import_legacy("op", "i", Scope.USER, None, f"- old {n}" + HIDDEN).id for n in range(2)]
    team = [service.append(ALEX, "i", Scope.USER, None, f"- team {n}" + HIDDEN, WriteOptions(share=Share.TEAM))
            .entry_id for n in range(4)]
    expected = sorted([(ALEX.upn, e) for e in team] + [(SHARED_OWNER, e) for e in legacy])
    pages = _scan_all(service)
    assert sorted((f.entry.key.upn, f.entry.id) for f in _all_findings(pages)) == expected
    assert sum(p.entries_scanned for p in pages) == 4 + 2 and sum(p.owners_scanned for p in pages) == 2

    pages = [service.hidden_text_page("i", limit=20)]
    while not any(f.entry.key.upn == SHARED_OWNER for f in pages[-1].findings):
        pages.append(service.hidden_text_page("i", limit=20, continuation=pages[-1].continuation))
    assert pages[-1].continuation is not None  # inside the shared partition, its team copies still to read
    service.forget(ALEX, "i", team[1])
    while pages[-1].continuation is not None:
        pages.append(service.hidden_text_page("i", limit=20, continuation=pages[-1].continuation))
    assert sorted((f.entry.key.upn, f.entry.id) for f in _all_findings(pages)) == expected


@pytest.mark.parametrize("position", [["a", "b", "c"], ["a", "p", "0", "not a time", "x"], ["a", "p", "2", T, "x"],
                                      ["a", "p", "0", T, "x", "y"]])
def test_a_continuation_inside_a_memory_that_this_listing_did_not_make_is_refused(
    service: MemoryService, position: list[str],
) -> None:
    with pytest.raises(InvalidInput) as refused:
        service.hidden_text_page("i", limit=5, continuation=encode_token(hidden_text_scan.LISTING, position))
    assert refused.value.code == "invalid_continuation"


@pytest.mark.parametrize("limit", [0, 101])
def test_a_page_size_outside_one_to_a_hundred_is_refused(service: MemoryService, limit: int) -> None:
    with pytest.raises(InvalidInput) as refused:
        service.hidden_text_page("i", limit=limit)
    assert refused.value.code == "invalid_limit"


def test_another_listings_continuation_is_refused(service: MemoryService) -> None:
    with pytest.raises(InvalidInput) as refused:
        service.hidden_text_page("i", limit=5, continuation=encode_token("audit", ["x"]))
    assert refused.value.code == "invalid_continuation"


@pytest.mark.usefixtures("before_the_rule")
def test_an_operator_asks_to_forget_a_finding_and_the_sweep_erases_it(service: MemoryService,
                                                                       store: SqliteMemoryStore) -> None:
    """The operator's request is pending like the person's own: the entry is hidden at once, named to the
    operator's account in the request and the trail, and erased after approval and the sweep."""
    entry_id = service.append(ALEX, "i", Scope.USER, None, "- likes tea" + HIDDEN).entry_id
    request = service.custody.request_forget_of("op", "i", ALEX.upn, entry_id)
    assert (request.kind, request.status, request.requested_by, request.entry_id) == (
        DeletionKind.FORGET, DeletionStatus.PENDING, "op", entry_id)
    assert service.entries(ALEX, "i", Scope.USER, None) == []
    assert [e.action for e in service.audit_trail("i", ALEX.upn)][-1] == "forget_requested"
    assert service.audit_trail("i", ALEX.upn)[-1].actor == "op"
    service.custody.approve("op", "i", request.id)
    service.custody.sweep(actor="op", instance_id="i")
    assert store.get_entry("i", ALEX.upn, entry_id) is None  # erased, not only hidden


def test_forgetting_what_the_user_has_not_got_is_not_found(service: MemoryService) -> None:
    """An unknown id, another user's entry named under the wrong user, and an entry already held by a pending
    request are each ``NotFound``, and no request is filed."""
    alex_entry = service.append(ALEX, "i", Scope.USER, None, "- a").entry_id
    held = service.append(BOB, "i", Scope.USER, None, "- b").entry_id
    service.forget(BOB, "i", held)
    for upn, entry_id in ((ALEX.upn, "nope"), (BOB.upn, alex_entry), (BOB.upn, held)):
        with pytest.raises(NotFound):
            service.custody.request_forget_of("op", "i", upn, entry_id)
    assert [r.requested_by for r in service.custody.list("i")] == [BOB.upn]
