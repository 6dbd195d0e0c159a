"""The strict JSON decoder: deep nesting, lone surrogates and twice-named members are refusals, never crashes."""

from __future__ import annotations

import pytest

from memory_core.wire.json_text import JsonRejected, loads


def test_ordinary_json_decodes() -> None:
    assert loads(b'{"a": [1, "x", {"b": null}]}') == {"a": [1, "x", {"b": None}]}


def test_a_surrogate_pair_is_one_character() -> None:
    assert loads('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 1000 + b"]" * 1000,
        b'{"a": "- \\ud800"}',
        b'{"\\udc00": 1}',
        b'["ok", ["\\uDBFF"]]',
        b"\xff\xfe",
        b"{not json",
        "\ud800".encode("utf-8", "surrogatepass"),
    ],
    ids=["deep", "lone-high", "lone-low-key", "nested-upper-case", "bad-utf8", "syntax", "raw-surrogate"],
)
def test_hostile_text_is_rejected(raw: bytes) -> None:
    with pytest.raises(JsonRejected):
        loads(raw)


def test_a_string_argument_with_a_raw_surrogate_is_rejected() -> None:
    """Header values reach the decoder as str; a raw lone surrogate in them is refused too."""
    with pytest.raises(JsonRejected):
        loads('{"upn": "a@b", "name": "\ud800"}')


@pytest.mark.parametrize(
    "raw",
    [
        b'{"upn": "alex@contoso.com", "upn": "bob@contoso.com"}',
        b'{"a": {"scope": "user", "scope": "agent"}}',
        b'[{"k": 1}, {"k": 2, "k": 2}]',
        b'{"s": 1, "\\u0073": 2}',
    ],
    ids=["top", "nested", "in-a-list-same-value", "escaped-name"],
)
def test_an_object_naming_a_member_twice_is_rejected(raw: bytes) -> None:
    """Parsers disagree on which of two values to keep, so neither is chosen; the message quotes neither."""
    with pytest.raises(JsonRejected, match=r"^a JSON object names the same member twice$"):
        loads(raw)


def test_the_same_name_in_different_objects_is_fine() -> None:
    assert loads(b'[{"k": 1}, {"k": 2, "K": 3}]') == [{"k": 1}, {"k": 2, "K": 3}]
