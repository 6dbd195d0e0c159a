"""The operator command line's hidden-text scan, against a real local server: every page with its progress, the
findings never printing the text, forget, and a scan an outage cuts short going on with ``--from``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from tests.support.local_server import OPERATOR_KEY, PROJECT_ROOT, RunningServer, running_server
from tests.support.operator_command import run_operator


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
    scan = run_operator(sqlite_server, "--instance", instance_id, "hidden-text", "--page", "1")
    refused = run_operator(sqlite_server, "--instance", instance_id, "hidden-text", "--page", "0")
    forget = run_operator(sqlite_server, "--instance", instance_id, "forget", "user2@contoso.com", "e2")
    listed = run_operator(sqlite_server, "--instance", instance_id, "list", "--status", "pending")
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
        rest = run_operator(again, "--instance", "i", "hidden-text", "--page", "100", "--from", token)
        refused = run_operator(again, "--instance", "i", "hidden-text", "--from", "not-a-token")
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
        rest = run_operator(again, "--instance", "i", "hidden-text", "--from", token)
    assert rest.returncode == 0
    found = [line.split()[1] for line in (out + rest.stdout).splitlines() if "  user  content  " in line]
    assert sorted(found) == ["e00000", "e12345", "e24999"]
    assert rest.stdout.splitlines()[-1].split(" in ")[1].startswith("1 memory")
