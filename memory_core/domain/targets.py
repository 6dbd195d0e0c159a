"""Which profiles a call touches, and under which sharing policy: the rules every use case starts from.

A call names a scope and maybe an agent; the caller is authenticated. From them come the
profile keys (always in the caller's own partition), after the operators' agent settings
have had their say (a disabled agent, or a caller outside its groups, is refused).
"""

from __future__ import annotations

from memory_core.domain.agent_settings import AgentSettingsBook
from memory_core.domain.errors import InvalidInput
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.sharing import SharingPolicy, resolve_policy


class ProfileTargets:
    """The keys and the sharing policy of one call, checked against the operators' agent settings."""

    def __init__(
        self, agent_settings: AgentSettingsBook, default_sharing: SharingPolicy, *, allow_sharing_override: bool
    ) -> None:
        self._agent_settings = agent_settings
        self._default_sharing = default_sharing
        self._allow_sharing_override = allow_sharing_override

    def key(self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None) -> ProfileKey:
        """The key of ``scope`` (user or agent) for ``caller``.

        Raises ``InvalidInput`` when scope agent has no agent, and what ``guard`` raises.
        """
        self.guard(caller, instance_id, scope, agent)
        if scope is Scope.AGENT:
            return ProfileKey(instance_id, caller.upn, scope, self.require_agent(scope, agent).object_id)
        return ProfileKey(instance_id, caller.upn, scope)

    def read_keys(self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None) -> list[ProfileKey]:
        """The profiles a read of ``scope`` covers (combined: user then agent). Raises as ``key``."""
        if scope is Scope.COMBINED:
            agent_ctx = self.require_agent(scope, agent)
            self.guard(caller, instance_id, scope, agent_ctx)
            return [ProfileKey(instance_id, caller.upn, Scope.USER),
                    ProfileKey(instance_id, caller.upn, Scope.AGENT, agent_ctx.object_id)]
        return [self.key(caller, instance_id, scope, agent)]

    def policy(self, requested: SharingPolicy | None) -> SharingPolicy:
        """The read's sharing policy: the default, or ``requested`` where overrides are allowed (else ``Forbidden``)."""
        return resolve_policy(self._default_sharing, requested, allow_override=self._allow_sharing_override)

    def guard(self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None) -> None:
        """Operators' agent settings: a disabled agent, or a caller outside its groups, is refused."""
        if agent is not None and agent.object_id.strip():
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
