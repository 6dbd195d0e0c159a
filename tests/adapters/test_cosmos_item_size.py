"""The Cosmos DB write cap: an entry of MEMORY_MAX_WRITE_BYTES always fits in one item.

The item is measured as the azure-cosmos SDK serializes it on the wire (its own body
serializer, non-ASCII escaped), with every other field of the entry at the largest the
API accepts and the worst characters for escaping. No server is needed: the size is a
property of the JSON the SDK sends.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from azure.cosmos._synchronized_request import _request_body_from_data

from memory_core.adapters import cosmos_documents as docs
from memory_core.domain.errors import ConfigurationError
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope, Share
from memory_core.domain.tags import normalize_tags
from memory_core.settings import load_settings

# What Cosmos DB adds to a stored item (_rid, _self, _etag, _attachments, _ts), generously.
SYSTEM_PROPERTIES_BYTES = 1024
# A UPN is at most 113 characters in Entra ID; identity headers allow far longer, so take 1024.
LONGEST_UPN = 1024


def _wire_size(item: dict) -> int:
    body = _request_body_from_data(item)  # the SDK's default: ensure_ascii, compact separators
    return len(body if isinstance(body, bytes) else body.encode("utf-8"))


def _worst_entry(content: str, filler: str) -> MemoryEntry:
    upn = ("u" * (LONGEST_UPN - len("@x.example"))) + "@x.example"
    agent = filler * 1024
    key = ProfileKey("i" * 255, upn, Scope.AGENT, agent)
    tags = normalize_tags([f"t{n:02d}" + filler * 253 for n in range(64)], session_id=filler * 1024, agent_id=agent)
    return MemoryEntry(
        id="e" * 200,
        key=key,
        content_markdown=content,
        kind=EntryKind.APPEND,
        created_on=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        author_upn=upn,
        author_user_id=filler * 1024,
        agent_name=filler * 1024,
        reason=filler * 1024,
        session_id=filler * 1024,
        operation_id=filler * 1024,
        tags=tags,
        share=Share.TEAM,
        content_sha256="f" * 64,
    )


@pytest.mark.parametrize(
    "char",
    ["\x01", "\u00e9", "\U0001f600", '"', "a"],
    ids=["control", "2-byte", "4-byte", "quote", "ascii"],
)
def test_an_entry_of_the_cap_fits_in_one_item(char):
    """Content of COSMOS_MAX_WRITE_BYTES UTF-8 bytes, made of the character that escapes
    worst per byte, with every other field at its largest, stays under 2 MB on the wire."""
    per_char = len(char.encode("utf-8"))
    content = char * (docs.COSMOS_MAX_WRITE_BYTES // per_char)
    assert len(content.encode("utf-8")) <= docs.COSMOS_MAX_WRITE_BYTES
    item = docs.entry_item(_worst_entry(content, "\x01"))
    size = _wire_size(item) + SYSTEM_PROPERTIES_BYTES
    assert size <= docs.COSMOS_ITEM_LIMIT_BYTES, f"{size} bytes"


def test_the_worst_case_really_is_six_bytes_per_content_byte():
    """The factor the cap is derived from is what the SDK does: a control character costs
    6 bytes, so the cap could not be doubled without overflowing the item."""
    small = docs.entry_item(_worst_entry("", "a"))
    big = docs.entry_item(_worst_entry("\x01" * 1000, "a"))
    assert _wire_size(big) - _wire_size(small) == 6000
    doubled = docs.entry_item(_worst_entry("\x01" * (2 * docs.COSMOS_MAX_WRITE_BYTES), "a"))
    assert _wire_size(doubled) > docs.COSMOS_ITEM_LIMIT_BYTES


def test_envelope_of_the_largest_other_fields_is_within_its_budget():
    """Everything but the content, at its largest and worst-escaped, fits the envelope the
    cap leaves."""
    item = docs.entry_item(_worst_entry("", "\x01"))
    assert _wire_size(item) + SYSTEM_PROPERTIES_BYTES <= docs.ENTRY_ENVELOPE_BYTES


def test_settings_refuse_more_than_an_item_holds(monkeypatch):
    """MEMORY_STORE=cosmos with MEMORY_MAX_WRITE_BYTES above the cap stops the start with a
    message naming the variable and the largest allowed value."""
    monkeypatch.setenv("MEMORY_STORE", "cosmos")
    monkeypatch.setenv("COSMOS_ENDPOINT", "https://example.documents.azure.com:443/")
    monkeypatch.setenv("MEMORY_MAX_WRITE_BYTES", str(docs.COSMOS_MAX_WRITE_BYTES + 1))
    with pytest.raises(ConfigurationError) as caught:
        load_settings()
    assert "MEMORY_MAX_WRITE_BYTES" in str(caught.value) and str(docs.COSMOS_MAX_WRITE_BYTES) in str(caught.value)
    monkeypatch.setenv("MEMORY_MAX_WRITE_BYTES", str(docs.COSMOS_MAX_WRITE_BYTES))
    assert load_settings().memory_max_write_bytes == docs.COSMOS_MAX_WRITE_BYTES


def test_sqlite_keeps_its_larger_limit(monkeypatch):
    """The cap is Cosmos DB's: the embedded SQLite store still accepts up to 16 MiB."""
    monkeypatch.setenv("MEMORY_STORE", "sqlite")
    monkeypatch.setenv("MEMORY_MAX_WRITE_BYTES", str(16 * 1024 * 1024))
    assert load_settings().memory_max_write_bytes == 16 * 1024 * 1024
