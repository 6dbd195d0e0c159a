"""``python -m memory_core operator`` run as its own process against a local server, as an operator types it."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.local_server import OPERATOR_KEY, PROJECT_ROOT, RunningServer


def run_operator(server: RunningServer, *args: str, key: str = OPERATOR_KEY) -> subprocess.CompletedProcess[str]:
    """The command's finished process (exit status, stdout and stderr as text) with ``--url`` naming ``server`` and
    ``--key key`` before ``args``; no ``MEMORY_*`` setting of this process reaches it. Waits up to 60 s, then raises
    ``subprocess.TimeoutExpired``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    return subprocess.run(
        [sys.executable, "-m", "memory_core", "operator", "--url", server.base_url, "--key", key, *args],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
