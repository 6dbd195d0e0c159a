"""What content may become a memory entry, and the entry it becomes.

Every write of content (append, import, the memory tool's files, a legacy import) makes its
entry here: the write size limit, no empty text (unless a replace empties the scope), tags
normalized, and the screens of the content and of every field stored beside it (text no reader
sees, then secrets), whose refusals are audited before they are raised. Nothing is stored here;
the caller stores the entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.errors import InvalidInput, PayloadTooLarge, SecretDetected
from memory_core.domain.hidden_text import first_hidden, invisible_in_label, refusal
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import SHARED_OWNER, EntryKind, MemoryEntry, ProfileKey, Scope, Share, sha256_hex
from memory_core.domain.tags import normalize_tags
from memory_core.domain.views import ContentScanner, WriteOptions, detector_names

CONTENT = "content"
"""How a refusal names the content: "content looks like it contains a secret"."""


class NewEntries:
    """Makes the entries writes store, refusing content the service may not keep."""

    def __init__(
        self,
        audit: AuditTrail,
        *,
        max_write_bytes: int,
        clock: Callable[[], datetime],
        new_id: Callable[[], str],
        scanner: ContentScanner | None,
    ) -> None:
        self._audit = audit
        self._max_write_bytes = max_write_bytes
        self._clock = clock
        self._new_id = new_id
        self._scanner = scanner

    def entry(
        self,
        caller: Caller,
        key: ProfileKey,
        agent: AgentContext | None,
        content: str,
        kind: EntryKind,
        options: WriteOptions,
        *,
        allow_empty: bool = False,
        actor: str | None = None,
        entry_id: str | None = None,
    ) -> MemoryEntry:
        """A new entry of ``content`` by ``caller`` in ``key``, created now.

        Raises ``PayloadTooLarge`` past the write size limit, ``InvalidInput`` for empty text
        (unless ``allow_empty``), bad tags, or a tag or agent name holding a character that draws nothing
        (``refuse_invisible_labels``, after the screens: a run of them is hidden text, audited), ``HiddenText``
        for text no reader sees and ``SecretDetected`` for a secret (both audited, with ``actor`` as the event's actor: the
        caller's UPN unless given). ``entry_id``: the id the caller chose (``MemoryService.new_id``), else a new one.
        """
        size = len(content.encode("utf-8"))
        if size > self._max_write_bytes:
            raise PayloadTooLarge(
                f"content_markdown is {size} bytes; the limit is {self._max_write_bytes} bytes"
            )
        if not allow_empty and not content.strip():
            raise InvalidInput("content_markdown must not be empty", code="empty_content")
        if options.share is Share.LEGACY and key.upn != SHARED_OWNER:
            # Legacy marks memory with no owner, loaded by an operator: a user's own entry claiming it would
            # misstate where the entry came from.
            raise InvalidInput("share must be 'private' or 'team'; 'legacy' is only for an operator's legacy import",
                               code="invalid_share")
        tags = normalize_tags(options.tags, session_id=options.session_id, agent_id=key.agent_object_id)
        # The name the entry keeps: the write's own, or else the calling agent's (a header, the memory
        # tool's agentName, a legacy import's agent_name), screened like the write's own.
        agent_name = options.agent_name or (agent.name if agent and key.scope is Scope.AGENT else None)
        if agent_name != options.agent_name:
            options = replace(options, agent_name=agent_name)
        self.screen(caller, key, content, options, actor=actor)
        refuse_invisible_labels(tags, agent_name)
        return MemoryEntry(
            id=entry_id or self._new_id(),
            key=key,
            content_markdown=content,
            kind=kind,
            created_on=self._clock(),
            author_upn=caller.upn,
            author_user_id=caller.user_id,
            agent_name=agent_name,
            reason=options.reason,
            session_id=options.session_id,
            operation_id=options.operation_id,
            tags=tags,
            share=options.share,
            content_sha256=sha256_hex(content),
        )

    def screen(
        self, caller: Caller, key: ProfileKey, content: str, options: WriteOptions, *, actor: str | None = None,
        name: str = CONTENT,
    ) -> None:
        """Refuse a write that carries text no reader sees, or that looks like it carries a secret: in its
        content, or in any text stored beside it (``stored_beside``: each is shown again with the entry,
        in reads and listings). ``name`` is what a refusal calls ``content`` ("path" for a file's name).

        Raises ``HiddenText`` or ``SecretDetected`` naming where, after an audited ``write_rejected``
        event: the content's size, never its hash (a refused password's SHA-256 is found again by guessing),
        never a field's text, and no session or operation id that held what was refused.
        """
        hidden = hidden_in(content, options, name)
        if hidden is not None:
            where, character = hidden
            self._reject(caller, key, content, options, (where,), f"hidden_text in {where}: U+{ord(character):04X}",
                         actor)
            raise refusal(where, character)
        if self._scanner is None:
            return
        found, findings = self._secret_in(self._scanner, content, options, name, key.agent_object_id)
        if not findings:
            return
        detectors = detector_names(findings)
        place = "" if found == (CONTENT,) else f" in {', '.join(found)}"
        self._reject(caller, key, content, options, found, f"secret_detected{place}: " + ", ".join(detectors), actor)
        raise SecretDetected(detectors, where=", ".join(found))

    def _reject(self, caller: Caller, key: ProfileKey, content: str, options: WriteOptions, where: Sequence[str],
                detail: str, actor: str | None) -> None:
        """The ``write_rejected`` event of a refused write; ids named in ``where`` are left out of it."""
        self._audit.record(
            AuditAction.WRITE_REJECTED, actor=actor or caller.upn, instance_id=key.instance_id, upn=key.upn,
            scope=key.scope.value, agent_object_id=None if AGENT_ID in where else key.agent_object_id,
            session_id=None if "session_id" in where else options.session_id,
            operation_id=None if "operation_id" in where else options.operation_id,
            byte_count=len(content.encode("utf-8")), detail=detail,
        )

    @staticmethod
    def _secret_in(
        scanner: ContentScanner, content: str, options: WriteOptions, name: str, agent_object_id: str | None
    ) -> tuple[tuple[str, ...], Sequence[Any]]:
        """Where a secret is (names as the caller sent them, ``name`` for the content) and what kinds; ``((), [])``
        for none. The agent's id is screened too: it is stored with the entry, shown in its heading to every model
        that reads it, and kept in the audit trail."""
        beside = stored_beside(options) + ([(AGENT_ID, agent_object_id)] if agent_object_id else [])
        findings = scanner.scan(content)
        if findings:  # and every field beside it holding one too: the refusal's event leaves those out
            return (name, *(field for field, text in beside if scanner.scan(text))), findings
        if not beside:
            return (), []
        # One scan for them all: a scan costs about 15 us however short its text.
        findings = scanner.scan("\n".join(text for _, text in beside))
        if not findings:
            return (), []
        named = tuple(name for name, text in beside if scanner.scan(text))
        # None alone: a secret split over two of them (a key block's header in one) - name every one.
        return named or tuple(name for name, _ in beside), findings


def refuse_invisible_labels(tags: Sequence[str], agent_name: str | None) -> None:
    """``InvalidInput`` (invalid_tag, invalid_agent_name) when a tag or the agent's name holds a character that
    draws nothing or formats text, even one alone (``hidden_text.invisible_in_label``): a label is shown and
    matched as it is, so "wo\u200brk" would read as "work" and match other entries than "work" does."""
    for tag in tags:
        character = invisible_in_label(tag)
        if character is not None:
            raise InvalidInput(f"a tag holds a character that draws nothing or formats text (U+{ord(character):04X}):"
                               " it would read as another tag and match other entries; remove it",
                               code="invalid_tag")
    character = invisible_in_label(agent_name) if agent_name else None
    if character is not None:
        raise InvalidInput(f"agent_name holds a character that draws nothing or formats text (U+{ord(character):04X})"
                           ": it would read as another agent's name; remove it", code="invalid_agent_name")


def hidden_in(content: str, beside: WriteOptions | MemoryEntry, name: str = CONTENT) -> tuple[str, str] | None:
    """(where, the character) of the first character no reader sees (``hidden_text``): in ``content``, named
    ``name``, or in a field stored beside it (``stored_beside``), by the name a write gives it; or None."""
    return first_hidden(((name, content), *stored_beside(beside)))


#: The agent id's name in a refusal ("agent_object_id looks like it contains a secret"), as the REST body spells it.
AGENT_ID = "agent_object_id"


def stored_beside(options: WriteOptions | MemoryEntry) -> list[tuple[str, str]]:
    """The text a write stores beside its content (or a stored entry keeps there), by the name the caller
    gave it, empty ones left out.

    A read shows the reason, the agent's name and the session id in the entry's heading, and a
    listing every field: a secret in one of them would be kept and shown like one in the content.
    """
    fields = (("reason", options.reason), ("agent_name", options.agent_name), ("session_id", options.session_id),
              ("operation_id", options.operation_id), ("tags", "\n".join(options.tags)))
    return [(name, text) for name, text in fields if text]
