"""Per-agent memory settings that operators keep (the seed's "Agent configuration requirements")."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from memory_core.domain.audit import AuditAction, AuditEvent, AuditTrail
from memory_core.domain.errors import Conflict, Forbidden, NotFound, SecretDetected, Unavailable
from memory_core.domain.hidden_text import hidden_character
from memory_core.domain.identity import Caller, internal_owner
from memory_core.domain.models import Scope, agent_hash, sha256_hex
from memory_core.domain.paging import Page, check_page_size, decode_token, encode_token
from memory_core.domain.records import ABSENT, Partition, Record
from memory_core.domain.settings_changes import settings_change
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import ContentScanner, refuse_operator_text, refuse_secret

SETTINGS_OWNER = internal_owner("settings")
AGENT_SETTINGS = "agent_settings"
# Settings are read on every call that names an agent; a short per-process cache
# keeps that off the hot path. Another instance sees a change within this time.
CACHE_SECONDS = 5.0

log = logging.getLogger("memory_core.agent_settings")
# A settings record's mark: the screen's ruleset (ContentScanner.ruleset) its instructions passed,
# at put or at a read that scanned them. Instructions are scanned when read unless the mark names
# the current ruleset: records stored before the screen existed, records of versions that marked
# only that they were screened ("screened_at_put": true), and records screened before an upgrade
# changed the detectors.
SCREENED_UNDER = "screened_under"
# Two operators saving one agent's settings at once: each write is conditional on the record it
# described its change against, and the one that lost reads again and describes its change
# against the winner's. Beyond this many losses in a row the put gives up with Conflict.
PUT_ATTEMPTS = 5


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


@dataclass(frozen=True, slots=True)
class StoredSettings:
    """An agent's stored settings and what the models that call memory as it see of them (the
    same, or without stored instructions that fail the secret screen or hold hidden text).
    ``exists``: False when none are stored, and ``settings`` are the defaults the agent is governed by."""

    settings: AgentSettings
    for_models: AgentSettings
    exists: bool = True

    @property
    def instructions_withheld(self) -> bool:
        """Stored instructions that fail the secret screen or hold hidden text, so models do not receive them."""
        return self.settings.policy_instructions != self.for_models.policy_instructions


@dataclass(frozen=True, slots=True)
class _Read:
    """One read of an agent's settings as the cache keeps it, and when it was made."""

    at: float
    stored: StoredSettings


class AgentSettingsBook:
    """Reads, writes and enforces agent settings, cached briefly per process."""

    def __init__(
        self, store: MemoryStore, audit: AuditTrail, *, clock: Callable[[], float] = time.monotonic,
        scanner: ContentScanner | None = None,
    ) -> None:
        """``audit``: where every change is recorded (the instance's settings trail);
        ``scanner``: the secret screen writes pass through; ``put`` runs the instructions through it."""
        self._store = store
        self._audit = audit
        self._clock = clock
        self._scanner = scanner
        self._cache: dict[tuple[str, str], _Read] = {}
        # Stored versions (instance, agent, etag) whose withheld instructions this process has warned about:
        # the warning is for an operator to act on, once per version, not at every read of the store.
        self._warned: set[tuple[str, str, str | None]] = set()
        self._lock = threading.Lock()

    def get(self, instance_id: str, agent_object_id: str) -> AgentSettings:
        """The agent's settings; the defaults (enabled, no restrictions) when none were stored."""
        return self.stored(instance_id, agent_object_id).settings

    def stored(self, instance_id: str, agent_object_id: str) -> StoredSettings:
        """The agent's settings (``get``) and what models see of them (``for_models``), from one read."""
        return self._read(instance_id, agent_object_id).stored

    def for_models(self, instance_id: str, agent_object_id: str) -> AgentSettings:
        """The agent's settings as the models that call memory as it may see them: as ``get``, except
        that stored policy instructions that look like they hold a secret, or that hold text no reader
        sees (``hidden_text``; saved before it was refused, checked at every read), are left out (None).

        Instructions are scanned when read unless their record is marked as screened under the
        scanner's current ruleset (``SCREENED_UNDER``): a put marks it, and so does a read whose scan
        finds nothing, so each record is scanned once per ruleset, not at every read. Instructions
        that fail can only predate the screen, or a detector added since they were saved. They stay
        withheld until an operator saves instructions that pass it; each process logs a warning at the
        first read of each stored version that fails, and a debug line at the reads after it."""
        return self.stored(instance_id, agent_object_id).for_models

    def _read(self, instance_id: str, agent_object_id: str) -> _Read:
        cache_key = (instance_id, agent_object_id)
        now = self._clock()
        with self._lock:
            cached = self._cache.get(cache_key)
        if cached and now - cached.at < CACHE_SECONDS:
            return cached
        record = self._record(instance_id, agent_object_id)
        read = _Read(now, self._stored_settings(instance_id, agent_object_id, record, stamp=True))
        with self._lock:
            self._cache[cache_key] = read
        return read

    def is_stored(self, instance_id: str, agent_object_id: str) -> bool:
        """Whether settings are stored for exactly this agent id (read now, not cached): how an id that input rules
        refuse, stored before them, is still named (``api.operator``)."""
        record = self._record(instance_id, agent_object_id)
        return record is not None and record.data.get("agent_object_id") == agent_object_id

    def is_named(self, instance_id: str, agent_object_id: str) -> bool:
        """Whether settings are stored for exactly this agent id (``is_stored``), or the settings trail holds an
        event naming exactly it (its settings since deleted, say): an id an operator has had a reason to name. The
        trail is filtered by exactly that id, so this tells nothing its trail would not. At most two reads."""
        if self.is_stored(instance_id, agent_object_id):
            return True
        return bool(self.trail(instance_id, limit=1, agent_object_id=agent_object_id).items)

    def page(self, instance_id: str, *, limit: int, continuation: str | None = None) -> Page[StoredSettings]:
        """One page of the agents with stored settings in the instance, each with what models see of
        them: one query of at most ``limit`` + 1 records, ordered by a key of the agent's id (stable
        from page to page, not alphabetical). ``InvalidInput`` for a foreign continuation token."""
        position = decode_token("agent-settings", continuation)
        records = self._store.page_records(Partition(instance_id, SETTINGS_OWNER), AGENT_SETTINGS,
                                           limit=check_page_size(limit) + 1, after=position[0] if position else None)
        token = encode_token("agent-settings", [records[limit - 1].id]) if len(records) > limit else None
        return Page([self._stored_settings(instance_id, str(r.data["agent_object_id"]), r, warn=False)
                     for r in records[:limit]], token)

    def _stored_settings(
        self, instance_id: str, agent_object_id: str, record: Record | None, *, warn: bool = True,
        stamp: bool = False,
    ) -> StoredSettings:
        """The settings ``record`` holds (the defaults for none) and what models see of them: its
        instructions are withheld when they hold hidden text, and else screened unless the record is
        marked as screened under the current ruleset.
        ``stamp``: mark the record when the scan finds nothing (``_stamp``)."""
        settings = _settings_of(record, agent_object_id)
        if record is None:
            return StoredSettings(settings, settings, exists=False)
        if not settings.policy_instructions:
            return StoredSettings(settings, settings)
        version = (instance_id, agent_object_id, record.etag) if warn else None
        hidden = hidden_character(settings.policy_instructions)
        if hidden is not None:
            # Saved before hidden text was refused. No mark says so, so every read checks: 0.07 us for ASCII.
            why = f"hold invisible characters no reader sees (U+{ord(hidden):04X})"
            return StoredSettings(settings, self._withheld(instance_id, settings, version, why))
        if self._scanner is None:
            return StoredSettings(settings, settings)
        ruleset = self._scanner.ruleset
        if record.data.get(SCREENED_UNDER) == ruleset:
            return StoredSettings(settings, settings)
        for_models = self._screened(instance_id, settings, version=version)
        if stamp and for_models == settings:
            self._stamp(record, ruleset)
        return StoredSettings(settings, for_models)

    def _stamp(self, record: Record, ruleset: str) -> None:
        """Mark ``record`` as screened under ``ruleset``, so no process scans it again until the ruleset
        changes. No audit event: no setting changed, and the trail records what operators change.

        The write is conditional on the record as read, so it never brings back settings that a put
        replaced meanwhile (that put carries its own mark); when it does not land (that put, or the
        store unavailable), the next read scans again."""
        if record.etag is None:  # stores set it on read; without it the write could not be conditional
            return
        try:
            self._store.put_record(replace(record, data={**record.data, SCREENED_UNDER: ruleset}))
        except (Conflict, Unavailable) as missed:
            log.debug("agent settings %s: not marked as screened (%s); the next read scans them again",
                      record.id, type(missed).__name__)

    def _first_warning(self, version: tuple[str, str, str | None]) -> bool:
        """True the first time this process asks about ``version`` (instance, agent, etag): whether
        instructions it withholds are worth a warning rather than a debug line."""
        with self._lock:
            if version in self._warned:
                return False
            self._warned.add(version)
            return True

    def _screened(
        self, instance_id: str, settings: AgentSettings, *, version: tuple[str, str, str | None] | None
    ) -> AgentSettings:
        """``settings``, or a copy without instructions that fail the screen (no text: no scan),
        logged as a warning the first time for the stored ``version``, else as a debug line (None:
        always debug, for listings)."""
        try:
            refuse_secret(self._scanner, settings.policy_instructions, "policy_instructions")
        except SecretDetected as refused:
            why = f"look like they contain a secret (detectors: {', '.join(refused.detectors)})"
            return self._withheld(instance_id, settings, version, why)
        return settings

    def _withheld(self, instance_id: str, settings: AgentSettings, version: tuple[str, str, str | None] | None,
                  why: str) -> AgentSettings:
        """``settings`` without their instructions, logged with ``why`` as a warning the first time for the
        stored ``version``, else as a debug line (None: always debug, for listings)."""
        log.log(
            logging.WARNING if version is not None and self._first_warning(version) else logging.DEBUG,
            "agent %s in instance %s: its stored policy_instructions %s; they are withheld from models until an"
            " operator saves instructions that pass the screen", settings.agent_object_id, instance_id, why,
        )
        return replace(settings, policy_instructions=None)

    def _record(self, instance_id: str, agent_object_id: str) -> Record | None:
        """The agent's settings record, read now (not cached)."""
        partition = Partition(instance_id, SETTINGS_OWNER)
        return self._store.get_record(partition, AGENT_SETTINGS, agent_hash(agent_object_id))

    def put(self, instance_id: str, settings: AgentSettings, *, actor: str) -> AgentSettings:
        """Replace the agent's settings, with an ``agent_settings`` audit event by ``actor`` in the
        same atomic write (``trail``); every process sees them within ``CACHE_SECONDS``.

        The event names what changed against the settings this write replaced, and for the policy
        instructions their SHA-256 and size, never their text: a write lands only if the settings
        are still those it was described against, else it is described again against the new ones
        (``PUT_ATTEMPTS``). Raises ``HiddenText`` or ``SecretDetected`` (where "policy_instructions"),
        storing nothing, when the instructions hold text no reader sees or look like they hold a
        secret: they are sent word for word to every model that calls memory as this agent (the MCP
        instructions and append_memory's description). The same for the agent's id (where
        "agentObjectId", a secret only) and its groups (where "allowed_group_ids"), which the settings
        trail and the operators' agent list show. Raises ``Conflict``, storing nothing, when other
        writes kept changing the settings for every attempt.
        """
        instructions = settings.policy_instructions
        refuse_operator_text(self._scanner, instructions, "policy_instructions")
        # The agent's id and its groups are stored in the settings, their audit trail and the operators' agent
        # list: screened like the agent id a memory write stores (one scan for all the groups).
        refuse_secret(self._scanner, settings.agent_object_id, "agentObjectId")
        if settings.allowed_group_ids:
            refuse_operator_text(self._scanner, "\n".join(settings.allowed_group_ids), "allowed_group_ids")
        partition = Partition(instance_id, SETTINGS_OWNER)
        # Marked screened, so reads skip the scan (and a new process the detectors' load) for it.
        data = settings.to_data()
        if instructions and self._scanner is not None:
            data[SCREENED_UNDER] = self._scanner.ruleset
        digest = sha256_hex(instructions) if instructions else None
        size = len(instructions.encode("utf-8")) if instructions else None
        for _ in range(PUT_ATTEMPTS):
            before = self._record(instance_id, settings.agent_object_id)
            _, event = self._audit.event(
                AuditAction.AGENT_SETTINGS, actor=actor, instance_id=instance_id, upn=SETTINGS_OWNER,
                agent_object_id=settings.agent_object_id, content_sha256=digest, byte_count=size,
                detail=settings_change(_settings_of(before, settings.agent_object_id), settings),
            )
            record = Record(partition, AGENT_SETTINGS, agent_hash(settings.agent_object_id), data,
                            etag=before.etag if before is not None else ABSENT)
            try:
                self._store.put_records([record, event])  # the conditional record first (put_records)
                break
            except Conflict:
                continue
        else:
            raise Conflict("the agent's settings kept changing while these were saved; nothing was stored, try again")
        with self._lock:
            self._cache[(instance_id, settings.agent_object_id)] = _Read(self._clock(),
                                                                         StoredSettings(settings, settings))
        return settings

    def delete(self, instance_id: str, agent_object_id: str, *, actor: str) -> StoredSettings:
        """Erase the agent's settings, so it is governed as an agent with none (``get``'s defaults: enabled, any
        group, no instructions); every process sees it within ``CACHE_SECONDS``. Answers the settings erased.

        Settings are configuration, not memory: nothing of any person's memory is touched, and no operator's
        approval is asked. The erasure is If-Match the record it describes and carries its ``agent_settings_deleted``
        event by ``actor`` (the old values against the defaults, ``settings_change``; for the instructions their
        SHA-256 and size, never their text) in one atomic unit (``MemoryStore.delete_record_and_put``). A record
        changed since it was read is read and described again (``PUT_ATTEMPTS`` in all). Raises ``NotFound`` when
        no settings are stored for exactly this id (nothing written), ``Conflict`` when other writes kept changing
        them for every attempt (nothing erased, no event)."""
        for _ in range(PUT_ATTEMPTS):
            before = self._record(instance_id, agent_object_id)
            if before is None or before.data.get("agent_object_id") != agent_object_id:
                raise NotFound(f"no settings are stored for agent {agent_object_id!r}")
            erased = _settings_of(before, agent_object_id)
            instructions = erased.policy_instructions
            _, event = self._audit.event(
                AuditAction.AGENT_SETTINGS_DELETED, actor=actor, instance_id=instance_id, upn=SETTINGS_OWNER,
                agent_object_id=agent_object_id, content_sha256=sha256_hex(instructions) if instructions else None,
                byte_count=len(instructions.encode("utf-8")) if instructions else None,
                detail=settings_change(erased, AgentSettings(agent_object_id)),
            )
            try:
                erased_now = self._store.delete_record_and_put(before, event) is not None
            except Conflict:
                continue
            if not erased_now:  # another deletion erased them since the read, with its own event
                raise NotFound(f"no settings are stored for agent {agent_object_id!r}")
            break
        else:
            raise Conflict("the agent's settings kept changing while they were deleted; nothing was erased, try again")
        with self._lock:
            self._cache[(instance_id, agent_object_id)] = _Read(self._clock(), self._stored_settings(
                instance_id, agent_object_id, None))
        return self._stored_settings(instance_id, agent_object_id, before, warn=False)

    def trail(
        self, instance_id: str, *, limit: int, continuation: str | None = None, newest_first: bool = False,
        agent_object_id: str | None = None,
    ) -> Page[AuditEvent]:
        """One page of the instance's settings changes (``AuditTrail.page``), or of one agent's."""
        return self._audit.page(instance_id, SETTINGS_OWNER, limit=limit, continuation=continuation,
                                newest_first=newest_first, agent_object_id=agent_object_id)

    def enforce(self, caller: Caller, instance_id: str, agent_object_id: str, scope: Scope) -> AgentSettings:
        """Raise ``Forbidden`` when the agent's memory is disabled, or the caller may not use its agent scope.

        For the agent's use of memory only: ``ProfileTargets.guard`` decides which calls that is (``Use``)."""
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


def _settings_of(record: Record | None, agent_object_id: str) -> AgentSettings:
    """The settings a record holds; the defaults (enabled, no restrictions) when there is none."""
    return AgentSettings.from_data(record.data) if record else AgentSettings(agent_object_id)
