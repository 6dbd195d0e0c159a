"""Request and response models of the custody endpoints: entries, search, audit trails, legacy imports, agent
settings, and a deletion's first answer (pending or done). The deletion requests' listings, decisions and the
sweep's report are ``wire.deletions``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, field_validator

from memory_core.domain.agent_settings import AgentSettings, StoredSettings
from memory_core.domain.audit import AuditEvent
from memory_core.domain.models import MemoryEntry
from memory_core.domain.paging import MAX_PAGE_SIZE, MAX_TOKEN_CHARS, Page
from memory_core.domain.search import SearchHit
from memory_core.domain.views import PendingDeletion
from memory_core.wire.memory import AgentName, AgentObjectId, GroupId, ReadScope, SharingName, WriteScope


class _Query(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PageQuery(_Query):
    """Paging of a listing: keyset pages, so a deep page costs what the first does."""

    limit: int = Field(default=MAX_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE, description="Items per page (1-1000)")
    continuation: Annotated[str, StringConstraints(max_length=MAX_TOKEN_CHARS)] | None = Field(
        default=None, description="The previous page's continuation; omit it for the first page"
    )


#: The ``continuation`` field of a listing's page (``wire.deletions`` shares it).
CONTINUATION = Field(default=None, description="Set when more items follow: pass it as ?continuation= for the next page")


class PendingDeletionResponse(BaseModel):
    """202: the deletion waits for an operator; the affected memory is hidden meanwhile."""

    status: Literal["pending_approval"] = "pending_approval"
    request_id: str
    message: str

    @classmethod
    def from_pending(cls, pending: PendingDeletion) -> PendingDeletionResponse:
        return cls(request_id=pending.request_id, message=pending.message)


class ForgottenResponse(BaseModel):
    status: Literal["deleted"] = "deleted"
    entry_id: str


class Author(BaseModel):
    upn: str
    user_id: str | None


class AgentRef(BaseModel):
    object_id: str
    name: str | None


class EntryModel(BaseModel):
    id: str
    scope: str
    kind: str
    content_markdown: str
    created_on: datetime
    author: Author
    agent: AgentRef | None
    session_id: str | None
    reason: str | None
    tags: list[str]
    share: str
    content_sha256: str

    @classmethod
    def from_entry(cls, entry: MemoryEntry) -> EntryModel:
        agent_id = entry.key.agent_object_id
        return cls(
            id=entry.id,
            scope=entry.key.scope.value,
            kind=entry.kind.value,
            content_markdown=entry.content_markdown,
            created_on=entry.created_on,
            author=Author(upn=entry.author_upn, user_id=entry.author_user_id),
            agent=AgentRef(object_id=agent_id, name=entry.agent_name) if agent_id else None,
            session_id=entry.session_id,
            reason=entry.reason,
            tags=list(entry.tags),
            share=entry.share.value,
            content_sha256=entry.content_sha256,
        )


class EntriesQuery(PageQuery):
    scope: ReadScope
    agentObjectId: AgentObjectId | None = None
    memorySharing: SharingName | None = None


class EntriesResponse(BaseModel):
    scope: str
    entries: list[EntryModel]
    continuation: str | None = CONTINUATION
    notice: str | None = None


class SearchQuery(_Query):
    q: Annotated[str, StringConstraints(max_length=1024)] = ""
    scope: ReadScope = "user"
    agentObjectId: AgentObjectId | None = None
    tags: Annotated[str, StringConstraints(max_length=4096)] = Field(default="", description="Comma-separated; all must match")
    limit: int = Field(default=10, ge=1, le=100)
    memorySharing: SharingName | None = None

    @field_validator("q")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    def tag_list(self) -> list[str]:
        return [t.strip() for t in self.tags.split(",") if t.strip()]


class SearchBody(SearchQuery):
    """POST /memory/search: the fields of the GET query string, as a JSON object (the preferred form: the words
    stay out of URLs, which proxies, request telemetry and HTTP clients' logs record).

    Stricter than the query string, whose values are all text: each field has its JSON type (``limit`` a number,
    ``tags`` one comma-separated string), and an unknown field is refused, an ``upn`` among them (who searches
    is the credential's caller, never the body's).
    """

    model_config = ConfigDict(extra="forbid", strict=True)


class SearchHitModel(BaseModel):
    score: float
    entry: EntryModel

    @classmethod
    def from_hit(cls, hit: SearchHit) -> SearchHitModel:
        return cls(score=round(hit.score, 6), entry=EntryModel.from_entry(hit.entry))


class SearchResponse(BaseModel):
    query: str
    hits: list[SearchHitModel]
    notice: str | None = None


class AuditEventModel(BaseModel):
    time: datetime
    actor: str
    action: str
    upn: str
    scope: str | None
    agent_object_id: str | None
    session_id: str | None
    operation_id: str | None
    request_id: str | None
    entry_id: str | None
    content_sha256: str | None
    byte_count: int | None
    detail: str | None

    @classmethod
    def from_event(cls, event: AuditEvent) -> AuditEventModel:
        return cls(
            time=event.time, actor=event.actor, action=event.action.value, upn=event.upn, scope=event.scope,
            agent_object_id=event.agent_object_id, session_id=event.session_id, operation_id=event.operation_id,
            request_id=event.request_id, entry_id=event.entry_id, content_sha256=event.content_sha256,
            byte_count=event.byte_count, detail=event.detail,
        )


class AuditResponse(BaseModel):
    upn: str
    events: list[AuditEventModel]
    continuation: str | None = CONTINUATION

    @classmethod
    def from_page(cls, upn: str, page: Page[AuditEvent]) -> AuditResponse:
        return cls(upn=upn, events=[AuditEventModel.from_event(e) for e in page.items], continuation=page.continuation)


class AuditQuery(PageQuery):
    order: Literal["oldest_first", "newest_first"] = "oldest_first"


class OperatorAuditQuery(AuditQuery):
    upn: Annotated[str, StringConstraints(min_length=1, max_length=320, strip_whitespace=True)] = Field(
        description="The user whose trail to read, or exactly ~deletions: the instance's trail of dismissed deletion "
                    "requests that named no valid user (no other name starting with ~ is taken)")


# An agent's id as the agent-settings endpoints take it: any text of 1-1024 characters here, held to an agent id's
# rule (``AgentObjectId``) by ``api.operator`` unless it is exactly the id of an agent whose settings are stored. An id
# the rule refuses may be stored (saved before the rule, or by an older release), and the operator's agent list
# shows it: the operator must still be able to open, overwrite and follow that agent.
SettingsAgentId = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
SETTINGS_AGENT_ID = (
    "The agent's object ID, held to an agent id's rule (no surrounding space, nothing that draws nothing or reorders "
    "text: 400), unless it is exactly the ID of an agent whose settings are stored (as GET /operator/agents lists it)"
)


class AgentSettingsAuditQuery(AuditQuery):
    agentObjectId: SettingsAgentId | None = Field(default=None,
                                                  description=f"Only this agent's changes. {SETTINGS_AGENT_ID}")


class InstanceTrailResponse(BaseModel):
    """One page of a trail the instance keeps, not a user: its events and the next page's token."""

    events: list[AuditEventModel]
    continuation: str | None = CONTINUATION

    @classmethod
    def from_page(cls, page: Page[AuditEvent]) -> Self:
        return cls(events=[AuditEventModel.from_event(e) for e in page.items], continuation=page.continuation)


class AgentSettingsAuditResponse(InstanceTrailResponse):
    """The instance's settings trail: each event one operator's PUT of one agent's settings."""


class LegacyImportAuditResponse(InstanceTrailResponse):
    """The instance's legacy-import trail: each legacy import, and each refused for a secret, with the operator who
    sent it and the content's SHA-256 and size, never its text."""


class LegacyImportRequest(BaseModel):
    """POST /operator/legacy-imports: memory from a deployment that predates per-user memory."""

    model_config = ConfigDict(extra="ignore")
    scope: WriteScope
    agent_object_id: AgentObjectId | None = None
    agent_name: AgentName | None = None
    content_markdown: str


class LegacyImportResponse(BaseModel):
    entry_id: str
    scope: str
    share: Literal["legacy"] = "legacy"


class AgentSettingsQuery(_Query):
    agentObjectId: SettingsAgentId = Field(description=SETTINGS_AGENT_ID)


class VisibleAgentQuery(_Query):
    """An agent-settings call's ``agentObjectId`` held to an agent id's rule, as writes are (``api.operator``)."""

    agentObjectId: AgentObjectId


class AgentSettingsBody(BaseModel):
    """PUT /operator/agent-settings: the whole settings of one agent."""

    model_config = ConfigDict(extra="forbid")
    enabled: StrictBool = True
    auto_append: StrictBool = False
    default_write_scope: WriteScope = "user"
    policy_instructions: Annotated[str, StringConstraints(max_length=8192)] | None = None
    allowed_group_ids: list[GroupId] | None = Field(
        default=None, max_length=256, description="When set, only callers in one of these groups may use agent scope"
    )


class AgentSettingsModel(BaseModel):
    """An agent's settings as stored. Input rules are not applied again here: a record saved before a rule, or by
    an older release (a group ID holding a bidirectional override, say), is answered as it is stored, never as a
    500 that would hide every other agent of a listing. The console isolates and marks such text."""

    agent_object_id: str
    enabled: bool
    auto_append: bool
    default_write_scope: str = Field(description='"user" or "agent"')
    policy_instructions: str | None
    allowed_group_ids: list[str] | None = Field(
        description="When set, only callers in one of these groups may use agent scope")
    policy_instructions_withheld: bool = Field(
        default=False,
        description="The stored policy_instructions look like they contain a secret, or hold invisible Unicode tag "
                    "characters, variation selectors, zero-width characters in a row or bidirectional overrides "
                    "(they were saved before instructions were screened for them): models do not receive them until "
                    "instructions that pass are saved",
    )
    stored: bool = Field(
        default=True,
        description="Settings are stored for this agent; false: none are (never saved, or deleted), and these are "
                    "the defaults it is governed by, which a DELETE would answer 404",
    )

    @classmethod
    def from_stored(cls, stored: StoredSettings) -> AgentSettingsModel:
        return cls.from_settings(stored.settings, withheld=stored.instructions_withheld, exists=stored.exists)

    @classmethod
    def from_settings(cls, settings: AgentSettings, *, withheld: bool = False, exists: bool = True
                      ) -> AgentSettingsModel:
        return cls(
            agent_object_id=settings.agent_object_id, enabled=settings.enabled, auto_append=settings.auto_append,
            default_write_scope=settings.default_write_scope,
            policy_instructions=settings.policy_instructions,
            allowed_group_ids=list(settings.allowed_group_ids) if settings.allowed_group_ids is not None else None,
            policy_instructions_withheld=withheld, stored=exists,
        )


class DeletedAgentSettingsResponse(BaseModel):
    """DELETE /operator/agent-settings: the settings erased. The agent is governed from then on as one with none
    stored (enabled, any group, no instructions); its memory is untouched."""

    status: Literal["deleted"] = "deleted"
    deleted: AgentSettingsModel = Field(description="The settings as they were stored before the deletion")

    @classmethod
    def from_stored(cls, stored: StoredSettings) -> DeletedAgentSettingsResponse:
        return cls(deleted=AgentSettingsModel.from_stored(stored))


class AgentSettingsListResponse(BaseModel):
    """GET /operator/agents: the agents with stored settings, a page at a time."""

    agents: list[AgentSettingsModel]
    continuation: str | None = CONTINUATION

    @classmethod
    def from_page(cls, page: Page[StoredSettings]) -> AgentSettingsListResponse:
        return cls(agents=[AgentSettingsModel.from_stored(s) for s in page.items],
                   continuation=page.continuation)
