"""``python -m memory_core operator ...``: deletions, purges, the sweep, the audit trails and the hidden-text
scan, over HTTP.

It talks to a running service (local or deployed) with an operator key, so an
operator needs no access to the store, through the one CoreAPI client
(memory_core.client). Exit codes follow the one error table
(memory_core.edge.errors.EXIT_CODES), and ``sweep`` exits ``SWEEP_LEFT_EXIT``
when it answered but left approved requests for a later sweep. ``sweep`` runs in
steps (``SWEEP_STEP`` requests a call, a line on stderr after each): one call for
every approved request could outlast the 230 s Azure gives a request.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from memory_core.client import CoreApiClient
from memory_core.client_errors import CoreApiFailure, CoreApiUnreachable, http_status_of
from memory_core.domain.errors import ConfigurationError, InvalidInput, MemoryCoreError
from memory_core.domain.hidden_text_scan import DEFAULT_OWNERS_PER_PAGE, ENTRIES_PER_PAGE, MAX_OWNERS_PER_PAGE
from memory_core.edge.errors import exit_code_for, status_for
from memory_core.wire.custody import AgentSettingsListResponse
from memory_core.wire.deletions import MAX_SWEEP_LIMIT, DeletionListResponse, SweepResponse
from memory_core.wire.hidden_text import HiddenTextScanResponse
from memory_core.wire.orphan_holds import OrphanHoldModel, OrphanHoldsResponse

Listing = TypeVar("Listing", bound=BaseModel)

#: How long one request may take. A sweep of many approved requests takes longest: Azure's front end ends any HTTP
#: request at 230 s, so waiting longer would wait for nothing.
TIMEOUT_SECONDS = 60.0
SWEEP_TIMEOUT_SECONDS = 230.0
#: Approved requests one call of ``sweep`` tries at most (``--step``): most take well under a second, a clear or a
#: purge of a large memory some seconds, so a step stays far inside SWEEP_TIMEOUT_SECONDS and progress shows.
SWEEP_STEP = 10
#: ``sweep``'s exit code when the sweep ran but left approved requests for a later one (its JSON's ``left`` says which
#: and why): none of the error table's (1-6), so that a script tells it from a sweep that did not run.
SWEEP_LEFT_EXIT = 7


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("operator", help="operator actions on a running service (operator key)")
    parser.add_argument("--url", default=None, help="service base URL (default $MEMORY_URL or http://127.0.0.1:7071)")
    parser.add_argument("--key", default=None, help="operator key (default $MEMORY_OPERATOR_KEY)")
    parser.add_argument("--instance", required=True, help="instance id")
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list deletion requests")
    listing.add_argument("--status", choices=["pending", "approved", "rejected", "executed"])
    approve = actions.add_parser("approve", help="approve a pending deletion request")
    approve.add_argument("request_id")
    reject = actions.add_parser("reject", help="reject a pending deletion request")
    reject.add_argument("request_id")
    reject.add_argument("--reason", required=True)
    dismiss = actions.add_parser("dismiss", help="dismiss a deletion request this release cannot read (listed as "
                                                 "unreadable): its record is erased, audited; its holds stay")
    dismiss.add_argument("request_id", help="the id the listing shows, or the record's key")
    dismiss.add_argument("--force", action="store_true",
                         help="dismiss even while holds it filed still stand (the memory they hide stays hidden)")
    actions.add_parser("orphan-holds", help="list holds whose deletion request is no longer stored (every user; "
                                            "ids only): what they hide stays hidden and is never erased")
    release = actions.add_parser("release-hold", help="release the holds a deletion request no longer stored left on "
                                                      "a user's memory: it shows again (audited)")
    release.add_argument("request_id", help="the request id orphan-holds shows")
    release.add_argument("--upn", required=True, help="the user whose memory they hide, as orphan-holds shows it "
                         "in its third column: ~shared for a ~shared hold naming no author or no valid one; exits "
                         f"{exit_code_for(404)} (404 hold_not_found) when no hold of that id stands on it: none was "
                         "filed, or it was released already")
    purge = actions.add_parser("purge", help="request erasure of all of one user's memory")
    purge.add_argument("upn")
    forget = actions.add_parser("forget", help="ask for one user's entry to be forgotten (pending approval)")
    forget.add_argument("upn")
    forget.add_argument("entry_id")
    scan = actions.add_parser("hidden-text", help="find stored entries holding text no reader sees (every user)")
    scan.add_argument("--page", type=int, default=None, metavar="N",
                      help=f"memories read per request at most (1-{MAX_OWNERS_PER_PAGE}, default "
                           f"{DEFAULT_OWNERS_PER_PAGE}); a request also ends at about {ENTRIES_PER_PAGE:,} entries")
    scan.add_argument("--from", dest="start", default=None, metavar="CONTINUATION",
                      help="go on from where a stopped scan stopped (it names this on stderr)")
    sweep = actions.add_parser("sweep", help="execute approved requests now, a step of them per call")
    sweep.add_argument("--step", type=int, default=SWEEP_STEP, metavar="N",
                       help=f"approved requests one call tries at most (1-{MAX_SWEEP_LIMIT}, default {SWEEP_STEP}); "
                            "a line on stderr after each call")
    audit = actions.add_parser("audit", help="read one user's audit trail, or the instance's ~deletions trail")
    audit.add_argument("upn", help="the user, or ~deletions: dismissals of requests that named no valid user")
    actions.add_parser("agents", help="list the agents with stored settings")
    settings_audit = actions.add_parser("settings-audit", help="read the trail of agent settings changes")
    settings_audit.add_argument("--agent", default=None, help="only this agent's changes (its object id)")
    legacy_audit = actions.add_parser("legacy-audit", help="read the trail of legacy imports")
    for trail in (audit, settings_audit, legacy_audit):
        trail.add_argument("--newest-first", action="store_true", help="newest events first (default: oldest)")


def run(args: argparse.Namespace) -> int:
    base = (args.url or os.environ.get("MEMORY_URL") or "http://127.0.0.1:7071").rstrip("/").removesuffix("/api")
    key = args.key or os.environ.get("MEMORY_OPERATOR_KEY")
    if not key:
        print("memory-core operator: give --key or set MEMORY_OPERATOR_KEY", file=sys.stderr)
        return 2
    # The client logs a warning when no answer arrives; the one line below says it, so a failure stays one line.
    logging.getLogger("memory_core.client").setLevel(logging.ERROR)
    try:
        answer = asyncio.run(_call(f"{base}/api", {"X-API-KEY": key}, args))
    except CoreApiUnreachable as error:
        if isinstance(error.__cause__, (httpx.TimeoutException, TimeoutError)):
            waited = SWEEP_TIMEOUT_SECONDS if args.action == "sweep" else TIMEOUT_SECONDS
            print(f"memory-core operator: {base} gave no answer within {waited:g} s; the request may still be "
                  "running there", file=sys.stderr)
        else:
            cause = error.__cause__
            reason = (str(cause) or type(cause).__name__) if cause else error.message
            print(f"memory-core operator: cannot reach {base}: {reason}", file=sys.stderr)
        _print_notes(error)
        return exit_code_for(503)
    except (ConfigurationError, httpx.InvalidURL) as error:  # --url is no URL
        print(f"memory-core operator: --url {base!r} is not an http(s) URL ({error})", file=sys.stderr)
        return 2
    except MemoryCoreError as error:
        status = http_status_of(error) or status_for(error)
        print(f"memory-core operator: {status}: {error.message}", file=sys.stderr)
        _print_notes(error)
        return exit_code_for(status)
    except KeyboardInterrupt:
        print("memory-core operator: interrupted", file=sys.stderr)
        return 130
    if isinstance(answer, DeletionListResponse):
        for r in answer.requests:
            target = r.entry_id or r.scope or "all"
            print(f"{r.id}  {r.status:<9} {r.kind:<6} {r.upn}  {target}  requested {r.requested_on.isoformat()}")
        for u in answer.unreadable:  # listed, never left out: the release that wrote it can decide it
            print(f"{u.request_id}  {u.status or '?':<9} {u.kind or '?':<6} {u.upn or '?'}  unreadable: {u.message}")
        unreadable = f", {len(answer.unreadable)} this release cannot read" if answer.unreadable else ""
        print(f"{len(answer.requests)} request(s){unreadable}")
    elif isinstance(answer, OrphanHoldsResponse):
        for h in answer.holds:
            covers = ("entries " + ",".join(h.entry_ids)) if h.entry_ids else (
                f"{'all scopes' if h.profile_ids is None else 'profiles ' + ','.join(h.profile_ids)}"
                f" up to {h.watermark.isoformat() if h.watermark else '?'}")
            # The third column is what release-hold's --upn takes ('?': no release names it); a stored author it
            # is not follows in parentheses, said to be cut or of no entry where it is.
            author = "" if h.upn is None or h.upn == h.release_upn else _shown_author(h)
            print(f"{h.request_id}  {h.owner}  {h.release_upn or '?'}{author}  {covers}"
                  f"{'' if h.readable else '  (unreadable hold)'}")
        print(f"{len(answer.holds)} orphan hold(s)")
    elif isinstance(answer, HiddenTextScanResponse):
        _print_findings(answer)
    elif isinstance(answer, AgentSettingsListResponse):
        for a in sorted(answer.agents, key=lambda a: a.agent_object_id):  # the API's page is in a key order
            instructions = "withheld (secret or hidden text)" if a.policy_instructions_withheld else (
                "set" if a.policy_instructions else "none")
            groups = ",".join(a.allowed_group_ids) if a.allowed_group_ids is not None else "any"
            print(f"{a.agent_object_id}  {'on' if a.enabled else 'off'}  auto_append={str(a.auto_append).lower()}"
                  f"  scope={a.default_write_scope}  groups={groups}  instructions={instructions}")
        print(f"{len(answer.agents)} agent(s)")
    elif isinstance(answer, SweepResponse):
        print(answer.model_dump_json(indent=2))  # the JSON scripts read, as before; what it says, on stderr
        _print_sweep(answer)
        return SWEEP_LEFT_EXIT if answer.left else 0
    else:
        print(answer.model_dump_json(indent=2))
    return 0


def _shown_author(hold: OrphanHoldModel) -> str:
    """The listing's note on a hold's stored author that is not the --upn releasing it."""
    if hold.author_of_no_entry:
        stored = hold.upn or '""'  # "" or a non-text author's JSON
        return f"  (author {stored}, which no entry has: it hides nothing of any user's)"
    if hold.upn_cut:
        return f"  (author cut to its first {len(hold.upn or '')} characters: {hold.upn}…)"
    return f"  (author {hold.upn})"


async def _call(api: str, headers: dict[str, str], args: argparse.Namespace) -> BaseModel:
    """The action's answer from the CoreAPI at ``api``, every page of a listing in one; the domain's errors as the
    CoreAPI answered them."""
    client = CoreApiClient(api, timeout_seconds=SWEEP_TIMEOUT_SECONDS if args.action == "sweep" else TIMEOUT_SECONDS)
    instance = args.instance
    try:
        if args.action == "list":
            status = getattr(args, "status", None)
            return await _every_page(lambda after: client.list_deletions(instance, headers, status, after),
                                     "requests", also=("unreadable",))
        if args.action == "approve":
            return await client.approve(instance, headers, args.request_id)
        if args.action == "reject":
            return await client.reject(instance, headers, args.request_id, args.reason)
        if args.action == "dismiss":
            return await client.dismiss(instance, headers, args.request_id, force=args.force)
        if args.action == "orphan-holds":
            return await _every_page(lambda after: client.orphan_holds(instance, headers, after), "holds")
        if args.action == "release-hold":
            return await client.release_hold(instance, headers, args.upn, args.request_id)
        if args.action == "purge":
            return await client.purge(instance, headers, args.upn)
        if args.action == "forget":
            return await client.forget_for(instance, headers, args.upn, args.entry_id)
        if args.action == "hidden-text":
            return await _scan(client, instance, headers, args.page, args.start)
        if args.action == "sweep":
            return await _sweep(client, instance, headers, args.step)
        if args.action == "agents":
            return await _every_page(lambda after: client.agents(instance, headers, after), "agents")
        newest_first = args.newest_first
        if args.action == "settings-audit":
            return await _every_page(lambda after: client.agent_settings_audit(
                instance, headers, args.agent, newest_first=newest_first, continuation=after), "events")
        if args.action == "legacy-audit":
            return await _every_page(lambda after: client.legacy_import_audit(
                instance, headers, newest_first=newest_first, continuation=after), "events")
        return await _every_page(lambda after: client.audit(
            instance, headers, args.upn, newest_first=newest_first, continuation=after), "events")
    finally:
        await client.aclose()


async def _every_page(
    page: Callable[[str | None], Awaitable[Listing]], items: str, also: tuple[str, ...] = ()
) -> Listing:
    """Every page of a listing as one answer (``items``: the field each page's items are in; ``also``: other lists
    a page may carry, gathered the same way), with a line on stderr after each page but the last: an instance may
    hold more than a page, and none may be left out."""
    whole = await page(None)
    continuation = getattr(whole, "continuation", None)
    seen: set[str] = set()
    while continuation:
        if continuation in seen:  # a service that hands a token back would page for ever
            raise CoreApiFailure(f"the service repeated a continuation after {len(getattr(whole, items))} {items}")
        seen.add(continuation)
        print(f"read {len(getattr(whole, items))} {items} so far", file=sys.stderr, flush=True)
        more = await page(continuation)
        for name in (items, *also):
            getattr(whole, name).extend(getattr(more, name))
        continuation = getattr(more, "continuation", None)
    return whole.model_copy(update={"continuation": None})


async def _scan(client: CoreApiClient, instance: str, headers: dict[str, str], page: int | None,
                start: str | None) -> BaseModel:
    """Every page of the hidden-text scan as one answer, from the start or from ``start`` (a continuation); a line
    on stderr after each page (a scan reads every user's memory, so a large instance takes a while).

    A page that fails, or Ctrl-C, ends the scan: what it found so far is printed as a whole scan's answer would be,
    with the command that goes on from there on stderr (not for a request the service refused, which would fail
    again), and the error is raised on."""
    whole = HiddenTextScanResponse(findings=[], owners_scanned=0, entries_scanned=0)
    continuation = start
    while True:
        try:
            answer = await client.hidden_text_page(instance, headers, limit=page, continuation=continuation)
        except (MemoryCoreError, asyncio.CancelledError) as error:
            if continuation != start:  # a page was read: pages inside one large memory finish no memory
                _print_findings(whole, so_far=True)
            # A refused request (a page size, a continuation that is not one) fails the same way again: no hint.
            if continuation is not None and not isinstance(error, InvalidInput):
                resume = (f"memory-core operator: the scan stopped; go on from where it stopped with: hidden-text"
                          f"{f' --page {page}' if page is not None else ''} --from {continuation}")
                if isinstance(error, MemoryCoreError):
                    error.add_note(resume)  # printed by ``run`` after the error, as the last line
                else:
                    print(resume, file=sys.stderr)
            raise
        whole.findings.extend(answer.findings)
        whole.owners_scanned += answer.owners_scanned
        whole.entries_scanned += answer.entries_scanned
        continuation = answer.continuation
        if continuation is None:
            return whole
        # Entries first: pages inside one memory larger than a page read entries but finish no memory.
        print(f"scanned {_scanned(whole, so_far=True)}, {len(whole.findings)} found so far", file=sys.stderr)


async def _sweep(client: CoreApiClient, instance: str, headers: dict[str, str], step: int) -> SweepResponse:
    """The sweep, ``step`` approved requests a call, each call going on after the last request the one before it
    tried, as one answer (what every call executed and left); a line on stderr after each call but the last.

    A request a call left is not tried again by this walk (the service goes on after it), so the walk ends however
    often a request fails; the next ``sweep`` or the timer tries it again. A call that fails ends the walk: what
    it executed stays executed (each call finishes the requests it tries), and the error says so."""
    whole = SweepResponse(executed=[], left=[])
    continuation: str | None = None
    seen: set[str] = set()
    while True:
        try:
            answer = await client.sweep(instance, headers, limit=step, continuation=continuation)
        except MemoryCoreError as error:
            if continuation is not None:
                error.add_note(f"memory-core operator: the sweep stopped after executing "
                               f"{_counted(len(whole.executed), 'request', 'requests')} and leaving {len(whole.left)} "
                               "(those stay as they are); run sweep again to go on")
            raise
        whole.executed.extend(answer.executed)
        whole.left.extend(answer.left)
        continuation = answer.continuation
        if continuation is None:  # also a service older than the bound: it swept everything in one call
            return whole
        if continuation in seen:  # a service that hands a step back would sweep for ever
            raise CoreApiFailure(f"the service repeated a sweep continuation after {len(whole.executed)} executed")
        seen.add(continuation)
        print(f"memory-core operator: swept {len(whole.executed)} executed, {len(whole.left)} left so far; "
              f"{answer.remaining} approved to go", file=sys.stderr, flush=True)


def _scanned(answer: HiddenTextScanResponse, *, so_far: bool) -> str:
    """How much a scan read: "3 memories (3 entries)" when whole, "10000 entries (0 memories finished)" so far."""
    memories = _counted(answer.owners_scanned, "memory", "memories")
    entries = _counted(answer.entries_scanned, "entry", "entries")
    return f"{entries} ({memories} finished)" if so_far else f"{memories} ({entries})"


def _counted(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _print_sweep(answer: SweepResponse) -> None:
    """What the sweep did, for a person, on stderr: how many it executed and left, then one line per request left
    (id, kind, user, reason, the failure's message)."""
    print(f"memory-core operator: the sweep executed {_counted(len(answer.executed), 'request', 'requests')} and "
          f"left {len(answer.left)} for a later sweep" + (":" if answer.left else ""), file=sys.stderr)
    for left in answer.left:
        print(f"  {left.request_id}  {left.kind or '?'}  {left.upn or '?'}  {left.reason}: {left.message}",
              file=sys.stderr)
    if answer.left:
        print("  they stay approved, their memory hidden: the next sweep (the timer's, or this command) tries them "
              "again", file=sys.stderr)


def _print_notes(error: BaseException) -> None:
    """What the command added to ``error`` on its way out (``_scan``: how to go on), after the error's line."""
    for note in getattr(error, "__notes__", ()):
        print(note, file=sys.stderr)


def _print_findings(answer: HiddenTextScanResponse, *, so_far: bool = False) -> None:
    """One line per finding, never the text, then what was scanned (``so_far``: before the scan stopped)."""
    for f in answer.findings:
        where = f.scope + (f" agent={f.agent_object_id}" if f.agent_object_id else "")
        print(f"{f.upn or '(legacy)'}  {f.entry_id}  {where}  {f.field}  {f.character}"
              f"  stored {f.created_on.isoformat()}")
    found, stopped = _counted(len(answer.findings), "entry", "entries"), " before the scan stopped" if so_far else ""
    print(f"{found} with hidden text, in {_scanned(answer, so_far=so_far)} scanned{stopped}"
          + ("; forget one with: operator forget UPN ENTRY_ID" if any(f.upn for f in answer.findings) else ""),
          flush=True)
