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
)


def test_importing_function_app_defers_the_sdks_and_detectors() -> None:
    """The MCP SDK, MSAL, the JWT stack, the secret detectors, the Cosmos SDK, pydantic-settings and the
    service's read machinery load on first use: the routes import only the small types they name."""
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
