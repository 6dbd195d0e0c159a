"""The memory tool's kept entries after erasures on every store: whether a store brings them up to date from a log of
what it erased (SQLite, ``sqlite_erased_log``) or from the ids still stored (``present_entries``), no command ever
shows, edits or moves an erased fact, and an entry stored after an erasure always shows.

Each test reads through one ``MemoryService`` (the process that keeps) and erases through another over a second
store object on the same data (another process).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.cosmos_documents import entry_item_id
from memory_core.adapters.cosmos_stamp_item import ERASED_KEPT, stamp_item_id
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import MemoryCoreError
from memory_core.domain.identity import Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.stamped_answers import StampedAnswers
from memory_core.domain.store import MemoryStore
from tests.adapters.cosmos_support import cosmos_store as make_cosmos_store
from tests.adapters.cosmos_support import raw_container
from tests.support.cosmos_server import CosmosServer

INSTANCE = "files-erased"
SECRET = "the safe's code is 4417"


def _caller() -> Caller:
    return Caller(upn=f"files-{uuid.uuid4().hex[:10]}@contoso.com")


def _run(service: MemoryService, caller: Caller, **command: object) -> str:
    return MemoryFiles(service).execute(caller, INSTANCE, None, command).text


def _refusal(service: MemoryService, caller: Caller, **command: object) -> str:
    try:
        answer = _run(service, caller, **command)
    except MemoryCoreError as refused:
        return str(refused)
    return answer  # the memory tool answers a missing path with text, as the reference does


def _kept(service: MemoryService) -> StampedAnswers[Any]:
    assert service.file_entries is not None
    return service.file_entries


def _processes(stores: Callable[[], MemoryStore]) -> tuple[MemoryService, MemoryService]:
    reader = MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE)
    return reader, MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE)


def _never_shown(reader: MemoryService, caller: Caller, *paths: str) -> None:
    """Every command the model can run on ``paths`` after their erasure: none shows, edits or moves the fact."""
    listing = _run(reader, caller, command="view", path="/memories")
    for path in paths:
        assert path not in listing
        assert "does not exist" in _refusal(reader, caller, command="view", path=path)
        assert SECRET not in _refusal(reader, caller, command="str_replace", path=path, old_str="4417", new_str="0")
        assert SECRET not in _refusal(reader, caller, command="insert", path=path, insert_line=0, insert_text="x")
        _refusal(reader, caller, command="rename", old_path=path, new_path=f"/memories/moved-{uuid.uuid4().hex}.md")
    listing = _run(reader, caller, command="view", path="/memories")
    assert SECRET not in listing and "moved-" not in listing
    for line in listing.splitlines()[1:]:
        path = line.split("\t")[-1]
        if path.endswith(".md"):
            assert SECRET not in _run(reader, caller, command="view", path=path)


def test_a_file_another_process_deleted_is_never_shown_edited_or_moved(stores: Callable[[], MemoryStore]) -> None:
    (reader, writer), caller = _processes(stores), _caller()
    _run(reader, caller, command="create", path="/memories/safe.md", file_text=f"{SECRET}\n")
    _run(reader, caller, command="create", path="/memories/trips.md", file_text="Lisbon in May\n")
    assert SECRET in _run(reader, caller, command="view", path="/memories/safe.md")

    _run(writer, caller, command="delete", path="/memories/safe.md")

    _never_shown(reader, caller, "/memories/safe.md")
    assert "Lisbon in May" in _run(reader, caller, command="view", path="/memories/trips.md")


def test_an_appended_fact_another_process_forgot_is_never_shown_edited_or_moved(
    stores: Callable[[], MemoryStore]
) -> None:
    (reader, writer), caller = _processes(stores), _caller()
    kept = writer.append(caller, INSTANCE, Scope.USER, None, "- prefers trains").entry_id
    secret = writer.append(caller, INSTANCE, Scope.USER, None, f"- {SECRET}").entry_id
    _run(reader, caller, command="create", path="/memories/trips.md", file_text="Lisbon in May\n")
    assert SECRET in _run(reader, caller, command="view", path=f"/memories/appended/{secret}.md")

    writer.forget(caller, INSTANCE, str(secret))

    _never_shown(reader, caller, f"/memories/appended/{secret}.md")
    assert "prefers trains" in _run(reader, caller, command="view", path=f"/memories/appended/{kept}.md")


def test_an_edit_after_another_process_erased_the_file_it_edits_never_brings_the_fact_back(
    stores: Callable[[], MemoryStore]
) -> None:
    """The reader's kept entries hold the fact's version; the writer edits the fact out (its old version erased),
    then the reader edits the same file: the reader's edit starts from the writer's version."""
    (reader, writer), caller = _processes(stores), _caller()
    _run(reader, caller, command="create", path="/memories/safe.md", file_text=f"{SECRET}\nsecond line\n")
    _run(reader, caller, command="view", path="/memories/safe.md")

    _run(writer, caller, command="str_replace", path="/memories/safe.md", old_str=SECRET, new_str="no code kept")
    _run(reader, caller, command="str_replace", path="/memories/safe.md", old_str="second", new_str="2nd")
    _run(reader, caller, command="rename", old_path="/memories/safe.md", new_path="/memories/notes.md")

    text = _run(reader, caller, command="view", path="/memories/notes.md")
    assert "no code kept" in text and "2nd line" in text and SECRET not in text
    _never_shown(reader, caller, "/memories/safe.md")


def test_an_entry_stored_after_an_erasure_of_the_newest_one_shows(stores: Callable[[], MemoryStore]) -> None:
    """SQLite hands the next row the table's largest rowid plus one: once the newest row is erased, a new entry may
    take a number the reader's kept read had already seen. It still shows, and the erased one does not."""
    (reader, writer), caller = _processes(stores), _caller()
    writer.append(caller, INSTANCE, Scope.USER, None, "- prefers trains")
    _run(reader, caller, command="view", path="/memories")
    _run(writer, caller, command="create", path="/memories/safe.md", file_text=f"{SECRET}\n")
    _run(reader, caller, command="view", path="/memories")  # the reader keeps the newest row too
    _run(writer, caller, command="delete", path="/memories/safe.md")
    later = writer.append(caller, INSTANCE, Scope.USER, None, "- books aisle seats").entry_id

    assert "books aisle seats" in _run(reader, caller, command="view", path=f"/memories/appended/{later}.md")
    _never_shown(reader, caller, "/memories/safe.md")


def test_an_entry_stored_after_another_users_erasure_shows(stores: Callable[[], MemoryStore]) -> None:
    """A kept read's sequence is the user's own largest entry, never another user's: once that user's newest row is
    erased, this user's next entry may take a lower number, and it still shows, also to a create at its path."""
    (reader, writer), caller, other = _processes(stores), _caller(), _caller()
    _run(writer, caller, command="create", path="/memories/keep.md", file_text="keep\n")
    _run(writer, other, command="create", path="/memories/theirs.md", file_text="theirs\n")
    _run(writer, caller, command="create", path="/memories/gone.md", file_text=f"{SECRET}\n")
    _run(reader, caller, command="view", path="/memories")  # the reader keeps the caller's entries
    _run(writer, caller, command="delete", path="/memories/gone.md")  # the newest row left is the other user's
    _never_shown(reader, caller, "/memories/gone.md")  # brought up to date from the erasure
    _run(writer, other, command="delete", path="/memories/theirs.md")  # the newest row is the caller's first
    _run(writer, caller, command="create", path="/memories/new.md", file_text="books aisle seats\n")

    assert "books aisle seats" in _run(reader, caller, command="view", path="/memories/new.md")
    assert "already exists" in _refusal(reader, caller, command="create", path="/memories/new.md", file_text="x\n")
    assert "books aisle seats" in _run(writer, caller, command="view", path="/memories/new.md")


# -- the log is what brings them up to date, and a log that no longer reaches back is never trusted ------------------
# SQLite's is a table a trigger fills (``sqlite_erased_log``); Cosmos DB's is the partition stamp every erasing batch
# moves (``StoredStamp.erased``).


@pytest.fixture
def cosmos_stores(cosmos_account: CosmosServer) -> Iterator[Callable[[], MemoryStore]]:
    """Store objects over the session's Cosmos account, each as another process would open it, for what only
    Cosmos DB keeps (the stamp's log); every one made is closed after the test."""
    made: list[MemoryStore] = []

    def another() -> MemoryStore:
        made.append(make_cosmos_store(cosmos_account))
        return made[-1]
    yield another
    for store in made:
        store.close()


def _logged(stores: Callable[[], MemoryStore]) -> tuple[MemoryStore, MemoryService, MemoryService]:
    """The reader's store, the reader, and a writer in another process (its own store object on the same data)."""
    store = stores()
    reader = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    return store, reader, MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE)


def _no_listing(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def listed(*args: object) -> None:
        raise AssertionError("load_present listed every stored id")
    monkeypatch.setattr(store, "load_present", listed)


def _listings(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    present, calls = store.load_present, []  # type: ignore[attr-defined]

    def listed(*args: Any) -> Any:
        calls.append(args)
        return present(*args)
    monkeypatch.setattr(store, "load_present", listed)
    return calls


def _drop_oldest_logged(store: MemoryStore, caller: Caller, tmp_path: Path, cosmos: CosmosServer | None) -> None:
    """As a trim would: the oldest erasure the log keeps is dropped (SQLite's oldest row; the stamp's oldest id)."""
    if isinstance(store, SqliteMemoryStore):
        with sqlite3.connect(tmp_path / "stores.sqlite3") as db:  # the ``stores`` fixture's file
            db.execute("DELETE FROM erased_entries WHERE seq = (SELECT MIN(seq) FROM erased_entries)")
        return
    assert cosmos is not None
    with raw_container(cosmos) as container:
        stamp = container.read_item(stamp_item_id(caller.upn), partition_key=[INSTANCE, caller.upn])
        assert len(stamp["erased"]) >= 2
        stamp["erased"] = stamp["erased"][1:]
        container.replace_item(stamp["id"], stamp)


def _account(store: MemoryStore, request: pytest.FixtureRequest) -> CosmosServer | None:
    return None if isinstance(store, SqliteMemoryStore) else request.getfixturevalue("cosmos_account")


def test_kept_entries_are_brought_up_to_date_from_the_log_without_listing_every_id(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    (store, reader, writer), caller = _logged(stores), _caller()
    _run(reader, caller, command="create", path="/memories/safe.md", file_text=f"{SECRET}\n")
    _run(reader, caller, command="view", path="/memories")

    _no_listing(store, monkeypatch)
    _run(writer, caller, command="str_replace", path="/memories/safe.md", old_str=SECRET, new_str="no code kept")
    _run(writer, caller, command="create", path="/memories/trips.md", file_text="Lisbon in May\n")

    assert "no code kept" in _run(reader, caller, command="view", path="/memories/safe.md")
    assert "Lisbon in May" in _run(reader, caller, command="view", path="/memories/trips.md")
    assert _kept(reader).refreshed >= 1
    _never_shown(reader, caller)


def test_an_appended_fact_forgotten_elsewhere_is_dropped_by_the_log_alone(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    (store, reader, writer), caller = _logged(stores), _caller()
    kept = writer.append(caller, INSTANCE, Scope.USER, None, "- prefers trains").entry_id
    secret = writer.append(caller, INSTANCE, Scope.USER, None, f"- {SECRET}").entry_id
    _run(reader, caller, command="view", path="/memories")

    _no_listing(store, monkeypatch)
    writer.forget(caller, INSTANCE, str(secret))

    _never_shown(reader, caller, f"/memories/appended/{secret}.md")
    assert "prefers trains" in _run(reader, caller, command="view", path=f"/memories/appended/{kept}.md")


def test_the_log_no_longer_reaching_back_lists_what_is_stored(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    (store, reader, writer), caller = _logged(stores), _caller()
    _run(reader, caller, command="create", path="/memories/safe.md", file_text=f"{SECRET}\n")
    _run(reader, caller, command="view", path="/memories")
    _run(writer, caller, command="delete", path="/memories/safe.md")
    _run(writer, caller, command="create", path="/memories/other.md", file_text="x\n")
    _run(writer, caller, command="delete", path="/memories/other.md")
    _drop_oldest_logged(store, caller, tmp_path, _account(store, request))
    calls = _listings(store, monkeypatch)

    _never_shown(reader, caller, "/memories/safe.md", "/memories/other.md")
    assert calls


def test_cosmos_a_clear_of_more_than_the_stamp_keeps_lists_what_is_stored(
    cosmos_stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp keeps the newest ``ERASED_KEPT`` ids: a reader more erasures behind is not told which went, so it
    lists what is still stored, and a fact erased among the first ones never shows.
    (SQLite's log keeps 4,096 erasures of the file: ``tests/adapters/test_sqlite_erased_log.py``.)"""
    _a_reader_further_behind_than_the_stamp_lists_what_is_stored(cosmos_stores, monkeypatch)


def _a_reader_further_behind_than_the_stamp_lists_what_is_stored(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    (store, reader, writer), caller = _logged(stores), _caller()
    secret = writer.append(caller, INSTANCE, Scope.USER, None, f"- {SECRET}").entry_id
    for n in range(ERASED_KEPT):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- trip {n}")
    _run(reader, caller, command="view", path="/memories")
    writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    after = writer.append(caller, INSTANCE, Scope.USER, None, "- books aisle seats").entry_id
    calls = _listings(store, monkeypatch)

    _never_shown(reader, caller, f"/memories/appended/{secret}.md")
    assert "books aisle seats" in _run(reader, caller, command="view", path=f"/memories/appended/{after}.md")
    listing = _run(reader, caller, command="view", path="/memories/appended")
    assert [line for line in listing.splitlines() if line.endswith(".md")] == [
        line for line in listing.splitlines() if line.endswith(f"{after}.md")]
    assert calls


def _as_an_older_release_writes(cosmos: CosmosServer, caller: Caller, erasing: str | None = None) -> None:
    """A write of a release without the log (a rolling upgrade: the CoreAPI app and the MCP host on different
    releases): it erases ``erasing`` (an entry id) and rewrites the stamp as it knows it, without ``erasures`` and
    ``erased``."""
    with raw_container(cosmos) as container:
        pk = [INSTANCE, caller.upn]
        if erasing is not None:
            container.delete_item(entry_item_id(erasing), partition_key=pk)
        stamp = container.read_item(stamp_item_id(caller.upn), partition_key=pk)
        stamp["changes"] += 1
        stamp.pop("erasures", None)
        stamp.pop("erased", None)
        container.replace_item(stamp["id"], stamp)


def test_cosmos_a_fact_a_release_without_the_log_erased_is_never_shown(
    cosmos_stores: Callable[[], MemoryStore], cosmos_account: CosmosServer
) -> None:
    """A clear of entries stored before the count started runs the count ahead of the stamp's ``changes`` (one batch
    erased 30). Then a release without the log erases the fact the reader keeps and drops the count, and this
    release's next erasures start it again: from the clock, above the reader's mark, so the reader lists what is
    stored and never shows the fact. (Started again from ``changes``, the count reached the mark after a few
    forgets, and the log answered only the last of them: the fact and the first hotels forgotten showed on.)"""
    (_, reader, writer), caller = _logged(cosmos_stores), _caller()
    cosmos = cosmos_account  # (SQLite's log is a table that every release since it writes: ``sqlite_erased_log``)
    for n in range(30):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- trip {n}")
    _as_an_older_release_writes(cosmos, caller)  # these entries predate the count
    writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True)  # 30 erased in a few writes: the count ahead
    secret = writer.append(caller, INSTANCE, Scope.USER, None, f"- {SECRET}").entry_id
    hotels = [writer.append(caller, INSTANCE, Scope.USER, None, f"- hotel {n}").entry_id for n in range(19)]
    kept = writer.append(caller, INSTANCE, Scope.USER, None, "- prefers trains").entry_id
    assert SECRET in _run(reader, caller, command="view", path=f"/memories/appended/{secret}.md")

    _as_an_older_release_writes(cosmos, caller, erasing=str(secret))
    for hotel in hotels:  # this release: the count starts again, then grows by one a forget
        writer.forget(caller, INSTANCE, str(hotel))

    _never_shown(reader, caller, f"/memories/appended/{secret}.md", *(f"/memories/appended/{h}.md" for h in hotels))
    listing = _run(reader, caller, command="view", path="/memories/appended")
    assert [line.split("/")[-1] for line in listing.splitlines() if line.endswith(".md")] == [f"{kept}.md"]
