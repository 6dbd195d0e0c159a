"""What content may become a memory entry, and the entry it becomes.

Every write of content (append, import, the memory tool's files, a legacy import) makes its
entry here: the write size limit, no empty text (unless a replace empties the scope), tags
normalized, and the secret screen, whose refusal is audited before it is raised. Nothing is
stored here; the caller stores the entry.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.errors import InvalidInput, PayloadTooLarge, SecretDetected
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope, sha256_hex
from memory_core.domain.tags import normalize_tags
from memory_core.domain.views import ContentScanner, WriteOptions


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
    ) -> MemoryEntry:
        """A new entry of ``content`` by ``caller`` in ``key``, created now.

        Raises ``PayloadTooLarge`` past the write size limit, ``InvalidInput`` for empty text
        (unless ``allow_empty``) or bad tags, ``SecretDetected`` (audited) for a secret.
        """
        size = len(content.encode("utf-8"))
        if size > self._max_write_bytes:
            raise PayloadTooLarge(
                f"content_markdown is {size} bytes; the limit is {self._max_write_bytes} bytes"
            )
        if not allow_empty and not content.strip():
            raise InvalidInput("content_markdown must not be empty", code="empty_content")
        tags = normalize_tags(options.tags, session_id=options.session_id, agent_id=key.agent_object_id)
        self.screen(caller, key, content, options)
        return MemoryEntry(
            id=self._new_id(),
            key=key,
            content_markdown=content,
            kind=kind,
            created_on=self._clock(),
            author_upn=caller.upn,
            author_user_id=caller.user_id,
            agent_name=options.agent_name or (agent.name if agent and key.scope is Scope.AGENT else None),
            reason=options.reason,
            session_id=options.session_id,
            operation_id=options.operation_id,
            tags=tags,
            share=options.share,
            content_sha256=sha256_hex(content),
        )

    def screen(self, caller: Caller, key: ProfileKey, content: str, options: WriteOptions) -> None:
        """Refuse ``content`` that looks like a secret: ``SecretDetected``, after an audited
        ``write_rejected`` event (its SHA-256 and size, never its text)."""
        findings = self._scanner.scan(content) if self._scanner else []
        if not findings:
            return
        detectors = sorted({str(f.detector) for f in findings})
        self._audit.record(
            AuditAction.WRITE_REJECTED, actor=caller.upn or "operator", instance_id=key.instance_id, upn=key.upn,
            scope=key.scope.value, agent_object_id=key.agent_object_id, session_id=options.session_id,
            operation_id=options.operation_id, content_sha256=sha256_hex(content),
            byte_count=len(content.encode("utf-8")), detail="secret_detected: " + ", ".join(detectors),
        )
        raise SecretDetected(detectors)
