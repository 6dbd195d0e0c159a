"""Which profiles a call touches, and under which sharing policy: the rules every use case starts from.

A call names a scope and maybe an agent; the caller is authenticated. From them come the
profile keys (always in the caller's own partition), after the operators' agent settings
have had their say: on the agent's use of memory only (``Use``).
"""

from __future__ import annotations

from enum import Enum

from memory_core.domain.agent_settings import AgentSettingsBook
from memory_core.domain.errors import InvalidInput
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.sharing import SharingPolicy, resolve_policy


class Use(Enum):
    """What a call does with memory, which decides whether the operators' agent settings apply to it.

    The settings (``enabled``, ``allowed_group_ids``) govern an agent's use of memory: what reaches a
    model's context and what is written. They never take from the person what is already stored about
    them: the person keeps seeing, exporting and forgetting it, whatever the agent's settings say.
    Each use case names its use here, so the rule lives in ``ProfileTargets.guard`` alone.
    """

    AGENT = "agent"
    """Reads that feed a model's context (get, the budgeted get, search, the memory tool) and every write:
    a disabled agent, or a caller outside its groups (for the agent's scope), is refused."""
    CUSTODY = "custody"
    """The person's custody of what is stored: the entries listing, export and clear (forget by id and
    the audit and deletion listings name no agent). The agent's settings are not consulted."""


class ProfileTargets:
    """The keys and the sharing policy of one call, checked against the operators' agent settings."""

    def __init__(
        self, agent_settings: AgentSettingsBook, default_sharing: SharingPolicy, *, allow_sharing_override: bool
    ) -> None:
        self._agent_settings = agent_settings
        self._default_sharing = default_sharing
        self._allow_sharing_override = allow_sharing_override

    def key(
        self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None, *, use: Use
    ) -> ProfileKey:
        """The key of ``scope`` (user or agent) for ``caller``, for ``use``.

        Raises ``InvalidInput`` when scope agent has no agent, and what ``guard`` raises.
        """
        self.guard(caller, instance_id, scope, agent, use=use)
        if scope is Scope.AGENT:
            return ProfileKey(instance_id, caller.upn, scope, self.require_agent(scope, agent).object_id)
        return ProfileKey(instance_id, caller.upn, scope)

    def read_keys(
        self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None, *, use: Use
    ) -> list[ProfileKey]:
        """The profiles a read of ``scope`` covers (combined: user then agent), for ``use``. Raises as ``key``."""
        if scope is Scope.COMBINED:
            agent_ctx = self.require_agent(scope, agent)
            self.guard(caller, instance_id, scope, agent_ctx, use=use)
            return [ProfileKey(instance_id, caller.upn, Scope.USER),
                    ProfileKey(instance_id, caller.upn, Scope.AGENT, agent_ctx.object_id)]
        return [self.key(caller, instance_id, scope, agent, use=use)]

    def policy(self, requested: SharingPolicy | None) -> SharingPolicy:
        """The read's sharing policy: the default, or ``requested`` where overrides are allowed (else ``Forbidden``)."""
        return resolve_policy(self._default_sharing, requested, allow_override=self._allow_sharing_override)

    def guard(self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None, *, use: Use) -> None:
        """The operators' agent settings, for the agent's use of memory (``Use.AGENT``): ``Forbidden``
        (agent_memory_disabled) when the named agent is disabled, whatever ``scope``, and
        (agent_group_forbidden) when ``scope`` is the agent's or combined and the caller is in none of its
        groups. The person's custody of what is stored (``Use.CUSTODY``) is never refused by them."""
        if use is Use.AGENT and agent is not None and agent.object_id.strip():
            self._agent_settings.enforce(caller, instance_id, agent.object_id, scope)

    @staticmethod
    def require_agent(scope: Scope, agent: AgentContext | None) -> AgentContext:
        """``agent``, which ``scope`` needs; ``InvalidInput`` (agent_required) without one."""
        if agent is None or not agent.object_id.strip():
            raise InvalidInput(f"agent_object_id is required for scope={scope.value}", code="agent_required")
        return agent

    @staticmethod
    def write_scope(scope: Scope, operation: str) -> Scope:
        """``scope``, which ``operation`` writes; ``InvalidInput`` (invalid_scope) for combined, which is read-only."""
        if scope is Scope.COMBINED:
            raise InvalidInput(
                f"scope=combined is read-only; {operation} takes scope=user or scope=agent",
                code="invalid_scope",
            )
        return scope
