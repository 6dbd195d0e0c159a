"""Request and response models of the deletion requests' endpoints: the listings (an operator's, and a user's own),
an operator's decision and purge, and what a run of the sweep reports."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from memory_core.domain.deletion import DeletionPage, DeletionRequest, DeletionStatus, UnreadableRequest
from memory_core.domain.dismissals import Dismissed
from memory_core.domain.paging import MAX_TOKEN_CHARS
from memory_core.domain.sweeps import LeftRequest, SweepResult
from memory_core.wire.custody import CONTINUATION, PageQuery


class DeletionsQuery(PageQuery):
    status: Literal["pending", "approved", "rejected", "executed"] | None = None

    @property
    def wanted(self) -> DeletionStatus | None:
        """The status asked for; None for requests in any status."""
        return DeletionStatus(self.status) if self.status else None


class DeletionRequestModel(BaseModel):
    id: str
    instance_id: str
    upn: str
    kind: str
    status: str
    scope: str | None
    agent_object_id: str | None
    entry_id: str | None
    requested_by: str
    requested_on: datetime
    decided_by: str | None
    decided_on: datetime | None
    reason: str | None
    executed_on: datetime | None
    erased_entries: int | None
    erased_profiles: int | None
    entry_count: int | None = Field(default=None, description="Entries the request hides or erased (listings only)")

    @classmethod
    def from_request(cls, r: DeletionRequest) -> DeletionRequestModel:
        return cls(
            id=r.id, instance_id=r.instance_id, upn=r.upn, kind=r.kind.value, status=r.status.value, scope=r.scope,
            agent_object_id=r.agent_object_id, entry_id=r.entry_id, requested_by=r.requested_by,
            requested_on=r.requested_on, decided_by=r.decided_by, decided_on=r.decided_on, reason=r.reason,
            executed_on=r.executed_on, erased_entries=r.erased_entries, erased_profiles=r.erased_profiles,
        )


class UnreadableRequestModel(BaseModel):
    """A stored deletion request this release cannot read (another layout: a later release's kind, a field it
    needs missing or of another type). It is listed, not decided: approving or rejecting it needs a release that
    reads it (this one answers 409 ``unreadable_request``)."""

    request_id: str = Field(description="The id the record names, or the record's key when it names none or one "
                                        "over 320 characters: POST .../deletions/{request_id}/dismiss takes it")
    instance_id: str
    upn: str | None = Field(description="The request's user, when the record names one")
    kind: str | None = Field(description="The kind as stored, when the record names one (it may be one this "
                                         "release does not know, such as a later release's)")
    status: str | None = Field(description="The status as stored, when the record names one")
    code: Literal["unreadable_request"] = "unreadable_request"
    message: str = Field(description="Why it cannot be read, written for the operator (at most 320 characters)")
    record_id: str | None = Field(default=None, description="The record's key in the store, uncut; a dismissal "
                                                            "takes it as well as request_id")

    @classmethod
    def from_unreadable(cls, u: UnreadableRequest) -> UnreadableRequestModel:
        return cls(request_id=u.id, instance_id=u.instance_id, upn=u.upn, kind=u.kind, status=u.status,
                   message=u.message, record_id=u.record_id)


class DeletionListResponse(BaseModel):
    requests: list[DeletionRequestModel] = Field(description="The requests of the page this release reads")
    unreadable: list[UnreadableRequestModel] = Field(
        default_factory=list,
        description="The requests of the page this release cannot read (another layout), with why; they count "
                    "towards the page's limit, and the continuation follows the last of either list")
    continuation: str | None = CONTINUATION

    @classmethod
    def of_page(cls, page: DeletionPage, requests: list[DeletionRequestModel]) -> DeletionListResponse:
        """``page``'s answer: ``requests`` (its readable items, as models) and its unreadable ones."""
        return cls(requests=requests, unreadable=[UnreadableRequestModel.from_unreadable(u) for u in page.unreadable],
                   continuation=page.continuation)


class DismissedRequestModel(BaseModel):
    """A stored deletion request this release could not read, dismissed by an operator: its record erased, and
    nothing else (``domain.dismissals``)."""

    request_id: str
    instance_id: str
    upn: str | None = Field(description="The request's user, when the record names one")
    record_id: str = Field(description="The erased record's key in the store")
    record_sha256: str = Field(description="SHA-256 of the erased record's data (canonical JSON), as the "
                                           "deletion_dismissed event names it")
    holds_left: int = Field(description="Holds the request filed that still stand: what they hide stays hidden, "
                                        "neither shown again nor erased (more than 0 only when forced)")
    message: str = Field(description="Why this release could not read it")
    kind: str | None = Field(default=None, description="The kind as stored (at most 64 characters), when the "
                                                       "record names one")
    status: str | None = Field(default=None, description="The status as stored (at most 64 characters), when the "
                                                         "record names one: approved or pending is a user's "
                                                         "erasure dropped")
    forced: bool = Field(default=False, description="Dismissed past holds that still stand (?force=true)")

    @classmethod
    def from_dismissed(cls, d: Dismissed) -> DismissedRequestModel:
        return cls(request_id=d.request_id, instance_id=d.instance_id, upn=d.upn, record_id=d.record_id,
                   record_sha256=d.record_sha256, holds_left=d.holds_left, message=d.message, kind=d.kind,
                   status=d.status, forced=d.forced)


class DismissQuery(BaseModel):
    """A dismissal: refused (409 ``holds_standing``) while holds the request filed still stand, unless forced."""

    model_config = ConfigDict(extra="ignore")

    force: bool = Field(default=False, description="Dismiss even while holds the request filed still stand: the "
                                                   "memory they hide stays hidden, with no request to decide")


class RejectRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reason: Annotated[str, StringConstraints(min_length=1, max_length=2048, strip_whitespace=True)]


class PurgeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    upn: Annotated[str, StringConstraints(min_length=1, max_length=320, strip_whitespace=True)]


class LeftRequestModel(BaseModel):
    """An approved request the sweep left for a later run; it stays approved and its memory stays hidden."""

    request_id: str
    instance_id: str
    upn: str | None = Field(description="The request's user (null only for a request this release cannot read)")
    kind: Literal["clear", "replace", "forget", "purge"] | None = Field(
        description="null only for a request this release cannot read")
    reason: Literal["deadline", "store_unavailable", "conflict", "refused", "unreadable"] = Field(
        description="deadline: a store operation ran past its deadline (Cosmos DB: COSMOS_OPERATION_TIMEOUT; SQLite: "
                    "its busy timeout); store_unavailable: the store could not serve it otherwise; conflict: another "
                    "sweep was executing it, or the memory kept changing; refused: the store refused a write; "
                    "unreadable: the stored request cannot be read by this release")
    code: str = Field(description="The failure's error code, as an error answer would carry it")
    message: str = Field(description="The failure, written for the operator")

    @classmethod
    def from_left(cls, left: LeftRequest) -> LeftRequestModel:
        return cls(request_id=left.request_id, instance_id=left.instance_id, upn=left.upn,
                   kind=left.kind.value if left.kind else None,
                   reason=left.reason.value, code=left.code, message=left.message)


#: The most approved requests one bounded run of the sweep tries.
MAX_SWEEP_LIMIT = 1000


class SweepQuery(BaseModel):
    """A run of the sweep: every approved request (no ``limit``, as before the bound), or a step of a walk."""

    model_config = ConfigDict(extra="ignore")

    limit: int | None = Field(
        default=None, ge=1, le=MAX_SWEEP_LIMIT,
        description=f"Approved requests this run tries at most, executed or left (1-{MAX_SWEEP_LIMIT}); omit it to "
                    "try every one before answering. A caller that must answer within a deadline (Azure's front end "
                    "ends a request at 230 s) sweeps in steps: a small limit, then the answer's continuation")
    continuation: Annotated[str, StringConstraints(max_length=MAX_TOKEN_CHARS)] | None = Field(
        default=None, description="The previous step's continuation: try only the requests approved after the last "
                                  "one it tried (one it left is not tried again by this walk); omit it to start")


class SweepResponse(BaseModel):
    """What one run of the sweep did: 200 even when it left requests (they stay approved for a later run)."""

    executed: list[DeletionRequestModel]
    left: list[LeftRequestModel] = Field(
        default_factory=list, description="The approved requests this run left for a later one, and why; empty when "
                                          "it executed every approved request it tried. Requests this release "
                                          "cannot read are named by a walk's first step only")
    remaining: int = Field(
        default=0, description="Approved requests this run found and did not try (its limit reached); 0 when it "
                               "tried every one. A request left is not counted: it waits for another walk")
    continuation: str | None = Field(
        default=None, description="Set exactly when remaining is not 0: pass it as ?continuation= (with a limit) "
                                  "for the next step")

    @classmethod
    def from_result(cls, result: SweepResult) -> SweepResponse:
        return cls(executed=[DeletionRequestModel.from_request(r) for r in result.executed],
                   left=[LeftRequestModel.from_left(left) for left in result.left],
                   remaining=result.remaining, continuation=result.continuation)
