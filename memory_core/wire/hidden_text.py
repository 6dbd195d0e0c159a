"""Request and response models of the operator's scan for stored text no reader sees
(``domain.hidden_text_scan``), and of the request that forgets what it finds."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from memory_core.domain.hidden_text_scan import (
    DEFAULT_OWNERS_PER_PAGE,
    ENTRIES_PER_PAGE,
    MAX_OWNERS_PER_PAGE,
    HiddenTextFinding,
    HiddenTextScanPage,
)
from memory_core.domain.models import SHARED_OWNER
from memory_core.wire.custody import PageQuery


class HiddenTextScanQuery(PageQuery):
    limit: int = Field(default=DEFAULT_OWNERS_PER_PAGE, ge=1, le=MAX_OWNERS_PER_PAGE,
                       description=f"Memories (one per user) a page reads at most (1-{MAX_OWNERS_PER_PAGE}); a page "
                                   f"also ends once about {ENTRIES_PER_PAGE:,} entries are read, inside a memory "
                                   "larger than that")


class HiddenTextFindingModel(BaseModel):
    """A stored entry holding text no reader sees: where, and its first such character; never the text."""

    upn: str | None = Field(description="Whose memory holds it; null for a legacy entry, which has no owner")
    entry_id: str
    scope: str
    agent_object_id: str | None
    share: str
    created_on: datetime
    field: str = Field(description="content, reason, agent_name, session_id, operation_id or tags")
    character: str = Field(description='The first such character, as "U+E0061"')

    @classmethod
    def from_finding(cls, finding: HiddenTextFinding) -> Self:
        entry = finding.entry
        return cls(upn=None if entry.key.upn == SHARED_OWNER else entry.key.upn, entry_id=entry.id,
                   scope=entry.key.scope.value, agent_object_id=entry.key.agent_object_id, share=entry.share.value,
                   created_on=entry.created_on, field=finding.field, character=f"U+{ord(finding.character):04X}")


class HiddenTextScanResponse(BaseModel):
    findings: list[HiddenTextFindingModel]
    owners_scanned: int = Field(description="Memories (one per user, and the shared one) this page finished "
                                            "reading: a memory read over several pages counts on its last")
    entries_scanned: int = Field(description="Visible entries this page looked at")
    continuation: str | None = Field(
        default=None, description="Set while memories are left to scan: pass it as ?continuation= for the next page")

    @classmethod
    def from_page(cls, page: HiddenTextScanPage) -> Self:
        return cls(findings=[HiddenTextFindingModel.from_finding(f) for f in page.findings],
                   owners_scanned=page.owners_scanned, entries_scanned=page.entries_scanned,
                   continuation=page.continuation)


class OperatorForgetRequest(BaseModel):
    """POST /operator/forgets: ask for one user's entry to be forgotten (pending an operator's approval)."""

    model_config = ConfigDict(extra="ignore")
    upn: Annotated[str, StringConstraints(min_length=1, max_length=320, strip_whitespace=True)]
    entry_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
