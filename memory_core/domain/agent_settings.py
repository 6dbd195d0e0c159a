"""Per-agent memory settings that operators keep (the seed's "Agent configuration requirements")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from memory_core.domain.errors import Forbidden, SecretDetected
from memory_core.domain.identity import Caller, internal_owner
from memory_core.domain.models import Scope, agent_hash
from memory_core.domain.records import Partition, Record
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import ContentScanner

SETTINGS_OWNER = internal_owner("settings")
AGENT_SETTINGS = "agent_settings"
# Settings are read on every call that names an agent; a short per-process cache
# keeps that off the hot path. Another instance sees a change within this time.
CACHE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class AgentSettings:
    agent_object_id: str
    enabled: bool = True
    auto_append: bool = False
    default_write_scope: str = "user"
    policy_instructions: str | None = None
    allowed_group_ids: tuple[str, ...] | None = None

    def to_data(self) -> dict[str, object]:
        data = asdict(self)
        data["allowed_group_ids"] = list(self.allowed_group_ids) if self.allowed_group_ids is not None else None
        return data

    @staticmethod
    def from_data(data: dict[str, object]) -> AgentSettings:
        groups = data.get("allowed_group_ids")
        return AgentSettings(
            agent_object_id=str(data["agent_object_id"]),
            enabled=bool(data.get("enabled", True)),
            auto_append=bool(data.get("auto_append", False)),
            default_write_scope=str(data.get("default_write_scope") or "user"),
            policy_instructions=data.get("policy_instructions"),  # type: ignore[arg-type]
            allowed_group_ids=tuple(groups) if isinstance(groups, list) else None,
        )


class AgentSettingsBook:
    """Reads, writes and enforces agent settings, cached briefly per process."""

    def __init__(
        self, store: MemoryStore, clock: Callable[[], float] = time.monotonic, scanner: ContentScanner | None = None
    ) -> None:
        """``scanner``: the secret screen writes pass through; ``put`` runs the instructions through it."""
        self._store = store
        self._clock = clock
        self._scanner = scanner
        self._cache: dict[tuple[str, str], tuple[float, AgentSettings]] = {}
        self._lock = threading.Lock()

    def get(self, instance_id: str, agent_object_id: str) -> AgentSettings:
        """The agent's settings; the defaults (enabled, no restrictions) when none were stored."""
        cache_key = (instance_id, agent_object_id)
        now = self._clock()
        with self._lock:
            cached = self._cache.get(cache_key)
        if cached and now - cached[0] < CACHE_SECONDS:
            return cached[1]
        record = self._store.get_record(Partition(instance_id, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(agent_object_id))
        settings = AgentSettings.from_data(record.data) if record else AgentSettings(agent_object_id)
        with self._lock:
            self._cache[cache_key] = (now, settings)
        return settings

    def put(self, instance_id: str, settings: AgentSettings) -> AgentSettings:
        """Replace the agent's settings; every process sees them within ``CACHE_SECONDS``.

        Raises ``SecretDetected`` (where "policy_instructions"), storing nothing, when the
        instructions look like they hold a secret: they are sent word for word to every model
        that calls memory as this agent (the MCP instructions and append_memory's description).
        """
        instructions = settings.policy_instructions
        findings = self._scanner.scan(instructions) if self._scanner is not None and instructions else ()
        if findings:
            raise SecretDetected(sorted({str(f.detector) for f in findings}), where="policy_instructions")
        self._store.put_record(
            Record(Partition(instance_id, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash(settings.agent_object_id),
                   settings.to_data())
        )
        with self._lock:
            self._cache[(instance_id, settings.agent_object_id)] = (self._clock(), settings)
        return settings

    def enforce(self, caller: Caller, instance_id: str, agent_object_id: str, scope: Scope) -> AgentSettings:
        """Raise ``Forbidden`` when the agent's memory is disabled, or the caller may not use its agent scope."""
        settings = self.get(instance_id, agent_object_id)
        if not settings.enabled:
            raise Forbidden("memory is disabled for this agent by the operator", code="agent_memory_disabled")
        allowed = settings.allowed_group_ids
        if scope is not Scope.USER and allowed is not None and not set(caller.group_ids) & set(allowed):
            raise Forbidden(
                "this agent's memory is limited to certain groups, and the caller is in none of them",
                code="agent_group_forbidden",
            )
        return settings
