"""Deterministic ids and ownership normalization."""

from __future__ import annotations

from memory_core.domain.identity import caller_upn
from memory_core.domain.models import ProfileKey, Scope


def test_upn_is_trimmed_and_lowercased() -> None:
    """Ownership is the UPN trimmed and lower-cased."""
    assert caller_upn("  Alex@Contoso.COM ") == "alex@contoso.com"


def test_user_profile_id_follows_the_seed() -> None:
    """User memory lives at memory:user:{normalizedUpn}."""
    assert ProfileKey("i", "alex@contoso.com", Scope.USER).profile_id == "memory:user:alex@contoso.com"


def test_agent_profile_id_hashes_the_agent_object_id() -> None:
    """Agent memory lives at memory:agent:{upn}:{hash}, with no slash from the object id."""
    pid = ProfileKey("i", "alex@contoso.com", Scope.AGENT, "/instances/x/agents/a").profile_id
    prefix, _, digest = pid.rpartition(":")
    assert prefix == "memory:agent:alex@contoso.com" and len(digest) == 32 and "/" not in pid


def test_agent_profile_ids_differ_per_agent_and_are_stable() -> None:
    """The same agent always maps to the same id; two agents never share one."""
    a1 = ProfileKey("i", "u", Scope.AGENT, "/agents/a").profile_id
    a2 = ProfileKey("i", "u", Scope.AGENT, "/agents/a").profile_id
    b = ProfileKey("i", "u", Scope.AGENT, "/agents/b").profile_id
    assert a1 == a2 and a1 != b


def test_guest_upn_characters_are_made_id_safe() -> None:
    """Characters Cosmos DB refuses in ids (# / \\ ?) are percent-encoded."""
    pid = ProfileKey("i", "ext_user#ext#@tenant.onmicrosoft.com", Scope.USER).profile_id
    assert "#" not in pid and "%23" in pid
