"""How the SQLite store's rows map to the domain's profiles and entries, and back."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, TypeVar

from memory_core.domain.errors import Unavailable
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Share
from memory_core.domain.store import EntryFacts, EntryWindow

T = TypeVar("T")

# Read by position: sqlite3.Row lookups by name dominate the cost of a large read.
ENTRY_COLUMNS = (
    "id, profile_id, kind, content_markdown, created_on, author_upn, author_user_id, agent_name,"
    " reason, session_id, operation_id, tags, share, content_sha256"
)
"""The columns ``entry_from_row`` reads, in its order (the entry's id first, its profile id second)."""
_KINDS = {k.value: k for k in EntryKind}
_SHARES = {s.value: s for s in Share}


def iso(moment: datetime) -> str:
    """A time as stored: ISO 8601 with microseconds, so text order is time order for one offset."""
    return moment.isoformat(timespec="microseconds")


def parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def profile_values(profile: MemoryProfile, etag: str) -> tuple[object, ...]:
    """A ``profiles`` row, in column order, for ``profile`` with a new ``etag``."""
    key = profile.key
    return (
        key.instance_id,
        key.upn,
        key.profile_id,
        key.scope.value,
        key.agent_object_id,
        profile.name,
        profile.user_name,
        profile.agent_name,
        iso(profile.created_on),
        iso(profile.updated_on),
        iso(profile.cleared_on) if profile.cleared_on else None,
        etag,
    )


def profile_from_row(key: ProfileKey, row: Any) -> MemoryProfile:
    """The profile of a ``profiles`` row (read by name). Raises ``Unavailable`` when it has no timestamps."""
    created = parse(row["created_on"])
    updated = parse(row["updated_on"])
    if created is None or updated is None:
        raise Unavailable("a memory profile in the SQLite store is damaged (no timestamps)")
    return MemoryProfile(
        key=key,
        name=row["name"],
        user_name=row["user_name"],
        agent_name=row["agent_name"],
        created_on=created,
        updated_on=updated,
        cleared_on=parse(row["cleared_on"]),
        etag=row["etag"],
    )


def entry_values(entry: MemoryEntry) -> tuple[object, ...]:
    """An ``entries`` row, in column order, for ``entry``."""
    key = entry.key
    return (
        entry.id,
        key.instance_id,
        key.upn,
        key.profile_id,
        key.scope.value,
        key.agent_object_id,
        entry.kind.value,
        entry.content_markdown,
        iso(entry.created_on),
        entry.author_upn,
        entry.author_user_id,
        entry.agent_name,
        entry.reason,
        entry.session_id,
        entry.operation_id,
        json.dumps(list(entry.tags)),
        entry.share.value,
        entry.content_sha256,
    )


def entry_from_row(key: ProfileKey, row: Sequence[Any]) -> MemoryEntry:
    """The entry of ``key`` whose ``ENTRY_COLUMNS`` are ``row``."""
    (entry_id, _, kind, content, created, author, author_id, agent_name,
     reason, session_id, operation_id, tags, share, sha) = row
    return MemoryEntry(
        id=entry_id,
        key=key,
        content_markdown=content,
        kind=_KINDS[kind],
        created_on=datetime.fromisoformat(created),
        author_upn=author,
        author_user_id=author_id,
        agent_name=agent_name,
        reason=reason,
        session_id=session_id,
        operation_id=operation_id,
        tags=tuple(json.loads(tags)) if tags != "[]" else (),
        share=_SHARES[share],
        content_sha256=sha,
    )


FACT_COLUMNS = "id, created_on, share, author_upn"
"""The columns ``facts_from_row`` reads, in its order: no entry's text."""


def facts_from_row(row: Sequence[Any]) -> EntryFacts:
    """The ``EntryFacts`` whose ``FACT_COLUMNS`` are ``row``."""
    entry_id, created, share, author = row
    return EntryFacts(entry_id, datetime.fromisoformat(created), _SHARES[share], author)


def in_list(values: Sequence[T]) -> tuple[str, list[T]]:
    """The ``?`` marks of an ``IN (...)`` list of ``values`` (at least one), and the values to bind to them.

    The list is padded to the next power of two by repeating its last value (``IN`` ignores a repeat): a statement
    that takes lists of every length then has a few texts, not one a length, and ``sqlite3``'s cache of prepared
    statements (128 texts a connection) keeps them all instead of preparing its hot statements again. A list of one
    stays ``?``, the text an equality's plan was made for.
    """
    size = 1 << (len(values) - 1).bit_length()
    return ",".join("?" * size), [*values, *[values[-1]] * (size - len(values))]


def id_arrays(ids: Collection[str]) -> tuple[str, str | None]:
    """The JSON arrays that name ``ids`` exactly in SQL, each a single parameter whatever the count: those without a
    NUL as they are (``json_each``'s ``value``, to compare with ``id``), and those with one as the hex of their UTF-8
    (to compare with ``hex(id)``), or None when no id holds a NUL.

    SQLite before 3.45 (3.40.1 here) reads a JSON string only up to a ``\\u0000``, so ``json_each`` answered ``x``
    for ``x\\0y``: the entry ``x`` was erased or left out in its place. Hex is read the same on every version and
    ``hex()`` takes a value's every byte (``sqlite_records._field_is_one_of`` meets the same cut in a JSON field, where
    the field's JSON text is there to compare; an entry's id is a plain column). A text that is not UTF-8 (a lone
    surrogate) is written with ``surrogatepass``, so it names nothing, as no stored id can hold it; a high and a low
    surrogate side by side are first joined into the character they spell, as ``json.dumps`` and the Cosmos DB store
    read them, so an id names the same entry with or without a NUL on both stores. Both arrays are sorted, so one set
    of ids has one text."""
    whole = sorted(i for i in ids if "\0" not in i)
    with_nul = sorted(_utf8_joined(i).hex().upper() for i in ids if "\0" in i)
    return json.dumps(whole), json.dumps(with_nul) if with_nul else None


def _utf8_joined(text: str) -> bytes:
    """``text``'s UTF-8 with surrogate pairs joined (what JSON reads ``"\\ud83d\\ude00"`` as) and lone ones kept."""
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined.encode("utf-8", "surrogatepass")


def id_not_in(ids: Collection[str], params: list[object]) -> str:
    """The condition keeping rows whose ``id`` is none of ``ids``, exactly (``id_arrays``), its parameters added to
    ``params``; ids without a NUL alone give the one ``json_each`` test that was there before."""
    whole, by_hex = id_arrays(ids)
    params.append(whole)
    if by_hex is None:
        return "id NOT IN (SELECT value FROM json_each(?))"
    params.append(by_hex)
    return "id NOT IN (SELECT value FROM json_each(?)) AND hex(id) NOT IN (SELECT value FROM json_each(?))"


def profiles_filter(keys: Sequence[ProfileKey]) -> tuple[str, list[object]]:
    """The WHERE clause (and its parameters) selecting the rows of ``keys``' profiles, in ``profiles`` or
    ``entries``. ``keys`` are of one partition (the first key's), at least one; their ids are bound as an
    ``in_list``, so the clause has a few texts whatever their count."""
    marks, ids = in_list([k.profile_id for k in keys])
    return f"instance_id=? AND upn=? AND profile_id IN ({marks})", [keys[0].instance_id, keys[0].upn, *ids]


def window_filter(window: EntryWindow) -> tuple[str, list[object]]:
    """The WHERE clause (and its parameters) selecting the entries of ``window``."""
    key = window.key
    where = "instance_id=? AND upn=? AND profile_id=?"
    params: list[object] = [key.instance_id, key.upn, key.profile_id]
    if window.after is not None:
        where += " AND created_on>?"
        params.append(iso(window.after))
    if window.up_to is not None:
        where += " AND created_on<=?"
        params.append(iso(window.up_to))
    if window.start is not None:
        at = iso(window.start[0])
        where += " AND (created_on>? OR (created_on=? AND id>=?))"
        params += [at, at, window.start[1]]
    if window.excluded_ids:
        where += " AND " + id_not_in(window.excluded_ids, params)
    return where, params
