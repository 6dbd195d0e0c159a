"""Start ``python -m memory_core serve`` as a real process for HTTP-level tests."""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from memory_core.domain.store import MemoryStore

PROJECT_ROOT = Path(__file__).resolve().parents[2]
USER_KEY = "test-user-key"
OPERATOR_KEY = "test-operator-key"


_SERVING = re.compile(r"serving function_app\.py on http://127\.0\.0\.1:(\d+)/")
_LAUNCHES = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sweep_schedule_outside_the_session(now: datetime | None = None) -> str:
    """An NCRONTAB schedule that fires once a year, at midnight on the first of the sixth month after ``now``'s (now
    by default; five months away at the least): a test server's sweep timer that never runs while its tests do.

    The servers are shared by a session's tests, each in its own instance, and the timer sweeps every instance: on
    the default schedule (every 5 minutes, on the wall clock's minute) it executed an approved request between a
    test approving it and the test's own sweep or listing (test_sweep_refuses_a_step_out_of_range saw its approved
    purge gone). A test of the timer passes its own MEMORY_SWEEP_SCHEDULE."""
    month = ((now or datetime.now(UTC)).month + 5) % 12 + 1
    return f"0 0 0 1 {month} *"


def identity(upn: str, name: str | None = None, **extra: object) -> str:
    """An X-USER-IDENTITY header value."""
    return json.dumps({"upn": upn, "name": name or upn.split("@")[0].title(), "user_name": upn, **extra})


@dataclass
class RunningServer:
    base_url: str
    process: subprocess.Popen[bytes]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return f"{self.base_url}/api"

    def open_store(self) -> MemoryStore:
        """The server's own store, opened beside it from its settings (the caller closes it): for writing
        what an older version of the service stored, which no route writes any more."""
        from memory_core.composition import build_store
        from memory_core.settings import settings_from

        return build_store(settings_from({k: v for k, v in self.env.items() if k.startswith(("MEMORY_", "COSMOS_"))}))

    def client(self, upn: str | None = "alex@contoso.com", *, key: str | None = USER_KEY, **headers: str) -> httpx.Client:
        """An HTTP client that sends the given user's identity and key."""
        sent: dict[str, str] = {}
        if key is not None:
            sent["X-API-KEY"] = key
        if upn is not None:
            sent["X-USER-IDENTITY"] = identity(upn)
        sent.update({k.replace("_", "-"): v for k, v in headers.items()})
        return httpx.Client(base_url=self.api, headers=sent, timeout=30)


@contextmanager
def running_server(tmp_dir: Path, env: Mapping[str, str] | None = None, *, startup_timeout: float = 30) -> Iterator[RunningServer]:
    """Run the local server on a free loopback port until the block ends. Its sweep timer does not fire while the
    session runs (``sweep_schedule_outside_the_session``) unless ``env`` sets MEMORY_SWEEP_SCHEDULE."""
    child_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))
    }
    child_env.update(
        {
            "MEMORY_SQLITE_PATH": str(tmp_dir / "memory.sqlite3"),
            "MEMORY_API_KEYS": USER_KEY,
            "MEMORY_OPERATOR_KEYS": OPERATOR_KEY,
            "MEMORY_SWEEP_SCHEDULE": sweep_schedule_outside_the_session(),
            "PYTHONUNBUFFERED": "1",
        }
    )
    child_env.update(env or {})
    log_path = tmp_dir / f"server-{next(_LAUNCHES)}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "memory_core", "serve", "--host", "127.0.0.1", "--port", "0"],
            cwd=PROJECT_ROOT,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + startup_timeout
    base = ""
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}:\n{log_path.read_text()}")
            if not base:
                # serve binds port 0 before its first line names the port it holds, so the
                # server answering below is this one: a port picked here and bound later
                # could be taken by another suite's server first (a fuzz run once met a 421
                # from a server configured for another host name).
                bound = _SERVING.search(log_path.read_text(errors="replace"))
                if bound is None:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"server did not start in {startup_timeout}s:\n{log_path.read_text()}")
                    time.sleep(0.05)
                    continue
                base = f"http://127.0.0.1:{bound.group(1)}"
            try:
                if httpx.get(f"{base}/api/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not start in {startup_timeout}s:\n{log_path.read_text()}")
            time.sleep(0.1)
        yield RunningServer(base, process, child_env)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def read_until_closed(sock: socket.socket, seconds: float = 10.0) -> bytes:
    """Everything the server sends on ``sock`` until it closes the connection (or ``seconds`` pass without a byte)."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return received
