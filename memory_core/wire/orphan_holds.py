"""Request and response models of the operator's listing of holds whose deletion request is gone, and of their
release (``domain.orphan_holds``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from memory_core.domain.orphan_holds import (
    DEFAULT_OWNERS_PER_PAGE,
    HOLDS_PER_PAGE,
    MAX_OWNERS_PER_PAGE,
    OrphanHold,
    OrphanHoldPage,
    Released,
)
from memory_core.wire.custody import PageQuery


class OrphanHoldsQuery(PageQuery):
    limit: int = Field(default=DEFAULT_OWNERS_PER_PAGE, ge=1, le=MAX_OWNERS_PER_PAGE,
                       description=f"Memories (one per user, and the shared one) a page reads the holds of at most "
                                   f"(1-{MAX_OWNERS_PER_PAGE}); a page also ends after {HOLDS_PER_PAGE} holds")


class OrphanHoldModel(BaseModel):
    """A hold whose deletion request is no longer stored: what it hides, by ids, never memory text."""

    owner: str = Field(description="The partition holding it: the user, or ~shared for the hold on that user's "
                                   "team-shared copies")
    upn: str | None = Field(description="The user whose memory it hides, as stored (cut to 320 characters: "
                                        "upn_cut); for a ~shared hold, its stored author: null only when it names "
                                        "none, which hides every author's copies; \"\" or, stored as other than "
                                        "text, its JSON (7) when author_of_no_entry")
    upn_cut: bool = Field(description="True when the stored author is longer than the 320 characters upn shows: "
                                      "upn is then no whole name, and no user's")
    author_of_no_entry: bool = Field(description="True for a ~shared hold whose stored author is \"\" or not text, "
                                                 "which no entry has: it hides nothing of any user's")
    release_upn: str | None = Field(description="The upn a release names to lift it: the user; ~shared for a "
                                                "~shared hold whose author is absent or no valid UPN (in its "
                                                "canonical form); null for a hold in a partition no user's name "
                                                "reaches (another release's layout, a damaged record)")
    request_id: str = Field(description="The id of the deletion request that filed it, no longer stored")
    profile_ids: list[str] | None = Field(description="The scopes' profile ids it covers; null: every scope")
    watermark: datetime | None = Field(description="Entries made at or before it are hidden")
    entry_ids: list[str] = Field(description="Entries it hides by id (a forget's)")
    readable: bool = Field(description="False for a hold of a layout this release cannot read: shown as far as it "
                                       "is read")

    @classmethod
    def from_hold(cls, hold: OrphanHold) -> Self:
        return cls(owner=hold.owner, upn=hold.upn, upn_cut=hold.upn_cut, author_of_no_entry=hold.author_of_no_entry,
                   release_upn=hold.release_upn, request_id=hold.request_id,
                   profile_ids=list(hold.profile_ids) if hold.profile_ids is not None else None,
                   watermark=hold.watermark, entry_ids=list(hold.entry_ids), readable=hold.readable)


class OrphanHoldsResponse(BaseModel):
    holds: list[OrphanHoldModel]
    owners_scanned: int = Field(description="Memories whose holds this page finished reading")
    holds_scanned: int = Field(description="Holds this page read, orphaned or not")
    continuation: str | None = Field(
        default=None, description="Set while memories are left to read: pass it as ?continuation= for the next page")

    @classmethod
    def from_page(cls, page: OrphanHoldPage) -> Self:
        return cls(holds=[OrphanHoldModel.from_hold(h) for h in page.holds], owners_scanned=page.owners_scanned,
                   holds_scanned=page.holds_scanned, continuation=page.continuation)


Upn = Annotated[str, StringConstraints(min_length=1, max_length=320, strip_whitespace=True)]
UPN_DESCRIPTION = ("The listing's release_upn: that user's hold and the one on their team-shared copies are released; "
                   "~shared for a ~shared hold whose author is absent or no valid UPN, which alone is released and "
                   "audited in the instance's ~deletions trail")


class ReleaseHoldQuery(BaseModel):
    """Whose memory the released holds hide (the listing's ``release_upn``)."""

    model_config = ConfigDict(extra="ignore")
    upn: Upn = Field(description=UPN_DESCRIPTION)


class ReleaseHoldBody(BaseModel):
    """A release naming its hold in the body, so any stored id is named exactly: ".", "..", one holding "/" or "%2F",
    which a URL's path resolves or decodes before routing, included."""

    model_config = ConfigDict(extra="ignore")
    request_id: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="The listing's request_id, exactly as listed (taken as sent: no trimming, no decoding)")
    upn: Upn = Field(description=UPN_DESCRIPTION)


class ReleasedHoldModel(BaseModel):
    """The holds a deletion request that is gone left on a user's memory, released: the memory shows again."""

    request_id: str
    upn: str
    holds_released: int = Field(description="Holds lifted (the user's and the one on their team-shared copies); 0 "
                                            "when none stood (released already)")

    @classmethod
    def from_released(cls, released: Released) -> Self:
        return cls(request_id=released.request_id, upn=released.upn, holds_released=released.holds_released)
