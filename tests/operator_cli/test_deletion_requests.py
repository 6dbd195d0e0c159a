"""The operator command line's deletion requests, against a real local server: list (every page, and what this
release cannot read), approve, reject, dismiss, and the orphan holds a forced dismissal leaves (orphan-holds,
release-hold)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from memory_core import operator_cli
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.client_errors import CoreApiFailure
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.models import SHARED_OWNER, Hold
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind, deletions_partition
from memory_core.identity.authenticator import OPERATOR_KEY_LABEL
from memory_core.wire.deletions import DeletionListResponse
from tests.support.later_release import put_hold_beside, put_unreadable_request_beside
from tests.support.local_server import RunningServer
from tests.support.operator_command import run_operator


def test_operator_lists_and_approves_from_the_command_line(server: RunningServer, instance_id: str) -> None:
    """list shows a pending request; approve moves it to approved; exit code 0."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
    listed = run_operator(server, "--instance", instance_id, "list", "--status", "pending")
    approved = run_operator(server, "--instance", instance_id, "approve", request_id)
    assert listed.returncode == 0 and request_id in listed.stdout and "1 request(s)" in listed.stdout
    assert approved.returncode == 0 and '"status": "approved"' in approved.stdout


def test_operator_reject_needs_a_reason_and_unknown_ids_fail(server: RunningServer, instance_id: str) -> None:
    """Rejecting an unknown request exits with the not-found code (4) and a message."""
    result = run_operator(server, "--instance", instance_id, "reject", "nope", "--reason", "because")
    assert result.returncode == 4
    assert "404" in result.stderr


def test_list_walks_every_page_and_says_so_on_stderr(sqlite_server: RunningServer, instance_id: str) -> None:
    """1,003 pending requests, more than the service's page of 1,000: `list` prints every one (it printed the first
    page alone, "1000 request(s)", with no hint of the rest), with a progress line on stderr between pages."""
    store = SqliteMemoryStore(sqlite_server.env["MEMORY_SQLITE_PATH"])
    try:
        start = datetime(2026, 1, 1, tzinfo=UTC)
        for n in range(1003):
            store.put_record(DeletionRequest(
                f"r{n:04d}", instance_id, f"user{n}@contoso.com", DeletionKind.FORGET, DeletionStatus.PENDING,
                f"user{n}@contoso.com", start + timedelta(seconds=n), scope="user", entry_id=f"e{n}").to_record())
    finally:
        store.close()
    listed = run_operator(sqlite_server, "--instance", instance_id, "list", "--status", "pending")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()[:-1]] == [f"r{n:04d}" for n in range(1003)]
    assert listed.stdout.splitlines()[-1] == "1003 request(s)"
    assert listed.stderr.splitlines() == ["read 1000 requests so far"]


def test_list_prints_a_request_this_release_cannot_read(server: RunningServer, instance_id: str) -> None:
    """A stored request of a kind this release does not know, beside a readable one: `list` exits 0, prints the
    readable one and the other with its status, kind, user and why, and counts it apart (it exited 1 on the
    service's 500)."""
    put_unreadable_request_beside(server, instance_id, status="pending", request_id="of-a-later-kind")
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
    listed = run_operator(server, "--instance", instance_id, "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith(request_id)
    assert lines[1].split()[:4] == ["of-a-later-kind", "pending", "archive", "later@contoso.com"]
    assert "unreadable:" in lines[1] and "archive" in lines[1].split("unreadable:")[1]
    assert lines[2] == "1 request(s), 1 this release cannot read"


def test_a_listing_whose_continuation_repeats_stops_with_an_error() -> None:
    """A service (or a proxy) that hands the same continuation back would keep `list` paging for ever: the second
    time a token comes back, the listing stops with CoreApiFailure naming how much it read."""
    calls: list[str | None] = []

    async def page(after: str | None) -> DeletionListResponse:
        calls.append(after)
        return DeletionListResponse(requests=[], continuation="same-token")

    with pytest.raises(CoreApiFailure, match="repeated a continuation after 0 requests"):
        asyncio.run(operator_cli._every_page(page, "requests"))
    assert calls == [None, "same-token"]


def test_dismiss_erases_an_unreadable_request_and_refuses_a_readable_one(server: RunningServer,
                                                                        instance_id: str) -> None:
    """`dismiss <id>` of a request listed as unreadable exits 0 and prints the answer's JSON (the record's key and
    digest), after which `list` no longer shows it; `dismiss` of a readable request exits with the 409's code and
    one line naming ``readable_request``'s message, the request still listed."""
    put_unreadable_request_beside(server, instance_id, status="pending", request_id="of-a-later-kind")
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
    dismissed = run_operator(server, "--instance", instance_id, "dismiss", "of-a-later-kind")
    assert dismissed.returncode == 0, dismissed.stderr
    answer = json.loads(dismissed.stdout)
    assert (answer["request_id"], answer["record_id"], len(answer["record_sha256"])) == (
        "of-a-later-kind", "2026-01-01T00:00:00.000000Z~of-a-later-kind", 64)
    refused = run_operator(server, "--instance", instance_id, "dismiss", request_id)
    assert refused.returncode == operator_cli.exit_code_for(409) and refused.returncode != 0
    assert refused.stderr.startswith("memory-core operator: 409: ") and "approve or reject it" in refused.stderr
    listed = run_operator(server, "--instance", instance_id, "list")
    assert listed.stdout.splitlines()[-1] == "1 request(s)" and listed.stdout.startswith(request_id)


def test_dismiss_of_a_request_whose_holds_stand_needs_force_and_audit_reads_the_deletions_trail(
    server: RunningServer, instance_id: str,
) -> None:
    """`dismiss <id>` of an unreadable request whose hold stands exits with the 409's code naming
    ``holds_standing``'s message; `dismiss --force` exits 0 with the stored status and ``forced``. One naming no valid
    user is dismissed and `audit ~deletions` prints its event (before: 400 ``invalid_upn``)."""
    put_unreadable_request_beside(server, instance_id, status="approved", request_id="held-later")
    store = server.open_store()
    try:
        store.put_record(Record(Partition(instance_id, "later@contoso.com"), RecordKind.HOLD, "held-later",
                                Hold("held-later", None, datetime(2099, 1, 1, tzinfo=UTC)).to_data()))
        store.put_record(Record(deletions_partition(instance_id), RecordKind.DELETION_REQUEST, "2026-01-01Z~no-user",
                                {"id": "no-user", "upn": "~shared", "kind": "archive"}))
    finally:
        store.close()
    refused = run_operator(server, "--instance", instance_id, "dismiss", "held-later")
    assert refused.returncode == operator_cli.exit_code_for(409) and "stays hidden" in refused.stderr
    forced = run_operator(server, "--instance", instance_id, "dismiss", "--force", "held-later")
    assert forced.returncode == 0, forced.stderr
    answer = json.loads(forced.stdout)
    assert (answer["status"], answer["holds_left"], answer["forced"]) == ("approved", 1, True)
    assert run_operator(server, "--instance", instance_id, "dismiss", "no-user").returncode == 0
    trail = run_operator(server, "--instance", instance_id, "audit", "~deletions")
    assert trail.returncode == 0, trail.stderr
    assert [(e["action"], e["request_id"]) for e in json.loads(trail.stdout)["events"]] == [
        ("deletion_dismissed", "no-user")]


def test_orphan_holds_lists_a_hold_a_forced_dismissal_left_and_release_hold_shows_the_memory_again(
    server: RunningServer, instance_id: str,
) -> None:
    """`orphan-holds` prints the hold a forced dismissal left (request id, owner, user, coverage; not the text) and
    the count; `release-hold --upn U <id>` exits 0 counting 1 and the entry shows again; a pending request's hold
    exits with the 409's code naming ``hold_not_orphaned``'s message."""
    later = "later@contoso.com"
    with server.client(later) as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- hidden by a later release"}).raise_for_status()
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- to forget"}).raise_for_status()
        entries = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
        forget = http.delete(f"/instances/{instance_id}/memory/entries/{entries[-1]['id']}").json()["request_id"]
    put_unreadable_request_beside(server, instance_id, status="approved", request_id="held-later")
    put_hold_beside(server, instance_id, later, "held-later")
    assert run_operator(server, "--instance", instance_id, "dismiss", "--force", "held-later").returncode == 0

    listed = run_operator(server, "--instance", instance_id, "orphan-holds")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"held-later  {later}  {later}  all scopes up to 2099-01-01T00:00:00+00:00",
                                          "1 orphan hold(s)"]
    refused = run_operator(server, "--instance", instance_id, "release-hold", "--upn", later, forget)
    assert refused.returncode == operator_cli.exit_code_for(409) and "approve or reject it" in refused.stderr
    released = run_operator(server, "--instance", instance_id, "release-hold", "--upn", later, "held-later")
    assert released.returncode == 0, released.stderr
    assert json.loads(released.stdout) == {"request_id": "held-later", "upn": later, "holds_released": 1}
    with server.client(later) as http:
        shown = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
    assert [e["content_markdown"] for e in shown] == ["- hidden by a later release"]
    assert run_operator(server, "--instance", instance_id, "orphan-holds").stdout.splitlines() == ["0 orphan hold(s)"]


def test_release_hold_of_a_shared_hold_naming_no_author_takes_only_shared_and_audits_in_deletions(
    server: RunningServer, instance_id: str,
) -> None:
    """A ``~shared`` hold naming no author (every author's team copies) is listed with ``~shared`` as the --upn that
    releases it; `release-hold --upn <user>` lifts none of it (exit with the 404's code, ``hold_not_found``, nothing
    in that user's trail, still listed); `--upn
    '~deletions'`, another internal name, exits with the 400's code and message (``invalid_upn``); `--upn
    '~shared'` exits 0 counting 1, `audit ~deletions` prints its ``hold_released`` event, and the listing is
    empty."""
    bystander = "carol@contoso.com"
    with server.client(bystander) as http:  # a team copy: ~shared then holds a profile, so the listing reads it
        http.post(f"/instances/{instance_id}/memory/append", json={
            "scope": "user", "content_markdown": "- shared with the team", "share": "team"}).raise_for_status()
    put_hold_beside(server, instance_id, SHARED_OWNER, "gone-shared")

    listed = run_operator(server, "--instance", instance_id, "orphan-holds")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"gone-shared  {SHARED_OWNER}  {SHARED_OWNER}  all scopes up to 2099-01-01T00:00:00+00:00", "1 orphan hold(s)"]

    as_user = run_operator(server, "--instance", instance_id, "release-hold", "--upn", bystander, "gone-shared")
    assert as_user.returncode == operator_cli.exit_code_for(404), as_user.stderr
    assert "no hold of deletion request 'gone-shared' stands on carol@contoso.com's memory" in as_user.stderr
    internal = run_operator(server, "--instance", instance_id, "release-hold", "--upn", DELETIONS_OWNER, "gone-shared")
    assert internal.returncode == operator_cli.exit_code_for(400)
    assert "400: upn: a user principal name has the form" in internal.stderr
    assert run_operator(server, "--instance", instance_id, "orphan-holds").stdout == listed.stdout
    users_trail = run_operator(server, "--instance", instance_id, "audit", bystander)
    assert "hold_released" not in users_trail.stdout and users_trail.returncode == 0, users_trail.stderr

    shared = run_operator(server, "--instance", instance_id, "release-hold", "--upn", SHARED_OWNER, "gone-shared")
    assert shared.returncode == 0, shared.stderr
    assert json.loads(shared.stdout) == {"request_id": "gone-shared", "upn": SHARED_OWNER, "holds_released": 1}
    trail = run_operator(server, "--instance", instance_id, "audit", DELETIONS_OWNER)
    assert trail.returncode == 0, trail.stderr
    (event,) = [e for e in json.loads(trail.stdout)["events"] if e["action"] == "hold_released"]
    assert (event["request_id"], event["actor"]) == ("gone-shared", OPERATOR_KEY_LABEL)
    assert "naming no author" in event["detail"]
    assert run_operator(server, "--instance", instance_id, "orphan-holds").stdout.splitlines() == ["0 orphan hold(s)"]


def test_release_hold_names_any_listed_id_and_a_shared_hold_whose_author_is_no_valid_upn(
    server: RunningServer, instance_id: str,
) -> None:
    """Holds named "..", "a/b" and "%2F" (which a URL path resolves, splits or decodes) and a ``~shared`` hold whose
    stored author holds an override: `orphan-holds` lists each with the --upn that releases it (``~shared`` for the
    last, its author after it), and `release-hold` with exactly those releases each (exit 0, counting 1); the
    listing is then empty and the fact shows again."""
    later = "later@contoso.com"
    author = "mallory\u202e@contoso.com"
    with server.client(later) as http:
        http.post(f"/instances/{instance_id}/memory/append", json={
            "scope": "user", "content_markdown": "- hidden twice", "share": "team"}).raise_for_status()
    for request_id in ("..", "a/b", "%2F"):
        put_hold_beside(server, instance_id, later, request_id)
    store = server.open_store()
    try:
        hold = Hold("odd-author", None, datetime(2099, 1, 1, tzinfo=UTC), author_upn=author)
        store.put_record(Record(Partition(instance_id, SHARED_OWNER), RecordKind.HOLD, "odd-author", hold.to_data()))
    finally:
        store.close()

    listed = run_operator(server, "--instance", instance_id, "orphan-holds")
    assert listed.returncode == 0, listed.stderr
    until = "all scopes up to 2099-01-01T00:00:00+00:00"
    assert sorted(listed.stdout.splitlines()) == sorted([
        *(f"{rid}  {later}  {later}  {until}" for rid in ("..", "a/b", "%2F")),
        f"odd-author  {SHARED_OWNER}  {SHARED_OWNER}  (author {author})  {until}", "4 orphan hold(s)"])
    for request_id, upn in (("..", later), ("a/b", later), ("%2F", later), ("odd-author", SHARED_OWNER)):
        released = run_operator(server, "--instance", instance_id, "release-hold", "--upn", upn, request_id)
        assert released.returncode == 0, released.stderr
        assert json.loads(released.stdout) == {"request_id": request_id, "upn": upn, "holds_released": 1}
    assert run_operator(server, "--instance", instance_id, "orphan-holds").stdout.splitlines() == ["0 orphan hold(s)"]
    with server.client(later) as http:
        shown = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
    assert [e["content_markdown"] for e in shown] == ["- hidden twice"]


def test_orphan_holds_says_a_shared_author_no_entry_has_hides_nothing_and_a_cut_author_is_cut(
    server: RunningServer, instance_id: str,
) -> None:
    """Before: a ``~shared`` hold whose stored author was "" or 7 was listed as one naming no author (no note), as if
    it hid every author's copies, and an author longer than the listing's 320 characters was printed cut as
    ``(author <upn>)``, a valid-looking name. Now the first two say their author, which no entry has, hides nothing
    of any user's, and the cut one says it is cut, ending in "…"."""
    with server.client("later@contoso.com") as http:  # a team copy: ~shared then holds a profile, so it is read
        http.post(f"/instances/{instance_id}/memory/append", json={
            "scope": "user", "content_markdown": "- shared", "share": "team"}).raise_for_status()
    upn_320 = "a" * 200 + "@" + "b" * 60 + "." + "c" * 58
    store = server.open_store()
    try:
        for request_id, author in (("empty", ""), ("number", 7), ("long", upn_320 + "zz")):
            data = {**Hold(request_id, None, datetime(2099, 1, 1, tzinfo=UTC)).to_data(), "author_upn": author}
            store.put_record(Record(Partition(instance_id, SHARED_OWNER), RecordKind.HOLD, request_id, data))
    finally:
        store.close()

    listed = run_operator(server, "--instance", instance_id, "orphan-holds")

    assert listed.returncode == 0, listed.stderr
    head = f"{SHARED_OWNER}  {SHARED_OWNER}"
    until = "all scopes up to 2099-01-01T00:00:00+00:00"
    assert sorted(listed.stdout.splitlines()) == sorted([
        f'empty  {head}  (author "", which no entry has: it hides nothing of any user\'s)  {until}',
        # Not text: the listing reads it as another release's layout (shown as far as that reads).
        f"number  {head}  (author 7, which no entry has: it hides nothing of any user's)  all scopes up to ?"
        "  (unreadable hold)",
        f"long  {head}  (author cut to its first 320 characters: {upn_320}…)  {until}", "3 orphan hold(s)"])


def test_release_hold_help_says_a_hold_no_longer_standing_exits_with_the_404_code(
    sqlite_server: RunningServer,
) -> None:
    """`release-hold --help` names the exit code of 404 ``hold_not_found`` (docs/custody.md says the release answers
    it when no hold of that id stands), as the command exits when it does. Help reads no store: one server."""
    shown = run_operator(sqlite_server, "release-hold", "--help")

    assert shown.returncode == 0, shown.stderr
    assert (f"exits {operator_cli.exit_code_for(404)} (404 hold_not_found) when no hold of that id stands on it"
            in " ".join(shown.stdout.split()))
