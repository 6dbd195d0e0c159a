"""Holds whose deletion request no longer exists: an operator's listing of them, and their release.

A hold (``models.Hold``) hides what a deletion request covers until an operator decides it; it is named by the
request's id, in its user's partition and in the instance's team-shared one. Every path this release takes lifts a
request's holds before the request leaves the store (a rejection, the sweep's unhold step, both journaled), but a
hold can still outlive its request: a request this release cannot read dismissed past its standing holds
(``dismissals``, ``?force=true``), or a rejected request whose lifting a crash stopped and whose record expired
(retention, Cosmos DB's ttl) before a sweep finished the rejection, when an earlier release wrote that rejection's
journal (this release's names the user, and the sweep lifts the holds itself: ``custody``). What such a hold hides
stays hidden from every read and is never erased (no sweep executes a request that is gone), and no listing of
requests shows it.

``orphan_page`` walks the instance's partitions a page of owners at a time (``MemoryStore.partition_owners``: owners
holding a profile; a partition with no profile holds no memory for a hold to hide) and names each hold whose request
is not stored: its owner, request id and what it covers (profile ids, watermark, entry ids, author), never memory
text. ``release`` lifts one (``custody_sweep.lift_holds_of``): the memory it hid shows again. Releasing, not filing a
fresh request, is the choice docs/custody.md argues ("Holds left behind by their request"). Every shared hold is
released under exactly one name (``OrphanHold.release_upn``): its author's when that is a user's name exactly as a
release names one, else ``SHARED_OWNER``, so a hold whose stored author is absent, not text, not a valid UPN or not
in its canonical form is never beyond every release.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime

from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.custody_sweep import lift_holds_of
from memory_core.domain.errors import Conflict, InvalidInput, NotFound
from memory_core.domain.hold_requests import names_stored, request_stored
from memory_core.domain.identity import InvalidCallerId, caller_upn
from memory_core.domain.models import SHARED_OWNER, Hold
from memory_core.domain.paging import check_page_size, decode_token, encode_token
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore

log = logging.getLogger("memory_core.custody")

LISTING = "orphan_holds"
MAX_OWNERS_PER_PAGE = 100
DEFAULT_OWNERS_PER_PAGE = 20
#: A page reads at most this many holds (and looks up as many requests), however many one partition holds: it then
#: ends inside that partition, and its continuation names the last hold read.
HOLDS_PER_PAGE = 500

#: The most characters of a stored id a listing names: an id, never a document.
ID_CHARS = 320


@dataclass(frozen=True, slots=True)
class OrphanHold:
    """A hold whose request is not stored. ``owner``: the partition's owner (a user, or ``SHARED_OWNER`` for the
    hold on that user's team-shared copies, whose ``author_upn`` names the user). ``readable``: False for a hold of
    a layout this release cannot read (a later release's), whose coverage is then shown as far as it is stored as
    this release stores it. Ids only: no memory text."""

    owner: str
    request_id: str
    profile_ids: tuple[str, ...] | None
    watermark: datetime | None
    entry_ids: tuple[str, ...]
    #: The stored author, cut to ``ID_CHARS`` (``author_cut``): None only when none is stored (the hold then covers
    #: every author's copies: ``Hold.covers``); one stored as other than text, as its JSON (``7``).
    author_upn: str | None
    readable: bool
    #: The ``upn`` a release names to lift this hold (``release``): its user when that is a user's name exactly as a
    #: release names one; ``SHARED_OWNER`` for a shared hold whose stored author is absent or is not such a name;
    #: None for a hold in a partition whose owner is no user's name (another release's layout, a damaged record),
    #: which no release names. Judged on the stored author, never on ``author_upn`` cut to ``ID_CHARS``.
    release_upn: str | None
    #: True when the stored author is longer than the ``ID_CHARS`` ``author_upn`` keeps: what is listed is no whole
    #: name (not the author's, nor any user's), however valid it looks.
    author_cut: bool = False
    #: True for a stored author no entry can have, "" or one not text: a hold naming it covers no entry's copies, so
    #: it hides nothing of any user's (``Hold.covers`` reads only an author of None as every author).
    author_of_no_entry: bool = False

    @property
    def upn(self) -> str | None:
        """The user whose memory it hides: the owner, or the stored author of the team-shared copies it hides
        (``author_upn``: cut when ``upn_cut``; naming copies of no entry when ``author_of_no_entry``); None only for
        a shared hold naming no author (every author's copies), released as ``SHARED_OWNER`` (``release``)."""
        return self.author_upn if self.owner == SHARED_OWNER else self.owner

    @property
    def upn_cut(self) -> bool:
        """Whether ``upn`` is a stored author cut to ``ID_CHARS``, so no whole name."""
        return self.owner == SHARED_OWNER and self.author_cut


@dataclass(frozen=True, slots=True)
class OrphanHoldPage:
    """One page of the walk: the orphan holds found, how many owners it finished and holds it read, and where the
    next page goes on (None after the last owner)."""

    holds: list[OrphanHold]
    owners_scanned: int
    holds_scanned: int
    continuation: str | None


@dataclass(frozen=True, slots=True)
class Released:
    """A release: the request id and user named, and how many holds it lifted (0: none stood, already released)."""

    request_id: str
    upn: str
    holds_released: int


def orphan_page(store: MemoryStore, instance_id: str, limit: int, continuation: str | None) -> OrphanHoldPage:
    """Up to ``limit`` owners' holds of the instance, from where ``continuation`` left off, reading at most
    ``HOLDS_PER_PAGE`` holds; whether each hold's request is stored is looked up by ``hold_requests.names_stored``
    (one indexed query a hundred holds, and a few more for those whose request is gone). Raises ``InvalidInput`` for a
    ``limit`` outside 1-``MAX_OWNERS_PER_PAGE`` (``invalid_limit``) and for a continuation this listing did not make
    (``invalid_continuation``)."""
    check_page_size(limit, MAX_OWNERS_PER_PAGE)
    position = decode_token(LISTING, continuation)
    if position is not None and len(position) not in (1, 2):
        raise InvalidInput("continuation is not a token this listing answered; start again without it",
                           code="invalid_continuation")
    last = position[0] if position else None
    inside = position[1] if position and len(position) == 2 else None
    found: list[OrphanHold] = []
    read = finished = 0
    owners: list[str] = [last] if last is not None and inside is not None else []
    # One owner more than the page reads tells whether another page follows.
    owners += store.partition_owners(instance_id, limit - len(owners) + 1, after=last)
    for owner in owners[:limit]:
        after = inside if owner == last else None
        while True:
            budget = HOLDS_PER_PAGE - read
            if budget <= 0:
                # Inside this owner's holds, or (none of them read yet) after the last owner finished.
                stop = [owner, after] if after is not None else [last] if last is not None else None
                return OrphanHoldPage(found, finished, read, _token(stop) if stop is not None else None)
            holds = store.page_records(Partition(instance_id, owner), RecordKind.HOLD, limit=budget, after=after)
            read += len(holds)
            stored = names_stored(store, instance_id, [h.id for h in holds])
            found += [_orphan(owner, h) for h in holds if h.id not in stored]
            if len(holds) < budget:
                break
            after = holds[-1].id
        finished += 1
        last = owner
    more = len(owners) > finished
    return OrphanHoldPage(found, finished, read, _token([last]) if more and last is not None else None)


def names_a_user(value: object) -> bool:
    """Whether ``value`` is a user's name exactly as a release's ``upn`` names one (``identity.caller_upn``, which
    trims and lower-cases: "Later@Contoso.com" is released as later@contoso.com, whose shared hold it is not)."""
    if not isinstance(value, str):
        return False
    try:
        return caller_upn(value) == value
    except InvalidCallerId:
        return False


def release(store: MemoryStore, audit: AuditTrail, operator: str, instance_id: str, upn: str,
            request_id: str, *, cause: str | None = None, must_stand: bool = False) -> Released:
    """Lift the holds named ``request_id`` on ``upn``'s memory (theirs, and the one on their team-shared copies), if,
    and only if, no deletion request whose holds go by that name is stored (``hold_requests.request_stored``): the
    memory they hid shows again. ``upn`` ``SHARED_OWNER`` (``~shared``) names the team-shared hold whose author no
    user's release names (``names_a_user``: none stored, or not a valid UPN in its canonical form; listed with
    ``release_upn`` ``SHARED_OWNER``), which is released by that name only, never under a user's. Idempotent: when
    none stands, nothing is written and ``holds_released`` is 0; with ``must_stand``, ``NotFound``
    ``hold_not_found`` instead (no hold of that id, or released already). ``Conflict`` ``hold_not_orphaned`` while
    the request is stored (decide it instead: a rejection shows the memory again), nothing lifted.

    A ``hold_released`` event, naming the request id and how many holds, is written before the holds are lifted:
    in ``upn``'s trail, or for the authorless shared hold in the instance's deletions trail (``DELETIONS_OWNER``,
    where a dismissal naming no user is audited too). A crash between them leaves the holds standing (listed still)
    and a retry writes a second event, so a release is audited twice at worst, never not at all. ``cause``: why,
    when not an operator's own release (the sweep finishing a rejection whose request expired, ``domain.custody``),
    ending the event's detail."""
    if request_stored(store, instance_id, request_id):
        raise Conflict(f"deletion request {request_id} is stored: its holds are not orphaned; approve or reject it "
                       "(a rejection shows the memory again), or dismiss it if this release cannot read it",
                       code="hold_not_orphaned")
    owners = (SHARED_OWNER,) if upn == SHARED_OWNER else (upn, SHARED_OWNER)
    standing = [owner for owner in owners
                if _standing(store.get_record(Partition(instance_id, owner), RecordKind.HOLD, request_id), upn)]
    if not standing:
        if must_stand:
            whose = "the team-shared copies no user's release names" if upn == SHARED_OWNER else f"{upn}'s memory"
            # The id as repr, cut: it may be 60 KiB, or hold what a terminal or a log would act on.
            raise NotFound(f"no hold of deletion request {request_id[:ID_CHARS]!r} stands on {whose}: none was "
                           "filed under that id, or it was released already (GET .../operator/orphan-holds lists "
                           "the holds that stand and the upn that releases each)", code="hold_not_found")
        return Released(request_id, upn, 0)
    log.warning("releasing %d orphan hold(s) of deletion request %s on %s's memory in instance %s by %s",
                len(standing), request_id, upn, instance_id, operator)
    audit.record(AuditAction.HOLD_RELEASED, actor=operator, instance_id=instance_id,
                 upn=DELETIONS_OWNER if upn == SHARED_OWNER else upn, request_id=request_id,
                 detail=f"released {len(standing)} hold(s) left by deletion request {request_id}, which "
                        "is no longer stored: the memory they hid shows again"
                        + (" (a team-shared hold naming no author, or none a user's release names)"
                           if upn == SHARED_OWNER
                           else "") + (f" ({cause})" if cause else ""))
    lift_holds_of(store, instance_id, request_id, standing)  # a shared hold on another's copies stays
    return Released(request_id, upn, len(standing))


def _standing(record: Record | None, upn: str) -> bool:
    """Whether ``record`` is a hold released under ``upn``: the user's own, or, in the shared partition, the one on
    their copies (naming them as its author). A shared hold whose author no user's release names (none, not text,
    no valid UPN, or one not in its canonical form) stands only under ``SHARED_OWNER``, never under a user, whose
    name would put its release in a bystander's trail.
    """
    if record is None:
        return False
    if record.partition.owner != SHARED_OWNER:
        return True
    author = record.data.get("author_upn")
    return not names_a_user(author) if upn == SHARED_OWNER else author == upn


def _orphan(owner: str, record: Record) -> OrphanHold:
    """``record``, a hold whose request is not stored, as listed."""
    stored_author = record.data.get("author_upn")
    releaser = _release_upn(owner, stored_author)
    author, cut = _author(stored_author)
    # No entry's author is "" or other than text (it is its writer's UPN); None, unlike them, is every author.
    of_no_entry = stored_author == "" or not isinstance(stored_author, str | None)
    try:
        hold = Hold.from_data(record.data)
        if not isinstance(hold.author_upn, str | None):  # from_data takes it as stored: listed, it must be text
            raise TypeError("author_upn is not text")
        return OrphanHold(owner, record.id, hold.profile_ids, hold.watermark, hold.entry_ids, author, True,
                          releaser, cut, of_no_entry)
    except (KeyError, TypeError, ValueError):  # another release's layout: shown as far as it reads
        data = record.data
        return OrphanHold(owner, record.id, _ids(data.get("profile_ids")), None, _ids(data.get("entry_ids")) or (),
                          author, False, releaser, cut, of_no_entry)


def _release_upn(owner: str, stored_author: object) -> str | None:
    """``OrphanHold.release_upn`` of a hold in ``owner``'s partition whose data names ``stored_author``: the one name
    under which ``_standing`` finds it."""
    if owner == SHARED_OWNER:
        return stored_author if isinstance(stored_author, str) and names_a_user(stored_author) else SHARED_OWNER
    return owner if names_a_user(owner) else None


def _ids(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(v[:ID_CHARS] for v in value if isinstance(v, str))


def _author(value: object) -> tuple[str | None, bool]:
    """A stored author as listed (``OrphanHold.author_upn``) and whether it was cut: None for none; text, or any
    other stored value as its JSON, cut to ``ID_CHARS``."""
    if value is None:
        return None, False
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):  # a store's own type no JSON holds: its repr says what it is
            text = repr(value)
    return text[:ID_CHARS], len(text) > ID_CHARS


def _token(position: list[str]) -> str:
    return encode_token(LISTING, position)
