"""Who is calling. Built by an entry point from trusted headers or tokens only."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated user. ``upn`` is already normalized and owns the memory."""

    upn: str
    name: str | None = None
    user_name: str | None = None
    user_id: str | None = None
    group_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentContext:
    """The agent a call is made for (agent scope), as the platform names it."""

    object_id: str
    name: str | None = None
