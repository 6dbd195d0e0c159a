"""Search: BM25 ranking rules, the SQLite FTS5 index, and that an index never shows what a read would not."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope, Share
from memory_core.domain.search import FullTextIndex, search_entries
from memory_core.domain.service import (
    DeletionMode,
    ImportMode,
    MemoryService,
    PendingDeletion,
    WriteOptions,
)
from memory_core.domain.sharing import SharingPolicy

ALEX = Caller(upn="alex@contoso.com")
BEA = Caller(upn="bea@contoso.com")
KEY = ProfileKey("i", ALEX.upn, Scope.USER)
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _entry(n: int, text: str, tags: tuple[str, ...] = ()) -> MemoryEntry:
    return MemoryEntry(f"e{n}", KEY, text, EntryKind.APPEND, T0 + timedelta(seconds=n), ALEX.upn, tags=tags)


# -- ranking rules (the in-memory ranking the Cosmos store uses) --------------------------------


def test_one_entry_scores_above_zero() -> None:
    """With a single entry, a match has a positive score (rank-bm25 gave a negative one)."""
    (hit,) = search_entries([_entry(1, "likes green tea")], "tea", (), 10)
    assert hit.score > 0


def test_a_term_in_one_of_two_entries_scores_above_zero() -> None:
    """With two entries and the term in one, the match scores above zero (rank-bm25's IDF gave 0)."""
    hits = search_entries([_entry(1, "likes green tea"), _entry(2, "works in Oslo")], "tea", (), 10)
    assert [h.entry.id for h in hits] == ["e1"] and hits[0].score > 0


def test_a_term_in_every_entry_still_scores_above_zero() -> None:
    hits = search_entries([_entry(1, "tea at nine"), _entry(2, "tea at noon")], "tea", (), 10)
    assert len(hits) == 2 and all(h.score > 0 for h in hits)


def test_a_query_word_finds_longer_forms_of_it() -> None:
    """"train" finds "trains" and "training" (prefix terms)."""
    hits = search_entries([_entry(1, "takes trains to work"), _entry(2, "training for a marathon"), _entry(3, "bus")],
                          "train", (), 10)
    assert {h.entry.id for h in hits} == {"e1", "e2"}


def test_more_occurrences_and_rarer_terms_rank_higher() -> None:
    entries = [_entry(1, "tea cake"), _entry(2, "tea tea"), _entry(3, "coffee tea"), _entry(4, "coffee cake")]
    assert next(h.entry.id for h in search_entries(entries, "tea", (), 10)) == "e2"
    assert next(h.entry.id for h in search_entries(entries, "coffee tea", (), 10)) == "e3"


def test_ties_break_newest_first_and_tags_narrow() -> None:
    entries = [_entry(1, "tea", ("drinks",)), _entry(2, "tea"), _entry(3, "tea", ("drinks",))]
    assert [h.entry.id for h in search_entries(entries, "tea", (), 10)] == ["e3", "e2", "e1"]
    assert [h.entry.id for h in search_entries(entries, "tea", ("drinks",), 10)] == ["e3", "e1"]
    assert [h.entry.id for h in search_entries(entries, "", ("drinks",), 1)] == ["e3"]


# -- the SQLite index: same rules, and only what a read shows ------------------------------------


class RankedInMemory:
    """The SQLite store without its index: the service ranks every loaded entry itself (as on Cosmos)."""

    def __init__(self, inner: SqliteMemoryStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "search_index":
            raise AttributeError(name)
        return getattr(self.inner, name)


@pytest.fixture(params=["fts5 index", "in-memory ranking"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    inner = SqliteMemoryStore(tmp_path / "s.sqlite3")
    yield inner if request.param == "fts5 index" else RankedInMemory(inner)
    inner.close()


def _service(store: Any, mode: DeletionMode = DeletionMode.OPERATOR_APPROVAL,
             policy: SharingPolicy = SharingPolicy.PRIVATE) -> MemoryService:
    return MemoryService(store, deletion_mode=mode, default_sharing=policy)


def _found(service: MemoryService, caller: Caller, query: str, scope: Scope = Scope.USER) -> list[str]:
    return [h.entry.content_markdown for h in service.search(caller, "i", scope, None, query)]


def test_the_sqlite_store_searches_its_index(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "x.sqlite3")
    assert isinstance(store, FullTextIndex)
    store.close()


def test_index_ranks_positively_and_stems_from_the_first_entry(store: Any) -> None:
    service = _service(store)
    service.append(ALEX, "i", Scope.USER, None, "takes trains to work")
    (hit,) = service.search(ALEX, "i", Scope.USER, None, "train")
    assert hit.score > 0
    service.append(ALEX, "i", Scope.USER, None, "likes the train station, trains every day")
    service.append(ALEX, "i", Scope.USER, None, "drinks tea")
    hits = service.search(ALEX, "i", Scope.USER, None, "train")
    assert [h.entry.content_markdown for h in hits] == ["likes the train station, trains every day", "takes trains to work"]
    assert all(h.score > 0 for h in hits)


def test_query_syntax_is_plain_text(store: Any) -> None:
    """FTS5 operators, quotes and column filters in a query are words, never syntax or a failure."""
    service = _service(store)
    service.append(ALEX, "i", Scope.USER, None, "near the content of AND gates")
    for query in ['"', 'NEAR(a b)', "content_markdown: gates", "*", "AND OR NOT", "gat*", "(((", "^gates"]:
        service.search(ALEX, "i", Scope.USER, None, query)
    assert _found(service, ALEX, "content_markdown: gates") == ["near the content of AND gates"]


def test_pending_forget_and_clear_hide_matches_and_rejection_restores_them(store: Any) -> None:
    service = _service(store)
    service.append(ALEX, "i", Scope.USER, None, "pineapple pizza")
    kept = service.append(ALEX, "i", Scope.USER, None, "pineapple juice")
    pending = service.forget(ALEX, "i", kept.entry_id or "")
    assert isinstance(pending, PendingDeletion)
    assert _found(service, ALEX, "pineapple") == ["pineapple pizza"]
    service.custody.reject("op", "i", pending.request_id, "no")
    assert sorted(_found(service, ALEX, "pineapple")) == ["pineapple juice", "pineapple pizza"]
    service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert _found(service, ALEX, "pineapple") == []
    service.append(ALEX, "i", Scope.USER, None, "pineapple again")
    assert _found(service, ALEX, "pineapple") == ["pineapple again"]


def test_erased_and_replaced_memory_is_not_found(store: Any) -> None:
    service = _service(store, DeletionMode.IMMEDIATE)
    first = service.append(ALEX, "i", Scope.USER, None, "kiwi one")
    service.append(ALEX, "i", Scope.USER, None, "kiwi two")
    service.forget(ALEX, "i", first.entry_id or "")
    assert _found(service, ALEX, "kiwi") == ["kiwi two"]
    service.import_markdown(ALEX, "i", Scope.USER, None, "kiwi three", ImportMode.REPLACE)
    assert _found(service, ALEX, "kiwi") == ["kiwi three"]
    service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert _found(service, ALEX, "kiwi") == []


def test_replace_hides_older_matches_without_being_a_match_itself(store: Any) -> None:
    """The replace entry decides visibility even when it does not contain the query term."""
    service = _service(store, DeletionMode.IMMEDIATE)
    service.append(ALEX, "i", Scope.USER, None, "mango")
    before = datetime.now(UTC)
    service.import_markdown(ALEX, "i", Scope.USER, None, "papaya", ImportMode.REPLACE)
    assert _found(service, ALEX, "mango") == []
    assert before  # the replace is newer than the mango entry


def test_others_memory_is_found_only_as_the_sharing_policy_allows(store: Any) -> None:
    private = _service(store, DeletionMode.IMMEDIATE)
    team = _service(store, DeletionMode.IMMEDIATE, SharingPolicy.TEAM)
    private.append(ALEX, "i", Scope.USER, None, "alex private avocado")
    private.append(ALEX, "i", Scope.USER, None, "alex team avocado", WriteOptions(share=Share.TEAM))
    assert _found(private, BEA, "avocado") == []
    assert _found(team, BEA, "avocado") == ["alex team avocado"]
    assert _found(team, ALEX, "avocado").count("alex team avocado") == 1  # own copy not doubled
    private.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert _found(team, BEA, "avocado") == []
    assert _found(team, BEA, "avocado", ) == _found(private, BEA, "avocado")


def test_another_instance_or_user_never_matches(store: Any) -> None:
    service = _service(store)
    service.append(ALEX, "i", Scope.USER, None, "secret recipe walnut")
    service.append(ALEX, "other", Scope.USER, None, "walnut elsewhere")
    assert _found(service, BEA, "walnut") == []
    assert _found(service, ALEX, "walnut") == ["secret recipe walnut"]


def _downgrade_to_v2(path: Path) -> None:
    db = sqlite3.connect(path)
    for name in ("entries_fts_insert", "entries_fts_delete", "entries_fts_update"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE entries_fts")
    db.execute("PRAGMA user_version=2")
    db.commit()
    db.close()


def test_a_store_from_before_the_index_is_indexed_on_open(tmp_path: Path) -> None:
    """Upgrading a database written before the index indexes what it already holds."""
    path = tmp_path / "old.sqlite3"
    store = SqliteMemoryStore(path)
    _service(store).append(ALEX, "i", Scope.USER, None, "old lychee fact")
    store.close()
    _downgrade_to_v2(path)
    reopened = SqliteMemoryStore(path)
    try:
        assert _found(_service(reopened), ALEX, "lychee") == ["old lychee fact"]
    finally:
        reopened.close()




def test_the_index_stems_both_ways(tmp_path: Path) -> None:
    """The SQLite index stems with Porter: "trains" also finds "train", and "running" finds "runs"."""
    store = SqliteMemoryStore(tmp_path / "stem.sqlite3")
    service = _service(store)
    service.append(ALEX, "i", Scope.USER, None, "the train leaves at nine")
    service.append(ALEX, "i", Scope.USER, None, "runs every morning")
    assert _found(service, ALEX, "trains") == ["the train leaves at nine"]
    assert _found(service, ALEX, "running") == ["runs every morning"]
    store.close()


def test_a_common_term_pages_past_hidden_matches(store: Any) -> None:
    """The best matches are hidden (pending deletion): search pages on until it has visible ones."""
    service = _service(store)
    for i in range(120):  # more than two pages of better matches, all hidden
        service.append(ALEX, "i", Scope.USER, None, f"olive olive olive {i}")
    hidden = service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert isinstance(hidden, PendingDeletion)
    for i in range(3):
        service.append(ALEX, "i", Scope.USER, None, f"olive and many other words to lower the score {i}")
    hits = service.search(ALEX, "i", Scope.USER, None, "olive", limit=2)
    assert [h.entry.content_markdown[-1] for h in hits] == ["2", "1"]
    assert len(service.search(ALEX, "i", Scope.USER, None, "olive", limit=10)) == 3
