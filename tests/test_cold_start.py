"""Cold start: importing the Function app loads none of the heavy libraries a request may never need.

The time itself is measured by bench/bench_cold_start.py (timings are too noisy for a test);
this pins down what would make it slow again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFERRED = (
    "mcp", "mcp_types", "msal", "jwt", "detect_secrets", "numpy", "rank_bm25", "azure.cosmos", "azure.identity",
    "pydantic_settings", "memory_core.settings", "memory_core.domain.service", "memory_core.domain.reads",
    "memory_core.domain.confusable_prototypes",
)


def test_importing_function_app_defers_the_sdks_and_detectors() -> None:
    """The MCP SDK, MSAL, the JWT stack, the secret detectors, the Cosmos SDK, pydantic-settings, the
    service's read machinery and Unicode's table of confusables (the memory tool's look-alike names) load on
    first use: the routes import only the small types they name."""
    probe = (
        "import json, sys; import function_app; "
        f"print(json.dumps(sorted({{m for m in sys.modules for d in {DEFERRED!r} if m == d or m.startswith(d + '.')}})))"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(result.stdout) == []


def test_the_app_still_registers_every_function_without_them() -> None:
    probe = "import function_app; print(len(function_app.app.get_functions()))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert int(result.stdout) >= 20


# A fresh process on the embedded store: a read through the REST function, then writes, reporting
# after each whether the secret detectors (detect-secrets) are loaded and what the function answered.
FIRST_READ_THEN_WRITES = r"""
import json, os, sys, tempfile, threading
import azure.functions as func
os.environ.update(MEMORY_STORE="sqlite", MEMORY_SQLITE_PATH=os.path.join(tempfile.mkdtemp(), "m.db"),
                  MEMORY_API_KEYS="cold-key", MEMORY_DEFAULT_INSTANCE_ID="cold", WEBSITE_HOSTNAME="")
import function_app
from memory_core.api import rest
HEADERS = {"x-api-key": "cold-key", "host": "127.0.0.1", "content-type": "application/json",
           "x-user-identity": json.dumps({"upn": "cold@contoso.com", "name": "Cold"})}
def call(function, method, path, body=None, params=None):
    answer = function(func.HttpRequest(method, "http://127.0.0.1/api/instances/cold/memory" + path, headers=HEADERS,
                                       params=params or {}, route_params={"instanceId": "cold"},
                                       body=json.dumps(body).encode() if body is not None else b""))
    return answer.status_code, json.loads(answer.get_body())
def loaded():
    return "detect_secrets" in sys.modules
steps = {}
steps["read"] = (call(rest.get_memory, "GET", "", params={"scope": "user"})[0], loaded())
# concurrent first writes, one of them a secret: the scanner is built once and every write is scanned
answers = {}
def write(name, text):
    answers[name] = call(rest.append_memory, "POST", "/append", {"scope": "user", "content_markdown": text})
threads = [threading.Thread(target=write, args=(f"plain{i}", f"- likes tea number {i}")) for i in range(6)]
threads.append(threading.Thread(target=write, args=("secret", "- my key is AKIAIOSFODNN7EXAMPLF")))
for thread in threads: thread.start()
for thread in threads: thread.join()
steps["writes"] = (sorted((name, status, body.get("error", {}).get("code")) for name, (status, body) in answers.items()), loaded())
status, body = call(rest.get_memory, "GET", "", params={"scope": "user"})
steps["shown"] = [line for line in body["content_markdown"].splitlines() if line.startswith("- ")]
print(json.dumps(steps))
"""


def test_a_read_loads_no_secret_detectors_and_the_first_writes_are_still_scanned() -> None:
    """The secret detectors load with the first write's scan, not with the first request: a fresh
    process's first read answers without them. Seven concurrent first writes are then all scanned:
    the one holding an AWS key is refused (422, secret_detected) and never shown."""
    result = subprocess.run([sys.executable, "-c", FIRST_READ_THEN_WRITES], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    steps = json.loads(result.stdout)
    assert steps["read"] == [200, False]
    writes, loaded = steps["writes"]
    assert loaded is True
    assert ["secret", 422, "secret_detected"] in writes
    assert sorted(status for name, status, _ in writes if name.startswith("plain")) == [200] * 6
    assert sorted(steps["shown"]) == sorted(f"- likes tea number {i}" for i in range(6))
