"""How profiles, entries and records are laid out as items of the Memories container.

Every item carries its partition key fields ``instance_id`` and ``upn`` (for a
record: its partition's owner), a ``type`` and a ``schema_version``. Ids:

- profile: the seed's deterministic profile id (``memory:user:{upn}``,
  ``memory:agent:{upn}:{hash}``), already id-safe;
- entry: ``entry:`` + the entry id;
- record: ``record:{kind}:{digest of the owner}:`` + the percent-encoded
  record id (the raw id is kept in ``record_id``), because record ids such as
  audit timestamps may hold characters Cosmos DB refuses in an id, and one
  request's holds share an id across two owners of an instance.

Entries also carry ``seq``, their place in the partition's write order, and each
partition has one ``stamp`` item; both are the partition stamp's (the item's fields:
``memory_core.adapters.cosmos_stamp_item``; the batches that move it and hand out sequences:
``memory_core.adapters.cosmos_stamps``).

Times are ISO 8601 strings in UTC with microseconds and a ``Z``
(``2026-01-02T03:04:05.678901Z``): they sort as strings and read back equal.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share
from memory_core.domain.records import Partition, Record
from memory_core.domain.store import EntryFacts

SCHEMA_VERSION = 1

PROFILE = "profile"
ENTRY = "entry"
RECORD = "record"

ENTRY_ID_PREFIX = "entry:"
SEQUENCE = "seq"  # an entry's place in its partition's write order (``cosmos_stamps``)

# The largest item Cosmos DB stores: "2 MB (UTF-8 length of JSON representation)"
# (https://learn.microsoft.com/azure/cosmos-db/concepts-limits#per-item-limits), read as
# decimal megabytes to stay on the safe side.
COSMOS_ITEM_LIMIT_BYTES = 2_000_000
# The SDK sends item bodies with non-ASCII escaped (json.dumps ensure_ascii), so one byte
# of content_markdown can take up to 6 bytes of the item: a control character becomes
# \u00XX (1 -> 6), a 2-byte UTF-8 character \uXXXX (2 -> 6), a 4-byte one a surrogate pair
# (4 -> 12).
WORST_CASE_ESCAPE = 6
# The largest MEMORY_MAX_WRITE_BYTES with MEMORY_STORE=cosmos (memory_core.settings
# refuses more): at the worst escape it leaves ENTRY_ENVELOPE_BYTES of the item for the
# entry's other fields (ids, the upn three times, 64 tags of 256 characters, five texts of
# 1024 characters, all escaped at worst) and the system properties Cosmos DB adds.
# tests/adapters/test_cosmos_item_size.py measures that worst case against it.
COSMOS_MAX_WRITE_BYTES = 256 * 1024
ENTRY_ENVELOPE_BYTES = COSMOS_ITEM_LIMIT_BYTES - WORST_CASE_ESCAPE * COSMOS_MAX_WRITE_BYTES
# Cosmos DB refuses these in an id; ids are at most 255 characters.
_ID_FORBIDDEN = frozenset("/\\?#")
MAX_ID_LENGTH = 255

_KINDS = {k.value: k for k in EntryKind}
_SHARES = {s.value: s for s in Share}


def iso(moment: datetime) -> str:
    """UTC, microseconds, ``Z``: one fixed-width format, so strings sort like times."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def is_valid_id(item_id: str) -> bool:
    """True when Cosmos DB accepts ``item_id`` as an item id."""
    return 0 < len(item_id) <= MAX_ID_LENGTH and not (_ID_FORBIDDEN & set(item_id)) and item_id == item_id.strip()


# -- profiles ---------------------------------------------------------------


def profile_item(profile: MemoryProfile) -> dict[str, Any]:
    key = profile.key
    return {
        "id": key.profile_id,
        "type": PROFILE,
        "schema_version": SCHEMA_VERSION,
        "instance_id": key.instance_id,
        "upn": key.upn,
        "profile_id": key.profile_id,
        "scope": key.scope.value,
        "agent_object_id": key.agent_object_id,
        "name": profile.name,
        "user_name": profile.user_name,
        "agent_name": profile.agent_name,
        "created_on": iso(profile.created_on),
        "updated_on": iso(profile.updated_on),
        "cleared_on": iso(profile.cleared_on) if profile.cleared_on else None,
    }


def profile_from_item(key: ProfileKey, item: Mapping[str, Any]) -> MemoryProfile:
    created = parse_time(item.get("created_on"))
    updated = parse_time(item.get("updated_on"))
    if created is None or updated is None:
        raise ValueError(f"profile item {item.get('id')!r} has no timestamps")
    return MemoryProfile(
        key=key,
        name=item.get("name"),
        user_name=item.get("user_name"),
        agent_name=item.get("agent_name"),
        created_on=created,
        updated_on=updated,
        cleared_on=parse_time(item.get("cleared_on")),
        etag=item.get("_etag"),
    )


# -- entries ----------------------------------------------------------------


def entry_item_id(entry_id: str) -> str:
    return ENTRY_ID_PREFIX + entry_id


def entry_item(entry: MemoryEntry, sequence: int | None = None) -> dict[str, Any]:
    """The item of ``entry``; ``sequence`` is the partition sequence it is stored at
    (``cosmos_stamps``), which later reads use to load only the entries after a snapshot."""
    item_id = entry_item_id(entry.id)
    if not is_valid_id(item_id):
        raise ValueError(f"entry id {entry.id!r} cannot be stored as a Cosmos DB item id")
    key = entry.key
    return {
        "id": item_id,
        "type": ENTRY,
        "schema_version": SCHEMA_VERSION,
        "instance_id": key.instance_id,
        "upn": key.upn,
        "profile_id": key.profile_id,
        "scope": key.scope.value,
        "agent_object_id": key.agent_object_id,
        "kind": entry.kind.value,
        "content_markdown": entry.content_markdown,
        "created_on": iso(entry.created_on),
        "author_upn": entry.author_upn,
        "author_user_id": entry.author_user_id,
        "agent_name": entry.agent_name,
        "reason": entry.reason,
        "session_id": entry.session_id,
        "operation_id": entry.operation_id,
        "tags": list(entry.tags),
        "share": entry.share.value,
        "content_sha256": entry.content_sha256,
        **({SEQUENCE: sequence} if sequence is not None else {}),
    }


def sequence_of(item: Mapping[str, Any]) -> int:
    """The partition sequence an entry item was stored at; 0 for one stored before stamps existed."""
    value = item.get(SEQUENCE)
    return int(value) if isinstance(value, int | float) else 0


def entry_from_item(key: ProfileKey, item: Mapping[str, Any]) -> MemoryEntry:
    return MemoryEntry(
        id=str(item["id"])[len(ENTRY_ID_PREFIX):],
        key=key,
        content_markdown=item["content_markdown"],
        kind=_KINDS[item["kind"]],
        created_on=datetime.fromisoformat(item["created_on"]),
        author_upn=item["author_upn"],
        author_user_id=item.get("author_user_id"),
        agent_name=item.get("agent_name"),
        reason=item.get("reason"),
        session_id=item.get("session_id"),
        operation_id=item.get("operation_id"),
        tags=tuple(item.get("tags") or ()),
        share=_SHARES[item.get("share") or Share.PRIVATE.value],
        content_sha256=item.get("content_sha256") or "",
    )


# The fields ``facts_from_item`` reads: a query projecting them returns no entry's text.
FACT_FIELDS = "c.id, c.created_on, c.share, c.author_upn"


def facts_from_item(item: Mapping[str, Any]) -> EntryFacts:
    """The ``EntryFacts`` of an entry item, or of a projection of its ``FACT_FIELDS``."""
    return EntryFacts(str(item["id"])[len(ENTRY_ID_PREFIX):], datetime.fromisoformat(item["created_on"]),
                      _SHARES[item.get("share") or Share.PRIVATE.value], item["author_upn"])


def key_of_item(item: Mapping[str, Any]) -> ProfileKey:
    """The profile key a profile or entry item belongs to."""
    return ProfileKey(item["instance_id"], item["upn"], Scope(item["scope"]), item.get("agent_object_id"))


# -- records ----------------------------------------------------------------


def record_item_id(partition: Partition, kind: str, record_id: str) -> str:
    """``record:{kind}:{owner digest}:{record id}``.

    The owner's digest makes the id unique per (instance, owner) as well as per
    partition, so a server that keys ids on the first partition path only (the
    test server) answers like Cosmos DB; a digest keeps long UPNs within the
    255-character limit.
    """
    owner = hashlib.sha256(partition.owner.encode("utf-8")).hexdigest()[:16]
    return f"record:{quote(kind, safe='_-.')}:{owner}:{quote(record_id, safe='_-.~:+@=,;')}"


def record_item(record: Record) -> dict[str, Any]:
    item_id = record_item_id(record.partition, record.kind, record.id)
    if not is_valid_id(item_id):
        raise ValueError(f"record id {record.id!r} is too long for a Cosmos DB item id")
    return {
        "id": item_id,
        "type": RECORD,
        "schema_version": SCHEMA_VERSION,
        "instance_id": record.partition.instance_id,
        "upn": record.partition.owner,
        "record_kind": record.kind,
        "record_id": record.id,
        "data": record.data,
        **_ttl(record.expires_on),
    }


def _ttl(expires_on: datetime | None) -> dict[str, int]:
    """Cosmos DB's per-item ``ttl``: seconds from this write (the item's ``_ts``) to ``expires_on``.

    No ``ttl`` means never (the container's defaultTtl is -1: on, nothing expires by default).
    """
    if expires_on is None:
        return {}
    return {"ttl": max(1, math.ceil((expires_on - datetime.now(UTC)).total_seconds()))}


def record_from_item(partition: Partition, item: Mapping[str, Any]) -> Record:
    return Record(partition, item["record_kind"], item["record_id"], dict(item.get("data") or {}), item.get("_etag"))


__all__ = [
    "COSMOS_MAX_WRITE_BYTES",
    "ENTRY",
    "PROFILE",
    "RECORD",
    "SCHEMA_VERSION",
    "entry_from_item",
    "entry_item",
    "entry_item_id",
    "is_valid_id",
    "iso",
    "key_of_item",
    "profile_from_item",
    "profile_item",
    "record_from_item",
    "record_item",
    "record_item_id",
    "sequence_of",
]
