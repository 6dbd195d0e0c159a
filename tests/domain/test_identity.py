"""The one grammar of caller identifiers, and internal owners no caller can take."""

from __future__ import annotations

import pytest

from memory_core.domain.agent_settings import SETTINGS_OWNER
from memory_core.domain.identity import InvalidCallerId, caller_upn, internal_owner, is_caller_upn
from memory_core.domain.models import SHARED_OWNER
from memory_core.domain.records import DELETIONS_OWNER, SYSTEM_INSTANCE


@pytest.mark.parametrize(
    ("raw", "owner"),
    [
        ("  Alex@Contoso.COM ", "alex@contoso.com"),
        ("a@x", "a@x"),
        ("alex_fabrikam.com#EXT#@contoso.onmicrosoft.com", "alex_fabrikam.com#ext#@contoso.onmicrosoft.com"),
        ("o'brien+memory@xn--bcher-kva.example", "o'brien+memory@xn--bcher-kva.example"),
        ("local@localhost", "local@localhost"),
        ("~shared@x", "~shared@x"),
    ],
)
def test_caller_upns_are_trimmed_and_lower_cased(raw: str, owner: str) -> None:
    """Well-formed UPNs (guest #EXT# forms and punycode domains included) normalize to their owner key."""
    assert caller_upn(raw) == owner


@pytest.mark.parametrize(
    "raw",
    ["", "   ", "~shared", "~system", "shared", "a@", "@b", "a@@b", "a@b@c", "a b@c", "a@b c", "a@-b", "a@b-",
     "a/b@c", "a\\b@c", "a?b@c", "a@b/c", "a@b..c", "\x00@b", "a@b\nc", "ä@b", "a@bü", "\ud800@b", "a@" + "b" * 64,
     "a" * 257 + "@b", "a@" + ".".join(["b" * 60] * 6)],
)
def test_anything_else_is_not_a_caller(raw: str) -> None:
    """No internal owner, no missing or doubled "@", no spaces, controls, slashes or non-ASCII."""
    with pytest.raises(InvalidCallerId):
        caller_upn(raw)


@pytest.mark.parametrize("raw", ["\u212aate@example.com", "kate@example.\u212az", "kate@example.com\u3000",
                                 "\u2003kate@example.com", "kate@example.com\x1c", "\x85kate@example.com"])
def test_no_other_character_stands_for_an_ascii_one(raw: str) -> None:
    """A character that lower-cases to ASCII (the Kelvin sign to "k") or that str.strip trims (Unicode spaces and
    separators) never reaches the grammar as the ASCII caller it resembles: it is refused, not kate@example.com."""
    with pytest.raises(InvalidCallerId):
        caller_upn(raw)


def test_no_internal_owner_can_be_a_caller() -> None:
    """Every internal partition owner of the stores fails the caller grammar, whatever its case or spacing."""
    for owner in (SHARED_OWNER, SYSTEM_INSTANCE, DELETIONS_OWNER, SETTINGS_OWNER):
        assert owner.startswith("~") and "@" not in owner
        for variant in (owner, owner.upper(), f" {owner} "):
            assert not is_caller_upn(variant)
            with pytest.raises(InvalidCallerId):
                caller_upn(variant)


def test_internal_owner_names_are_plain_words() -> None:
    """internal_owner builds "~name" from lower-case letters only."""
    assert internal_owner("shared") == "~shared"
    for bad in ("", "a@b", "Shared", "x" * 33):
        with pytest.raises(ValueError):
            internal_owner(bad)


def test_the_error_never_repeats_the_value() -> None:
    """Messages state the rule, not the rejected text."""
    with pytest.raises(InvalidCallerId) as raised:
        caller_upn("~shared-secret-name")
    assert "secret" not in str(raised.value)
