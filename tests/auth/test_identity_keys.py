"""The key path's parsed identities kept in memory (``memory_core.identity.keys.parse_identity``).

A kept identity must never answer for another text, nor let a wrong key or a refused identity through.
"""

from __future__ import annotations

import json

import pytest

from memory_core.domain.errors import Unauthenticated
from memory_core.identity import KeyAuthenticator
from memory_core.identity.keys import MAX_KEPT_IDENTITY_CHARS, PARSED_IDENTITIES_KEPT, _kept_identity, parse_identity
from tests.support.local_server import USER_KEY, identity

BOB = "bob@contoso.com"


def test_the_same_identity_text_parsed_again_names_the_same_caller() -> None:
    raw = json.dumps({"upn": "Kept.Bob@Contoso.com", "name": "Bob", "group_ids": ["g1"]})
    first = parse_identity(raw)
    assert parse_identity(raw) == first
    assert (first.upn, first.name, first.group_ids) == ("kept.bob@contoso.com", "Bob", ("g1",))


def test_a_text_differing_in_any_member_is_parsed_for_itself() -> None:
    """Same upn, another name or other groups: never the caller kept for the first text."""
    base = {"upn": BOB, "name": "Bob", "group_ids": ["team-a"]}
    parse_identity(json.dumps(base))
    other_groups = parse_identity(json.dumps({**base, "group_ids": ["team-b"]}))
    other_name = parse_identity(json.dumps({**base, "name": "Robert"}))
    other_user = parse_identity(json.dumps({**base, "upn": "alex@contoso.com"}))
    assert other_groups.group_ids == ("team-b",)
    assert other_name.name == "Robert"
    assert other_user.upn == "alex@contoso.com"


def test_a_refused_identity_is_refused_every_time() -> None:
    raw = '{"upn": "bob", "name": "Bob"}'
    for _ in range(3):
        with pytest.raises(Unauthenticated):
            parse_identity(raw)


def test_a_kept_identity_never_stands_in_for_a_wrong_key() -> None:
    auth = KeyAuthenticator([USER_KEY], [])
    raw = identity(BOB)
    assert auth.authenticate({"X-API-KEY": USER_KEY, "X-USER-IDENTITY": raw}).caller.upn == BOB
    with pytest.raises(Unauthenticated, match="invalid API key"):
        auth.authenticate({"X-API-KEY": USER_KEY + "x", "X-USER-IDENTITY": raw})


def test_an_identity_past_the_kept_length_is_parsed_each_time_and_not_kept() -> None:
    raw = json.dumps({"upn": "long.bob@contoso.com", "name": "N" * 500, "group_ids": [f"g{n}" for n in range(300)]})
    assert len(raw) > MAX_KEPT_IDENTITY_CHARS
    before = _kept_identity.cache_info().currsize
    caller = parse_identity(raw)
    assert caller.upn == "long.bob@contoso.com" and len(caller.group_ids) == 300
    assert _kept_identity.cache_info().currsize == before


def test_the_kept_identities_are_bounded() -> None:
    for n in range(PARSED_IDENTITIES_KEPT + 50):
        assert parse_identity(identity(f"user{n}@contoso.com")).upn == f"user{n}@contoso.com"
    assert _kept_identity.cache_info().currsize == PARSED_IDENTITIES_KEPT
