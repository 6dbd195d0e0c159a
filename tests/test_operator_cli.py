"""The operator command line, against a real local server."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import httpx
import pytest

from memory_core import operator_cli
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.client import CoreApiClient
from memory_core.client_errors import CoreApiFailure
from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.errors import PayloadTooLarge
from memory_core.domain.identity import Caller
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    Hold,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    agent_hash,
)
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from memory_core.identity.authenticator import OPERATOR_KEY_LABEL
from memory_core.wire.deletions import DeletionListResponse, SweepResponse
from tests.support.clock import TickingClock
from tests.support.later_release import put_hold_beside, put_unreadable_request_beside
from tests.support.local_server import OPERATOR_KEY, PROJECT_ROOT, RunningServer, running_server


def _cli(server: RunningServer, *args: str, key: str = OPERATOR_KEY) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    return subprocess.run(
        [sys.executable, "-m", "memory_core", "operator", "--url", server.base_url, "--key", key, *args],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60,
    )


def test_operator_lists_and_approves_from_the_command_line(server: RunningServer, instance_id: str) -> None:
    """list shows a pending request; approve moves it to approved; exit code 0."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
    listed = _cli(server, "--instance", instance_id, "list", "--status", "pending")
    approved = _cli(server, "--instance", instance_id, "approve", request_id)
    assert listed.returncode == 0 and request_id in listed.stdout and "1 request(s)" in listed.stdout
    assert approved.returncode == 0 and '"status": "approved"' in approved.stdout


def test_operator_reject_needs_a_reason_and_unknown_ids_fail(server: RunningServer, instance_id: str) -> None:
    """Rejecting an unknown request exits with the not-found code (4) and a message."""
    result = _cli(server, "--instance", instance_id, "reject", "nope", "--reason", "because")
    assert result.returncode == 4
    assert "404" in result.stderr


def test_a_user_key_is_refused(server: RunningServer, instance_id: str) -> None:
    """A user key exits with the forbidden code (3)."""
    result = _cli(server, "--instance", instance_id, "list", key="test-user-key")
    assert result.returncode == 3


def test_operator_reads_the_settings_and_legacy_trails(server: RunningServer, instance_id: str) -> None:
    """settings-audit (one agent, newest first) and legacy-audit print the trails' events as JSON."""
    op, api = {"X-API-KEY": OPERATOR_KEY}, f"{server.api}/instances/{instance_id}/operator"
    for agent, enabled in (("/agents/a", False), ("/agents/b", True), ("/agents/a", True)):
        httpx.put(f"{api}/agent-settings", params={"agentObjectId": agent}, headers=op,
                  json={"enabled": enabled}).raise_for_status()
    entry = httpx.post(f"{api}/legacy-imports", headers=op,
                       json={"scope": "user", "content_markdown": "- legacy fact"}).json()["entry_id"]
    settings = _cli(server, "--instance", instance_id, "settings-audit", "--agent", "/agents/a", "--newest-first")
    legacy = _cli(server, "--instance", instance_id, "legacy-audit")
    assert settings.returncode == 0 and legacy.returncode == 0
    assert [e["detail"] for e in json.loads(settings.stdout)["events"]] == ["enabled: false -> true",
                                                                            "enabled: true -> false"]
    assert [(e["action"], e["entry_id"]) for e in json.loads(legacy.stdout)["events"]] == [("import", entry)]
    assert "legacy fact" not in legacy.stdout


def test_operator_lists_the_agents_with_settings(server: RunningServer, instance_id: str) -> None:
    """agents prints one line per agent with stored settings, sorted by agent id (the API pages in another order:
    /agents/b's key comes first), then the count, and nothing on stderr."""
    op, api = {"X-API-KEY": OPERATOR_KEY}, f"{server.api}/instances/{instance_id}/operator"
    httpx.put(f"{api}/agent-settings", params={"agentObjectId": "/agents/a"}, headers=op,
              json={"enabled": False, "policy_instructions": "Only travel."}).raise_for_status()
    httpx.put(f"{api}/agent-settings", params={"agentObjectId": "/agents/b"}, headers=op,
              json={"auto_append": True, "allowed_group_ids": ["g-1"]}).raise_for_status()
    listed = _cli(server, "--instance", instance_id, "agents")
    assert listed.returncode == 0 and listed.stderr == ""  # no request log lines: stdout is the answer
    assert listed.stdout.splitlines() == [
        "/agents/a  off  auto_append=false  scope=user  groups=any  instructions=set",
        "/agents/b  on  auto_append=true  scope=user  groups=g-1  instructions=none",
        "2 agent(s)",
    ]


def test_operator_lists_instructions_saved_with_hidden_text_as_withheld(sqlite_server: RunningServer,
                                                                        instance_id: str) -> None:
    """Instructions saved before hidden text was refused (written to the store as that version wrote them) are
    listed as withheld, and the line names both reasons a screen withholds them for; the hidden text is not
    printed."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = SqliteMemoryStore(sqlite_server.env["MEMORY_SQLITE_PATH"])
    try:
        settings = AgentSettings("/agents/c", policy_instructions="Only travel." + hidden)
        store.put_record(Record(Partition(instance_id, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash("/agents/c"),
                                settings.to_data()))
    finally:
        store.close()
    listed = _cli(sqlite_server, "--instance", instance_id, "agents")
    assert listed.returncode == 0 and listed.stderr == ""
    assert listed.stdout.splitlines() == [
        "/agents/c  on  auto_append=false  scope=user  groups=any  instructions=withheld (secret or hidden text)",
        "1 agent(s)",
    ]


def test_operator_finds_hidden_text_and_asks_to_forget_it(sqlite_server: RunningServer, instance_id: str) -> None:
    """hidden-text walks every page (a progress line on stderr after each but the last) and prints one line per
    finding, never the text, then a summary; a page size the service refuses exits 2 with its reason; forget files
    the pending request the list then shows."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = SqliteMemoryStore(sqlite_server.env["MEMORY_SQLITE_PATH"])
    try:
        found = []
        for n, content in enumerate(["- tea" + hidden, "- clean", "- coffee" + hidden]):
            key = ProfileKey(instance_id, f"user{n}@contoso.com", Scope.USER)
            entry = MemoryEntry(f"e{n}", key, content, EntryKind.APPEND, datetime(2026, 1, 1, tzinfo=UTC), key.upn)
            store.append(MemoryProfile(key, None, None, None, entry.created_on, entry.created_on), entry)
            found += [entry] if hidden in content else []
    finally:
        store.close()
    scan = _cli(sqlite_server, "--instance", instance_id, "hidden-text", "--page", "1")
    refused = _cli(sqlite_server, "--instance", instance_id, "hidden-text", "--page", "0")
    forget = _cli(sqlite_server, "--instance", instance_id, "forget", "user2@contoso.com", "e2")
    listed = _cli(sqlite_server, "--instance", instance_id, "list", "--status", "pending")
    assert scan.returncode == 0
    assert scan.stdout.splitlines() == [
        *(f"{e.key.upn}  {e.id}  user  content  U+E006F  stored 2026-01-01T00:00:00+00:00" for e in found),
        "2 entries with hidden text, in 3 memories (3 entries) scanned; forget one with: operator forget UPN ENTRY_ID"]
    assert scan.stderr.splitlines() == ["scanned 1 entry (1 memory finished), 1 found so far",
                                        "scanned 2 entries (2 memories finished), 1 found so far"]
    assert hidden[0] not in scan.stdout + scan.stderr
    assert refused.returncode == 2 and "limit" in refused.stderr and refused.stdout == ""
    assert forget.returncode == 0 and json.loads(forget.stdout)["status"] == "pending_approval"
    assert "forget user2@contoso.com  e2" in listed.stdout


def _scan_stopped_by_an_outage(tmp_path: Path, lines: int, *options: str) -> tuple[list[str], int, str, str, str]:
    """``operator hidden-text`` against a server on ``tmp_path``'s store, paused after ``lines`` progress lines
    while the server is stopped, then let go: the progress lines, exit status, stdout, stderr and the server's
    URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    with running_server(tmp_path) as server:
        scan = subprocess.Popen(
            [sys.executable, "-m", "memory_core", "operator", "--url", server.base_url, "--key", OPERATOR_KEY,
             "--instance", "i", "hidden-text", *options],
            cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert scan.stderr is not None
        progress = [scan.stderr.readline() for _ in range(lines)]
        scan.send_signal(signal.SIGSTOP)
        server.process.terminate()
        server.process.wait(timeout=30)
        scan.send_signal(signal.SIGCONT)
        out, err = scan.communicate(timeout=60)
    return progress, scan.returncode, out, err, server.base_url


def test_a_scan_cut_short_prints_its_findings_and_goes_on_from_where_it_stopped(tmp_path: Path) -> None:
    """300 memories read one a page: the server is stopped while the command is paused after its third progress
    line. The command prints what it found so far, says it stopped before the end, exits 6 (unavailable) and names
    on its last line the command that goes on; run with ``--from`` against the server started again on the same
    store, it scans the rest. Each memory is scanned once over the two runs and each finding is listed once."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    try:
        for n in range(300):
            key = ProfileKey("i", f"user{n:03d}@contoso.com", Scope.USER)
            entry = MemoryEntry(f"e{n:03d}", key, "- tea" + (hidden if n % 150 == 0 or n == 299 else ""),
                                EntryKind.APPEND, datetime(2026, 1, 1, tzinfo=UTC), key.upn)
            store.append(MemoryProfile(key, None, None, None, entry.created_on, entry.created_on), entry)
    finally:
        store.close()
    progress, returncode, out, err, base_url = _scan_stopped_by_an_outage(tmp_path, 3, "--page", "1")
    assert progress[0] == "scanned 1 entry (1 memory finished), 1 found so far\n"
    assert returncode == 6
    stopped_at = int(out.splitlines()[-1].split(" in ")[1].split(" entries")[0])
    assert 3 <= stopped_at < 300
    assert out.splitlines()[0] == "user000@contoso.com  e000  user  content  U+E006F  stored 2026-01-01T00:00:00+00:00"
    assert f"in {stopped_at} entries ({stopped_at} memories finished) scanned before the scan stopped" in out
    *_, unreachable, resume = err.splitlines()
    assert unreachable.startswith(f"memory-core operator: cannot reach {base_url}")
    assert resume.startswith("memory-core operator: the scan stopped; go on from where it stopped with: "
                             "hidden-text --page 1 --from ")
    token = resume.rsplit(" ", 1)[1]

    with running_server(tmp_path) as again:
        rest = _cli(again, "--instance", "i", "hidden-text", "--page", "100", "--from", token)
        refused = _cli(again, "--instance", "i", "hidden-text", "--from", "not-a-token")
    assert rest.returncode == 0
    found = [line.split()[1] for line in (out + rest.stdout).splitlines() if "  user  content  " in line]
    assert sorted(found) == ["e000", "e150", "e299"]
    assert rest.stdout.splitlines()[-1].split(" in ")[1].startswith(f"{300 - stopped_at} memories")
    assert refused.returncode == 2 and "continuation" in refused.stderr
    assert "go on" not in refused.stderr  # a refused continuation is not one to go on from


def test_a_scan_cut_short_inside_a_large_memory_prints_what_it_found(tmp_path: Path) -> None:
    """One user's 25,000 entries are read about 10,000 a page, so the pages before the stop finish no memory. The
    server is stopped while the command is paused after its first progress line: the command still prints what
    those pages found, says it stopped before the end, and names the ``--from`` that goes on; the scan's rest,
    against the server started again, finds the others. Each hidden entry is listed once over the two runs."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    try:
        key = ProfileKey("i", "big@contoso.com", Scope.USER)
        start = datetime(2026, 1, 1, tzinfo=UTC)
        profile = MemoryProfile(key, None, None, None, start, start)
        for n in range(25_000):
            text = "- tea" + (hidden if n in (0, 12_345, 24_999) else "")
            store.append(profile, MemoryEntry(f"e{n:05d}", key, text, EntryKind.APPEND, start + timedelta(seconds=n),
                                              key.upn))
    finally:
        store.close()
    progress, returncode, out, err, _ = _scan_stopped_by_an_outage(tmp_path, 1)
    assert progress == ["scanned 10000 entries (0 memories finished), 1 found so far\n"]
    assert returncode == 6
    assert out.splitlines()[0].startswith("big@contoso.com  e00000  user  content  U+E006F")
    assert " entries (0 memories finished) scanned before the scan stopped" in out
    token = err.splitlines()[-1].rsplit(" ", 1)[1]
    assert err.splitlines()[-1].startswith("memory-core operator: the scan stopped; go on from where it stopped with: "
                                           "hidden-text --from ")
    with running_server(tmp_path) as again:
        rest = _cli(again, "--instance", "i", "hidden-text", "--from", token)
    assert rest.returncode == 0
    found = [line.split()[1] for line in (out + rest.stdout).splitlines() if "  user  content  " in line]
    assert sorted(found) == ["e00000", "e12345", "e24999"]
    assert rest.stdout.splitlines()[-1].split(" in ")[1].startswith("1 memory")


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
    listed = _cli(sqlite_server, "--instance", instance_id, "list", "--status", "pending")
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
    listed = _cli(server, "--instance", instance_id, "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith(request_id)
    assert lines[1].split()[:4] == ["of-a-later-kind", "pending", "archive", "later@contoso.com"]
    assert "unreadable:" in lines[1] and "archive" in lines[1].split("unreadable:")[1]
    assert lines[2] == "1 request(s), 1 this release cannot read"


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
    dismissed = _cli(server, "--instance", instance_id, "dismiss", "of-a-later-kind")
    assert dismissed.returncode == 0, dismissed.stderr
    answer = json.loads(dismissed.stdout)
    assert (answer["request_id"], answer["record_id"], len(answer["record_sha256"])) == (
        "of-a-later-kind", "2026-01-01T00:00:00.000000Z~of-a-later-kind", 64)
    refused = _cli(server, "--instance", instance_id, "dismiss", request_id)
    assert refused.returncode == operator_cli.exit_code_for(409) and refused.returncode != 0
    assert refused.stderr.startswith("memory-core operator: 409: ") and "approve or reject it" in refused.stderr
    listed = _cli(server, "--instance", instance_id, "list")
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
    refused = _cli(server, "--instance", instance_id, "dismiss", "held-later")
    assert refused.returncode == operator_cli.exit_code_for(409) and "stays hidden" in refused.stderr
    forced = _cli(server, "--instance", instance_id, "dismiss", "--force", "held-later")
    assert forced.returncode == 0, forced.stderr
    answer = json.loads(forced.stdout)
    assert (answer["status"], answer["holds_left"], answer["forced"]) == ("approved", 1, True)
    assert _cli(server, "--instance", instance_id, "dismiss", "no-user").returncode == 0
    trail = _cli(server, "--instance", instance_id, "audit", "~deletions")
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
    assert _cli(server, "--instance", instance_id, "dismiss", "--force", "held-later").returncode == 0

    listed = _cli(server, "--instance", instance_id, "orphan-holds")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"held-later  {later}  {later}  all scopes up to 2099-01-01T00:00:00+00:00",
                                          "1 orphan hold(s)"]
    refused = _cli(server, "--instance", instance_id, "release-hold", "--upn", later, forget)
    assert refused.returncode == operator_cli.exit_code_for(409) and "approve or reject it" in refused.stderr
    released = _cli(server, "--instance", instance_id, "release-hold", "--upn", later, "held-later")
    assert released.returncode == 0, released.stderr
    assert json.loads(released.stdout) == {"request_id": "held-later", "upn": later, "holds_released": 1}
    with server.client(later) as http:
        shown = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
    assert [e["content_markdown"] for e in shown] == ["- hidden by a later release"]
    assert _cli(server, "--instance", instance_id, "orphan-holds").stdout.splitlines() == ["0 orphan hold(s)"]


def test_release_hold_of_a_shared_hold_naming_no_author_takes_only_shared_and_audits_in_deletions(
    server: RunningServer, instance_id: str,
) -> None:
    """A ``~shared`` hold naming no author (every author's team copies) is listed with no user (``?``); `release-hold
    --upn <user>` lifts none of it (exit 0 counting 0, nothing in that user's trail, still listed); `--upn
    '~deletions'`, another internal name, exits with the 400's code and message (``invalid_upn``); `--upn
    '~shared'` exits 0 counting 1, `audit ~deletions` prints its ``hold_released`` event, and the listing is
    empty."""
    bystander = "carol@contoso.com"
    with server.client(bystander) as http:  # a team copy: ~shared then holds a profile, so the listing reads it
        http.post(f"/instances/{instance_id}/memory/append", json={
            "scope": "user", "content_markdown": "- shared with the team", "share": "team"}).raise_for_status()
    put_hold_beside(server, instance_id, SHARED_OWNER, "gone-shared")

    listed = _cli(server, "--instance", instance_id, "orphan-holds")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"gone-shared  {SHARED_OWNER}  ?  all scopes up to 2099-01-01T00:00:00+00:00", "1 orphan hold(s)"]

    as_user = _cli(server, "--instance", instance_id, "release-hold", "--upn", bystander, "gone-shared")
    assert as_user.returncode == 0, as_user.stderr
    assert json.loads(as_user.stdout) == {"request_id": "gone-shared", "upn": bystander, "holds_released": 0}
    internal = _cli(server, "--instance", instance_id, "release-hold", "--upn", DELETIONS_OWNER, "gone-shared")
    assert internal.returncode == operator_cli.exit_code_for(400)
    assert "400: upn: a user principal name has the form" in internal.stderr
    assert _cli(server, "--instance", instance_id, "orphan-holds").stdout == listed.stdout
    users_trail = _cli(server, "--instance", instance_id, "audit", bystander)
    assert "hold_released" not in users_trail.stdout and users_trail.returncode == 0, users_trail.stderr

    shared = _cli(server, "--instance", instance_id, "release-hold", "--upn", SHARED_OWNER, "gone-shared")
    assert shared.returncode == 0, shared.stderr
    assert json.loads(shared.stdout) == {"request_id": "gone-shared", "upn": SHARED_OWNER, "holds_released": 1}
    trail = _cli(server, "--instance", instance_id, "audit", DELETIONS_OWNER)
    assert trail.returncode == 0, trail.stderr
    (event,) = [e for e in json.loads(trail.stdout)["events"] if e["action"] == "hold_released"]
    assert (event["request_id"], event["actor"]) == ("gone-shared", OPERATOR_KEY_LABEL)
    assert "naming no author" in event["detail"]
    assert _cli(server, "--instance", instance_id, "orphan-holds").stdout.splitlines() == ["0 orphan hold(s)"]


def test_a_url_that_is_no_url_is_one_line_and_exit_2(server: RunningServer, instance_id: str) -> None:
    """--url without its scheme, or not a URL at all, exits 2 with one line naming --url (it ended in a traceback);
    a URL ending in /api, as the README writes the service's, is the service's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    for url in (server.base_url.removeprefix("http://"), "http://[::1"):
        result = subprocess.run([sys.executable, "-m", "memory_core", "operator", "--url", url, "--key", OPERATOR_KEY,
                                 "--instance", instance_id, "list"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and "--url" in result.stderr, url
    with_api = subprocess.run([sys.executable, "-m", "memory_core", "operator", "--url", f"{server.base_url}/api/",
                               "--key", OPERATOR_KEY, "--instance", instance_id, "list"], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
    assert with_api.returncode == 0 and with_api.stdout == "0 request(s)\n", with_api.stderr


def test_a_service_that_does_not_answer_in_time_is_named_as_such(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A socket that accepts and never answers (the service still working on a long request): one line saying no
    answer came within the wait and that the request may still be running, exit 6 (it said "cannot reach ...: "
    with nothing after the colon, beside a logged warning). The wait is shortened to 0.5 s in process."""
    silent = socket.create_server(("127.0.0.1", 0))
    try:
        monkeypatch.setattr(operator_cli, "TIMEOUT_SECONDS", 0.5)
        parser = argparse.ArgumentParser()
        operator_cli.add_parser(parser.add_subparsers(dest="command"))
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        code = operator_cli.run(parser.parse_args(["operator", "--url", url, "--key", "k", "--instance", "i", "list"]))
    finally:
        silent.close()
    err = capsys.readouterr().err
    assert code == 6
    assert err.splitlines() == [f"memory-core operator: {url} gave no answer within 0.5 s; the request may still be "
                                "running there"]


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


def test_sweep_prints_the_answer_as_json_and_what_it_did_on_stderr(server: RunningServer, instance_id: str) -> None:
    """A sweep that executes every approved request: the JSON answer on stdout (``left`` empty), one line on
    stderr saying so, exit code 0."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
    _cli(server, "--instance", instance_id, "approve", request_id)
    swept = _cli(server, "--instance", instance_id, "sweep")
    answer = json.loads(swept.stdout)
    assert swept.returncode == 0
    assert [r["id"] for r in answer["executed"]] == [request_id] and answer["left"] == []
    assert "the sweep executed 1 request and left 0 for a later sweep" in swept.stderr


def test_a_sweep_that_leaves_a_request_names_it_and_exits_7(server: RunningServer, instance_id: str) -> None:
    """A sweep that leaves an approved request: the JSON answer names it under ``left``, stderr has one line per
    request left (id, kind, user, reason, message), and the exit code is 7 (not one of the error table's)."""
    put_unreadable_request_beside(server, instance_id)
    swept = _cli(server, "--instance", instance_id, "sweep")
    (left,) = json.loads(swept.stdout)["left"]
    assert swept.returncode == operator_cli.SWEEP_LEFT_EXIT == 7
    assert left["request_id"] == "from-a-later-release" and left["reason"] == "unreadable"
    assert "the sweep executed 0 requests and left 1 for a later sweep:" in swept.stderr
    assert "  from-a-later-release  ?  later@contoso.com  unreadable: the stored deletion request" in swept.stderr


def _approved_purges(server: RunningServer, instance_id: str, count: int) -> list[str]:
    """``count`` approved purges (one a user), in the order they were approved."""
    op, api = {"X-API-KEY": OPERATOR_KEY}, f"{server.api}/instances/{instance_id}/operator"
    ids = []
    for n in range(count):
        filed = httpx.post(f"{api}/purges", headers=op, json={"upn": f"steps-{n}@contoso.com"})
        filed.raise_for_status()
        ids.append(filed.json()["request_id"])
        httpx.post(f"{api}/deletions/{ids[-1]}/approve", headers=op).raise_for_status()
    return ids


def test_sweep_walks_in_steps_with_a_progress_line_after_each_call(server: RunningServer, instance_id: str) -> None:
    """Three approved purges and one request this release cannot read, --step 1: three calls, a line on stderr after
    each but the last (executed and left so far, approved to go), then the one JSON answer of the whole sweep
    (every request executed, in approval order, the unreadable one left once) and exit 7 for it."""
    put_unreadable_request_beside(server, instance_id)
    approved = _approved_purges(server, instance_id, 3)
    swept = _cli(server, "--instance", instance_id, "sweep", "--step", "1")
    answer = json.loads(swept.stdout)
    assert swept.returncode == operator_cli.SWEEP_LEFT_EXIT
    assert [r["id"] for r in answer["executed"]] == approved
    assert [left["request_id"] for left in answer["left"]] == ["from-a-later-release"]
    assert (answer["remaining"], answer["continuation"]) == (0, None)
    assert swept.stderr.splitlines()[:3] == [
        "memory-core operator: swept 1 executed, 1 left so far; 2 approved to go",
        "memory-core operator: swept 2 executed, 1 left so far; 1 approved to go",
        "memory-core operator: the sweep executed 3 requests and left 1 for a later sweep:",
    ]


def test_sweep_refuses_a_step_out_of_range(server: RunningServer, instance_id: str) -> None:
    """--step 0: the service answers 400, the command exits 2 with the message, and nothing is executed."""
    (request_id,) = _approved_purges(server, instance_id, 1)
    swept = _cli(server, "--instance", instance_id, "sweep", "--step", "0")
    listed = _cli(server, "--instance", instance_id, "list", "--status", "approved")
    assert swept.returncode == 2 and "400" in swept.stderr and "limit" in swept.stderr
    assert request_id in listed.stdout


class _InProcessSweeps:
    """``CoreApiClient.sweep`` answered by a service in this process (a real SQLite store): a fault can be injected
    into its sweep, which a server cannot have."""

    def __init__(self, custody: CustodyService) -> None:
        self.custody, self.calls = custody, 0

    async def sweep(self, instance_id: str, headers: dict[str, str], *, limit: int | None = None,
                    continuation: str | None = None) -> SweepResponse:
        self.calls += 1
        return SweepResponse.from_result(self.custody.sweep("op", instance_id, limit=limit,
                                                            continuation=continuation))


def test_sweep_stops_on_a_request_that_keeps_failing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first of three approved requests fails on every try: the walk leaves it once, executes the other two and
    ends after three calls of one (the service goes on after a request it left), never trying it again."""
    store = SqliteMemoryStore(tmp_path / "s.sqlite3")
    try:
        service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
        approved = []
        for n in range(3):
            caller = Caller(upn=f"u{n}@contoso.com")
            service.append(caller, "i", Scope.USER, None, "- a fact")
            outcome = service.clear(caller, "i", Scope.USER, None, confirm=True)
            assert isinstance(outcome, PendingDeletion)
            service.custody.approve("op", "i", outcome.request_id)
            approved.append(outcome.request_id)
        tries: list[str] = []

        def refuse(at: str, request: DeletionRequest) -> None:
            if at == "planned" and request.id == approved[0]:
                tries.append(request.id)
                raise PayloadTooLarge("the request is too large")

        sweeps = _InProcessSweeps(CustodyService(store, service.audit, clock=TickingClock(),
                                                 new_id=lambda: uuid.uuid4().hex, fault=refuse))
        whole = asyncio.run(operator_cli._sweep(cast(CoreApiClient, sweeps), "i", {}, 1))
    finally:
        store.close()
    assert [r.id for r in whole.executed] == approved[1:]
    assert [(left.request_id, left.reason) for left in whole.left] == [(approved[0], "refused")]
    assert sweeps.calls == 3 and tries == [approved[0]]
    assert capsys.readouterr().err.splitlines() == [
        "memory-core operator: swept 0 executed, 1 left so far; 2 approved to go",
        "memory-core operator: swept 1 executed, 1 left so far; 1 approved to go",
    ]


def test_a_sweep_whose_continuation_repeats_stops_with_an_error() -> None:
    """A service (or a proxy) that answers the same step again would keep `sweep` calling for ever: the second time
    a continuation comes back, the walk stops with CoreApiFailure."""
    calls: list[str | None] = []

    class Repeating:
        async def sweep(self, instance_id: str, headers: dict[str, str], *, limit: int | None = None,
                        continuation: str | None = None) -> SweepResponse:
            calls.append(continuation)
            return SweepResponse(executed=[], left=[], remaining=1, continuation="same-token")

    with pytest.raises(CoreApiFailure, match="repeated a sweep continuation after 0 executed"):
        asyncio.run(operator_cli._sweep(cast(CoreApiClient, Repeating()), "i", {}, 1))
    assert calls == [None, "same-token"]


def test_sweep_against_a_service_older_than_the_bound_makes_one_call() -> None:
    """A service that ignores ?limit= sweeps everything and answers neither remaining nor continuation: the walk is
    that one call."""
    calls: list[str | None] = []

    class Older:
        async def sweep(self, instance_id: str, headers: dict[str, str], *, limit: int | None = None,
                        continuation: str | None = None) -> SweepResponse:
            calls.append(continuation)
            return SweepResponse.model_validate({"executed": [], "left": []})

    whole = asyncio.run(operator_cli._sweep(cast(CoreApiClient, Older()), "i", {}, 1))
    assert calls == [None] and whole.executed == [] and whole.left == []
