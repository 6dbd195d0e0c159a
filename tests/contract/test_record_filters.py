"""The store contract of ``MemoryStore.page_records``' filters: ``key_suffixes`` (which record ids end in one of
them) and ``where_in`` (whose data field equals one of some texts).

``hold_requests.names_stored`` finds a deletion request by both (its data's id, or a key ``…~name``), so a store
that answered another set than the other would list a hold as orphaned on one store and not on the other. Every
case runs on every store (the ``store`` fixture of ``conftest.py``: SQLite, and Cosmos DB through the real SDK
against the Cosmos protocol server). Ids start with a distinct ``tNN~`` so the order both stores answer in is
decided before any character one of them encodes (Cosmos DB sorts its percent-encoded item ids).
"""

from __future__ import annotations

import uuid

import pytest

from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore

UPN = "alex@contoso.com"


@pytest.fixture
def partition() -> Partition:
    return Partition(f"suf-{uuid.uuid4().hex[:8]}", UPN)


def _put(store: MemoryStore, partition: Partition, ids: list[str]) -> None:
    for record_id in ids:
        store.put_record(Record(partition, RecordKind.DELETION_REQUEST, record_id, {}))


def _ending(store: MemoryStore, partition: Partition, *suffixes: str, after: str | None = None) -> list[str]:
    return [r.id for r in store.page_records(partition, RecordKind.DELETION_REQUEST, limit=50, after=after,
                                             key_suffixes=suffixes)]


def test_page_records_with_key_suffixes_answers_only_ids_ending_in_one_exactly(
    store: MemoryStore, partition: Partition,
) -> None:
    """``key_suffixes`` keeps the ids that end in one of them, case and all, with ``%``, ``_`` and ``\\`` as plain
    characters (no pattern), in id order after ``after``; another kind's or partition's record of that id is not
    answered."""
    ids = ["t1~keyed", "t2~KEYED", "t3~not-keyed", "t4~keyed~x", "t5~ke%ed", "t6~ke_ed", "t7~keyed", "keyed",
           "t8~a\\b"]
    _put(store, partition, ids)
    store.put_record(Record(partition, RecordKind.AUDIT, "t0~keyed", {}))
    store.put_record(Record(Partition(partition.instance_id, "blake@contoso.com"), RecordKind.DELETION_REQUEST,
                            "t0~keyed", {}))

    def ending(*suffixes: str, after: str | None = None) -> list[str]:
        return _ending(store, partition, *suffixes, after=after)

    assert ending("~keyed") == ["t1~keyed", "t7~keyed"]
    assert ending("~keyed", after="t1~keyed") == ["t7~keyed"]
    assert ending("~ke%ed") == ["t5~ke%ed"] and ending("~ke_ed") == ["t6~ke_ed"]
    assert ending("\\b") == ["t8~a\\b"]
    assert ending("~nothing") == [] and ending() == []
    assert ending("~keyed", "~KEYED", "~nothing") == ["t1~keyed", "t2~KEYED", "t7~keyed"]
    with pytest.raises(ValueError):
        ending(*[f"~{n}" for n in range(101)])


def test_an_id_holding_a_nul_ends_in_what_follows_the_nul_and_not_in_what_precedes_it(
    store: MemoryStore, partition: Partition,
) -> None:
    """A NUL (U+0000) is a character like any other: an id holding one ends in its whole tail, NUL included, and in
    nothing that stops at the NUL (SQLite's ``length`` and ``substr`` of text stop there: ``t1~a\\0b`` was answered
    for ``~a`` and not for ``~a\\0b``)."""
    ids = ["t01~a\0b", "t02~a", "t03~b", "t04~\0", "t05~\0\0", "t06~a\0", "t07~\0b"]
    _put(store, partition, ids)

    def ending(*suffixes: str) -> list[str]:
        return _ending(store, partition, *suffixes)

    assert ending("~a\0b") == ["t01~a\0b"]
    assert ending("\0b") == ["t01~a\0b", "t07~\0b"]
    assert ending("~a") == ["t02~a"]
    assert ending("b") == ["t01~a\0b", "t03~b", "t07~\0b"]
    assert ending("~\0") == ["t04~\0"]
    assert ending("\0") == ["t04~\0", "t05~\0\0", "t06~a\0"]
    assert ending("\0\0") == ["t05~\0\0"]
    assert ending("t01~a\0b", "~\0\0") == ["t01~a\0b", "t05~\0\0"]
    assert [r.id for r in store.page_records(partition, RecordKind.DELETION_REQUEST, limit=50)] == ids


def test_quotes_backslashes_and_pattern_characters_are_matched_as_themselves(
    store: MemoryStore, partition: Partition,
) -> None:
    """No character of a suffix is a pattern, an escape or a quote to either store's query."""
    ids = ["t01~it's", "t02~its", "t03~100%", "t04~1000", "t05~a_b", "t06~axb", "t07~a\\", "t08~a\\\\", "t09~''",
           "t10~%_\\'"]
    _put(store, partition, ids)

    def ending(*suffixes: str) -> list[str]:
        return _ending(store, partition, *suffixes)

    assert ending("'s") == ["t01~it's"]
    assert ending("%") == ["t03~100%"] and ending("0%") == ["t03~100%"]
    assert ending("_b") == ["t05~a_b"]
    assert ending("\\") == ["t07~a\\", "t08~a\\\\"] and ending("\\\\") == ["t08~a\\\\"]
    assert ending("'") == ["t09~''", "t10~%_\\'"] and ending("~''") == ["t09~''"]
    assert ending("%_\\'") == ["t10~%_\\'"]
    assert ending("' OR 1=1 --", "%%", "_") == []


def test_characters_beyond_ascii_are_matched_by_code_point_without_folding_or_normalizing(
    store: MemoryStore, partition: Partition,
) -> None:
    """A suffix is compared code point by code point: a composed ``é`` is not ``e`` with a combining accent, ``É``
    is not ``é``, and a character outside the BMP (four bytes in UTF-8, two code units in UTF-16) is one whole."""
    ids = ["t01~caf\u00e9", "t02~cafe\u0301", "t03~CAF\u00c9", "t04~\U0001f600", "t05~x\U0001f600", "t06~\u00e9"]
    _put(store, partition, ids)

    def ending(*suffixes: str) -> list[str]:
        return _ending(store, partition, *suffixes)

    assert ending("\u00e9") == ["t01~caf\u00e9", "t06~\u00e9"]
    assert ending("\u0301") == ["t02~cafe\u0301"] and ending("e\u0301") == ["t02~cafe\u0301"]
    assert ending("\u00c9") == ["t03~CAF\u00c9"]
    assert ending("\U0001f600") == ["t04~\U0001f600", "t05~x\U0001f600"]
    assert ending("~\U0001f600") == ["t04~\U0001f600"]


def test_long_ids_and_suffixes_longer_than_any_id(store: MemoryStore, partition: Partition) -> None:
    """An id as long as every store keeps (200 characters: Cosmos DB's item id, prefix and percent-encoding
    included, stays within its 255) ends in any of its tails, the whole id included; a suffix longer than every id
    (10,000 characters) matches none and is not refused."""
    long_id = "t01~" + "x" * 190 + "~tail\0"
    ids = [long_id, "t02~tail\0"]
    _put(store, partition, ids)

    def ending(*suffixes: str) -> list[str]:
        return _ending(store, partition, *suffixes)

    assert ending("~tail\0") == ids
    assert ending(long_id) == [long_id] and ending(long_id[1:]) == [long_id]
    assert ending("x" + long_id) == []
    assert ending("x" * 10_000, "y" * 10_000 + "~tail\0") == []


def test_an_empty_suffix_matches_every_id(store: MemoryStore, partition: Partition) -> None:
    """Every id ends in the empty string, on both stores alike (one answered nothing for it)."""
    ids = ["t01~a", "t02~\0", "t03~"]
    _put(store, partition, ids)
    assert _ending(store, partition, "") == ids
    assert _ending(store, partition, "", "~a") == ids


def test_an_id_or_suffix_holding_a_lone_surrogate_is_refused_and_nothing_is_stored(
    store: MemoryStore, partition: Partition,
) -> None:
    """Text UTF-8 cannot encode (a lone surrogate, as ``surrogateescape`` makes of an undecodable byte) is stored
    by neither store: ``ValueError`` (``UnicodeEncodeError``) for the id, and for a suffix, which could otherwise
    only match half of a character outside the BMP on a store that compares UTF-16 code units."""
    _put(store, partition, ["t01~\U0001f600"])
    for record_id in ("t02~\udcff", "t03~\ud83d", "\ude00"):
        with pytest.raises(ValueError):
            store.put_record(Record(partition, RecordKind.DELETION_REQUEST, record_id, {}))
    for suffix in ("\ude00", "~\udcff"):
        with pytest.raises(ValueError):
            _ending(store, partition, suffix)
    assert [r.id for r in store.page_records(partition, RecordKind.DELETION_REQUEST, limit=50)] == ["t01~\U0001f600"]


def test_where_in_answers_the_records_whose_field_is_one_of_the_values_in_id_order_after_after(
    store: MemoryStore, partition: Partition,
) -> None:
    """Exact text equality (case, ``%``, ``_``, quotes as themselves; a number is not its digits), combined with
    ``where``, ``after``, ``descending`` and ``key_suffixes``; no values: no record; past 100 values or a field name
    that is not an identifier: ``ValueError``."""
    data = {"t01~x": {"id": "a", "s": "p"}, "t02~y": {"id": "A", "s": "p"}, "t03~z": {"id": "b", "s": "q"},
            "t04~x": {"id": "a", "s": "q"}, "t05~w": {"id": "%"}, "t06~v": {"id": "it's"}, "t07~u": {"id": 5},
            "t08~t": {"other": "a"}, "t09~s": {"id": "c"}}
    for record_id, fields in data.items():
        store.put_record(Record(partition, RecordKind.DELETION_REQUEST, record_id, fields))
    store.put_record(Record(partition, RecordKind.AUDIT, "t00~a", {"id": "a"}))

    def named(*values: str, **options: object) -> list[str]:
        return [r.id for r in store.page_records(partition, RecordKind.DELETION_REQUEST, limit=50,
                                                 where_in=("id", values), **options)]  # type: ignore[arg-type]

    assert named("a") == ["t01~x", "t04~x"]
    assert named("a", "b", "nothing") == ["t01~x", "t03~z", "t04~x"]
    assert named("a", "b", after="t01~x") == ["t03~z", "t04~x"]
    assert named("a", "b", descending=True) == ["t04~x", "t03~z", "t01~x"]
    assert named("a", "b", after="t04~x", descending=True) == ["t03~z", "t01~x"]
    assert named("a", "b", where={"s": "q"}) == ["t03~z", "t04~x"]
    assert named("a", "b", key_suffixes=["~x"]) == ["t01~x", "t04~x"]
    assert named("%") == ["t05~w"] and named("it's") == ["t06~v"] and named("_", "'") == []
    assert named("5") == [] and named() == []
    assert [r.id for r in store.page_records(partition, RecordKind.DELETION_REQUEST, limit=2,
                                             where_in=("id", ["a", "b", "c"]))] == ["t01~x", "t03~z"]
    with pytest.raises(ValueError):
        named(*[str(n) for n in range(101)])
    with pytest.raises(ValueError):
        store.page_records(partition, RecordKind.DELETION_REQUEST, limit=5, where_in=("id') OR 1 --", ["a"]))


def test_a_nul_in_a_where_or_where_in_value_matches_only_that_exact_text_and_a_prefix_never_does(
    store: MemoryStore, partition: Partition,
) -> None:
    """A NUL is a character like any other in a field's value: ``where`` and ``where_in`` answer a record only for
    its field's whole text, and never for what precedes or follows a NUL in it (SQLite's ``json_extract`` stops at a
    NUL: it answered the record of ``a\\0b`` for ``a`` and none for ``a\\0b``). With escapes and characters beyond
    ASCII beside the NUL, and in pages of one."""
    data = {"t01~x": "a\0b", "t02~y": "a", "t03~z": "\0", "t04~w": "", "t05~v": "a\0", "t06~u": "\0b",
            "t07~t": "\u00e9\0\"\\\U0001f600", "t08~s": "\u00e9", "t09~r": "a\0b"}
    for record_id, value in data.items():
        store.put_record(Record(partition, RecordKind.DELETION_REQUEST, record_id, {"id": value, "s": value}))

    def named(*values: str, limit: int = 50, after: str | None = None) -> list[str]:
        return [r.id for r in store.page_records(partition, RecordKind.DELETION_REQUEST, limit=limit, after=after,
                                                 where_in=("id", values))]

    def where(value: str) -> list[str]:
        return [r.id for r in store.query_records(partition, RecordKind.DELETION_REQUEST, where={"s": value})]

    for value in sorted(set(data.values())):
        exact = [record_id for record_id, held in data.items() if held == value]
        assert named(value) == exact and where(value) == exact, repr(value)
    assert named("a\0b", "\0") == ["t01~x", "t03~z", "t09~r"]
    assert named("a\0b", limit=1) == ["t01~x"] and named("a\0b", limit=1, after="t01~x") == ["t09~r"]
    assert named("a", limit=1) == ["t02~y"] and named("a", limit=1, after="t02~y") == []
    assert named("a\0c") == named("a\0b\0") == named("\u00e9\0") == [] == where("a\0c") == where("\0\0")
