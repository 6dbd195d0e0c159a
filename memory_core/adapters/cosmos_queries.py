"""The Cosmos SQL the store sends: item queries of one partition, and the filters they are built from.

Every query filters on both partition key fields (``c.instance_id``, ``c.upn``) in
its WHERE clause as well as naming the partition key, so the test server (which
ignores the key on queries) answers like Cosmos DB. Every field filtered or sorted
on must be in the container's indexing policy (tests/infra/test_infra_indexing_policy.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memory_core.adapters import cosmos_documents as docs
from memory_core.domain.store import EntryWindow

# The partition's stamp rides along (a small item), so a write after a read knows its etag.
LOAD = (
    "SELECT * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND (ARRAY_CONTAINS(@profile_ids, c.profile_id) OR c.record_kind = @hold OR c.type = @stamp)"
)
# Profiles, holds and the entries stored after sequence @after (an extended snapshot). The
# partition's other profiles and their new entries come too (a few items; ``_states`` drops
# them): one flat OR, which the index serves and the test server's query engine runs quickly.
LOAD_AFTER = (
    "SELECT * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND (c.seq > @after OR c.type = @profile OR c.record_kind = @hold OR c.type = @stamp)"
)
# As LOAD, but an entry stored up to sequence @after comes as its id, type, profile and sequence only
# (``load_present``): what tells a kept read which of its entries are still stored, at a fraction of
# the bytes; those stored since come whole. An entry from before stamps (no ``seq``) counts as 0.
LOAD_PRESENT = (
    "SELECT VALUE (c.type = @entry AND (NOT IS_DEFINED(c.seq) OR c.seq <= @after))"
    ' ? {"id": c.id, "type": c.type, "profile_id": c.profile_id, "seq": c.seq} : c'
    " FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND (ARRAY_CONTAINS(@profile_ids, c.profile_id) OR c.record_kind = @hold OR c.type = @stamp)"
)
# Entries by item id (``load_present``, for an entry it listed but did not read whole).
ENTRIES_BY_ID = (
    "SELECT * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn AND c.type = @entry"
    " AND ARRAY_CONTAINS(@ids, c.id)"
)
LOAD_PARTITION = (
    "SELECT * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND (c.type = @profile OR c.type = @entry OR c.record_kind = @hold)"
)
# The same, at most @top items: a partition that fills them may hold more (``load_partition_within``).
LOAD_PARTITION_TOP = (
    "SELECT TOP @top * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND (c.type = @profile OR c.type = @entry OR c.record_kind = @hold)"
)
# What a purge covers (``partition_facts``): each profile's and entry's key fields, and the facts of each entry
# (``cosmos_documents.FACT_FIELDS``), never an entry's text; no ORDER BY: the store sorts the answer.
PARTITION_FACTS = (
    "SELECT c.type, c.scope, c.agent_object_id, c.id, c.created_on, c.share, c.author_upn FROM c"
    " WHERE c.instance_id = @instance_id AND c.upn = @upn AND (c.type = @profile OR c.type = @entry)"
)
PARTITION_KEYS = "SELECT * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn AND c.type = @profile"
# A page of them (the person's agent list): ``/profile_id/?`` is indexed, so STARTSWITH, the range and the
# ORDER BY are served by the index and TOP bounds what is read.
PARTITION_KEYS_PAGE = (
    "SELECT TOP @top * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn AND c.type = @profile"
    " AND STARTSWITH(c.profile_id, @prefix) AND c.profile_id > @after ORDER BY c.profile_id"
)
LOAD_HEADS = (
    "SELECT * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND ((c.type = @profile AND ARRAY_CONTAINS(@profile_ids, c.profile_id)) OR c.record_kind = @hold"
    " OR c.type = @stamp)"
)
# An operator's scan across the instance's partitions (``partition_owners``): the one entry query that names
# only the first partition key field, so it runs across partitions. A user has a profile per agent besides
# the user one: TOP counts profiles, not owners, and a short page is asked again from its last owner.
PARTITION_OWNERS = (
    "SELECT TOP @top VALUE c.upn FROM c WHERE c.instance_id = @instance_id AND c.type = @profile"
    " AND c.upn > @after ORDER BY c.upn"
)
# Whether a profile's scope holds an entry (``delete_profile``): TOP 1, whatever the scope holds.
ANY_ENTRY_OF_PROFILE = (
    "SELECT TOP 1 VALUE c.id FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND c.profile_id = @profile_id AND c.type = @entry"
)
EXISTING_ENTRY_IDS = (
    "SELECT VALUE c.id FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn"
    " AND c.profile_id = @profile_id AND c.type = @entry AND ARRAY_CONTAINS(@ids, c.id)"
)


def window_filter(window: EntryWindow) -> tuple[str, dict[str, Any]]:
    """The WHERE clause (and its parameters) selecting the entry items of ``window`` in its partition."""
    key = window.key
    where = ("c.instance_id = @instance_id AND c.upn = @upn AND c.type = @entry"
             " AND c.profile_id = @profile_id")
    params: dict[str, Any] = {
        "@instance_id": key.instance_id, "@upn": key.upn, "@entry": docs.ENTRY, "@profile_id": key.profile_id,
    }
    if window.after is not None:
        where += " AND c.created_on > @after"
        params["@after"] = docs.iso(window.after)
    if window.up_to is not None:
        where += " AND c.created_on <= @up_to"
        params["@up_to"] = docs.iso(window.up_to)
    if window.start is not None:
        where += " AND (c.created_on > @start_at OR (c.created_on = @start_at AND c.id >= @start_id))"
        params["@start_at"] = docs.iso(window.start[0])
        params["@start_id"] = docs.entry_item_id(window.start[1])
    if window.excluded_ids:
        where += " AND NOT ARRAY_CONTAINS(@excluded, c.id)"
        params["@excluded"] = sorted(docs.entry_item_id(i) for i in window.excluded_ids)
    return where, params


def oldest_filter(
    window: EntryWindow, after: tuple[datetime, str] | None, at: datetime | None = None
) -> tuple[str, dict[str, Any]]:
    """The WHERE clause (and parameters) of ``window``'s entries strictly after ``after`` in
    ``(created_on, id)`` order; with ``at``, only those created at exactly that time."""
    where, params = window_filter(window)
    if after is not None:
        # A bare lower bound on created_on, so the range index starts at the position.
        where += " AND c.created_on >= @after_at AND (c.created_on > @after_at OR c.id > @after_id)"
        params["@after_at"] = docs.iso(after[0])
        params["@after_id"] = docs.entry_item_id(after[1])
    if at is not None:
        where += " AND c.created_on = @tie_at"
        params["@tie_at"] = docs.iso(at)
    return where, params


#: The most suffixes one query compares (``MemoryStore.page_records``' ``key_suffixes``).
MAX_KEY_SUFFIXES = 100


def ending_in_any(field: str, suffixes: Sequence[str], params: dict[str, Any]) -> str:
    """The filter (`` AND (...)``) keeping items whose ``field`` ends in one of ``suffixes``, their values bound in
    ``params``; nothing matches none. ``ValueError`` past ``MAX_KEY_SUFFIXES``, and (``UnicodeEncodeError``) for a
    suffix UTF-8 cannot encode (a lone surrogate): no stored id holds one, and Cosmos DB compares UTF-16 code units,
    where a lone low surrogate would match the second half of a character outside the BMP."""
    if len(suffixes) > MAX_KEY_SUFFIXES:
        raise ValueError(f"at most {MAX_KEY_SUFFIXES} key suffixes a query")
    for suffix in suffixes:
        suffix.encode("utf-8")  # as the SQLite store's, which compares UTF-8 bytes
    tests = []
    for n, suffix in enumerate(suffixes):
        params[f"@suffix{n}"] = suffix
        tests.append(f"ENDSWITH({field}, @suffix{n})")  # case-sensitive unless asked otherwise
    return f" AND ({' OR '.join(tests)})" if tests else " AND false"


#: The most values one query compares a data field to (``MemoryStore.page_records``' ``where_in``).
MAX_FIELD_VALUES = 100


def data_in(name: str, values: Sequence[str], params: dict[str, Any]) -> str:
    """The filter (`` AND ...``) keeping items whose ``data`` field ``name`` equals one of ``values``, bound as one
    array parameter (``ARRAY_CONTAINS``, served by the ``/data/*`` index as an ``IN`` is); nothing matches none.
    ``ValueError`` past ``MAX_FIELD_VALUES`` and for a name that is not an identifier."""
    if len(values) > MAX_FIELD_VALUES:
        raise ValueError(f"at most {MAX_FIELD_VALUES} values a query")
    if not name.isidentifier():
        raise ValueError(f"not a field name: {name!r}")
    params["@in_values"] = list(values)
    return f' AND ARRAY_CONTAINS(@in_values, c.data["{name}"])'


def records_query(
    instance_id: str | None, owner: str, kind: str, where: Mapping[str, str] | None
) -> tuple[str, dict[str, Any]]:
    """SELECT * of the records of ``kind`` under ``owner`` (in one instance unless None) matching ``where``."""
    sql = "SELECT * FROM c WHERE c.upn = @upn AND c.record_kind = @kind"
    params: dict[str, Any] = {"@upn": owner, "@kind": kind}
    if instance_id is not None:
        sql = "SELECT * FROM c WHERE c.instance_id = @instance_id AND c.upn = @upn AND c.record_kind = @kind"
        params["@instance_id"] = instance_id
    for n, (name, value) in enumerate((where or {}).items()):
        if not name.isidentifier():
            raise ValueError(f"not a field name: {name!r}")
        sql += f' AND c.data["{name}"] = @w{n}'
        params[f"@w{n}"] = value
    return sql, params
