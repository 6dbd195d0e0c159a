"""Writes a client may retry: the ``Idempotency-Key`` of an append (draft-ietf-httpapi-idempotency-key-header).

A write that timed out or answered 503 after its commit leaves its client unsure whether the fact was stored;
a plain retry would store it twice. With a key, the entry's id is derived from the key (``keyed_entry_id``): the
same caller's retry makes an entry of the same id, which the store refuses (``EntryExists``, atomically, with its
audit event and the key's mark), so the key needs no table of its own and survives any crash with the entry it
made. The retry is then answered from the stored entry when it is the same request (``same_request``), and
refused with ``IdempotencyKeyReused`` (422) when the key was used for another one, or ``IdempotencyKeyErased``
(422) when its entry has been erased since.

A key's first write reads nothing before it writes: it costs what an unkeyed append does (one SQLite transaction,
one Cosmos DB batch). The mark is created in the entry's atomic write only while none is stored
(``records.ABSENT``), so a key whose entry was erased fails that write exactly as a taken entry id does, and only
a write the store refused reads the entry, to tell a retry from another request from an erased entry.

Callers may rely on:

* a key is the caller's own: the id is derived from the instance, the caller's UPN and the key, and lives in the
  caller's partition, so two people's keys never meet and one cannot learn whether another used a key;
* a key names one request in all of the caller's memory of the instance, whatever the scope: the same key on
  another scope, agent, endpoint (append or import) or content is refused, never stored beside the first;
* a key is used once for all time: held, cleared or hidden, its entry answers a retry as the first call was
  answered, storing nothing; once the entry is erased (a swept forget or clear, an immediate deletion, a purge)
  a retry is refused (``IdempotencyKeyErased``, 422) and stores nothing, so a late retry cannot bring an erased
  fact back. A mark of the key (a ``keyed_entry`` record named by the entry's id, holding when it was stored and
  nothing of the request) is created with the entry and outlives it; a purge leaves it too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace

from memory_core.domain import team_copies
from memory_core.domain.budget import is_visible
from memory_core.domain.errors import EntryExists, IdempotencyKeyErased, IdempotencyKeyReused, InvalidInput
from memory_core.domain.models import MemoryEntry, MemoryProfile, Share
from memory_core.domain.records import ABSENT, Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255
KEY_PATTERN = r"^[\x20-\x7E]{1,255}$"
"""What a key may be, for the OpenAPI document: 1 to 255 printable ASCII characters."""

# Names what the digest is of, so that no other id this service derives can ever equal a keyed entry's.
_PURPOSE = b"memory-core entry id of an Idempotency-Key, v1"


def checked_key(key: str) -> str:
    """``key`` when it is 1 to 255 printable ASCII characters (space included), else ``InvalidInput``.

    The key is taken as sent, quotes included: the draft's structured-field form ``"abc"`` and a bare ``abc``
    are two keys, and a client retrying sends the same bytes either way."""
    if not 1 <= len(key) <= MAX_KEY_CHARS or not all(" " <= ch <= "~" for ch in key):
        raise InvalidInput(f"{IDEMPOTENCY_KEY_HEADER} must be 1 to {MAX_KEY_CHARS} printable ASCII characters",
                           code="invalid_idempotency_key")
    return key


def keyed_entry_id(instance_id: str, upn: str, key: str) -> str:
    """The id of the entry a write with ``key`` makes in ``upn``'s memory of ``instance_id``: 32 hex digits
    (an id the API accepts, like a random one), the same for every retry, another for any other caller or key.

    A plain digest: the id is shown only to its owner (and, for a team-shared entry, its copy to teammates),
    and finding a key from it means inverting SHA-256; the owner's own keys are theirs to know."""
    digest = hashlib.sha256(_PURPOSE)
    for part in (instance_id, upn, checked_key(key)):
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(4, "big") + data)  # length-prefixed: no two tuples share a digest input
    return digest.hexdigest()[:32]


def same_request(stored: MemoryEntry, fresh: MemoryEntry) -> bool:
    """Whether ``fresh`` (a retry's entry, not stored) is the request that stored ``stored``: the same scope and
    agent, endpoint (kind), content and everything stored beside it. Its time is not compared (a retry is later)."""
    return (stored.key == fresh.key and stored.kind is fresh.kind and stored.content_sha256 == fresh.content_sha256
            and stored.content_markdown == fresh.content_markdown and stored.reason == fresh.reason
            and stored.session_id == fresh.session_id and stored.operation_id == fresh.operation_id
            and stored.agent_name == fresh.agent_name and stored.tags == fresh.tags and stored.share is fresh.share)


def store_once(store: MemoryStore, seed: MemoryProfile, entry: MemoryEntry, key: str,
               write: Callable[[MemoryEntry, Record], tuple[MemoryProfile, MemoryEntry]]
               ) -> tuple[MemoryProfile, MemoryEntry]:
    """Store ``entry`` under the id ``key`` derives in its owner's memory, with ``write``, and offer it to the team;
    or answer (the profile now, the entry) as stored by the same request before, writing nothing.

    ``write`` stores the entry (answering the profile and the entry as stored: its time may be moved after a
    clear's watermark, ``domain.audited_appends``), its audit event and the key's mark (a record of the partition, the second argument,
    to create only: its etag is ``records.ABSENT``) atomically, and raises ``EntryExists``, writing nothing, when the
    entry's id or the mark's is taken (``MemoryStore.append_with_records``); a replay writes nothing, so no second
    audit event. Nothing is read before the write: a key's first write costs what an unkeyed one does, and only a
    refused one reads the stored entry. It offers the stored entry to the team again only while the entry shows:
    its copy is what a crash after the first commit may have left unmade, and a held or cleared entry's copy was
    withdrawn on purpose.

    Raises ``IdempotencyKeyReused`` when the key's entry is another request's (``same_request``), and
    ``IdempotencyKeyErased`` when the key's entry was stored and has since been erased: the mark outlives the
    entry, so an erased fact never comes back under its old id (reads kept by any process rely on an id never
    being stored twice, ``domain.present_entries``)."""
    keyed = replace(entry, id=keyed_entry_id(entry.key.instance_id, entry.key.upn, key))
    partition = Partition(keyed.key.instance_id, keyed.key.upn)
    mark = Record(partition, RecordKind.KEYED_ENTRY, keyed.id, {"stored_on": keyed.created_on.isoformat()},
                  etag=ABSENT)
    try:
        profile, stored_now = write(keyed, mark)
    except EntryExists:
        pass  # the key was used before (or by the same write at the same moment): what it stored answers, below
    else:
        team_copies.share(store, stored_now)
        return profile, stored_now
    # The entry, or only its mark when the entry was erased since (the mark outlives it).
    stored = store.get_entry(keyed.key.instance_id, keyed.key.upn, keyed.id)
    if stored is None:
        raise IdempotencyKeyErased(
            f"the entry this {IDEMPOTENCY_KEY_HEADER} stored has since been erased (a forget, a clear or a purge); "
            "nothing was stored, so the erased fact does not come back. Send a new key to store it again."
        )
    if not same_request(stored, keyed):
        raise IdempotencyKeyReused(
            f"this {IDEMPOTENCY_KEY_HEADER} was already used for a different request (another content, scope, "
            "agent, endpoint or field beside the content); nothing was stored. Send a new key for a new write."
        )
    if stored.share is Share.TEAM and is_visible(store, stored):  # a private entry has no copy to check
        team_copies.share(store, stored)
    (head,) = store.load_heads([stored.key])
    return head.profile or seed, stored
