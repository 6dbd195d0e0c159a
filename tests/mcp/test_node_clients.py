"""Node MCP clients against ``serve``, on Node 22 from tests/mcp_node (installed by scripts/test with ``npm ci``).

- the MCP conformance suite (@modelcontextprotocol/conformance), every active
  server scenario, with tests/mcp_node/conformance-baseline.yml listing those
  that need the suite's own reference fixtures; the applicable ones must pass;
- the MCP Inspector's CLI mode (@modelcontextprotocol/inspector), listing the
  tools and calling them with the headers a configured client sends, and
  launching ``python -m memory_core mcp`` over the TypeScript SDK's stdio
  transport (the one Claude Desktop and Claude Code use).

The conformance suite sends no custom headers, so it runs against a server in
MEMORY_AUTH_MODE=local on loopback. Every run is bounded in time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.mcp.server import TOOL_NAMES
from tests.mcp.client import mcp_headers
from tests.support.local_server import (
    PROJECT_ROOT,
    USER_KEY,
    RunningServer,
    identity,
    running_server,
)

NODE_PROJECT = PROJECT_ROOT / "tests" / "mcp_node"
NODE_BIN = NODE_PROJECT / "node_modules" / "node" / "bin"
TOOLS = NODE_PROJECT / "node_modules" / ".bin"
APPLICABLE = {"server-initialize", "ping", "tools-list", "dns-rebinding-protection"}
TIME_LIMIT = 120


def _node_env(tmp_path: Path) -> dict[str, str]:
    if not (TOOLS / "conformance").exists() or not (NODE_BIN / "node").exists():
        pytest.fail("Node clients are not installed: run scripts/test (npm ci --prefix tests/mcp_node)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))}
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["MCP_CATALOG_PATH"] = str(tmp_path / "inspector-catalog.json")  # never the user's ~/.mcp-inspector
    env["NO_COLOR"] = "1"
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=NODE_PROJECT, env=env, capture_output=True, text=True, timeout=TIME_LIMIT)


@pytest.fixture(scope="module")
def local_mode_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {"MEMORY_AUTH_MODE": "local", "WEBSITE_HOSTNAME": "", "MEMORY_MCP_ALLOWED_HOSTS": "",
           "MEMORY_DEFAULT_INSTANCE_ID": "conformance"}
    with running_server(tmp_path_factory.mktemp("conformance-server"), env) as server:
        yield server


def test_node_is_22(tmp_path: Path) -> None:
    """The clients run on the project's own Node 22, not the machine's Node."""
    assert _run([str(NODE_BIN / "node"), "--version"], _node_env(tmp_path)).stdout.startswith("v22.")


def test_conformance_suite_passes_every_applicable_server_scenario(local_mode_server: RunningServer,
                                                                    tmp_path: Path) -> None:
    """The active server scenarios run; only baseline (non-applicable) ones fail; the applicable ones succeed."""
    results = tmp_path / "conformance"
    run = _run([str(TOOLS / "conformance"), "server", "--url", f"{local_mode_server.api}/mcp",
                "--expected-failures", "conformance-baseline.yml", "-o", str(results)], _node_env(tmp_path))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    statuses: dict[str, set[str]] = {}
    for checks in results.glob("server-*/checks.json"):
        scenario = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", checks.parent.name.removeprefix("server-"))
        statuses[scenario] = {check["status"] for check in json.loads(checks.read_text())}
    for scenario in APPLICABLE:
        assert statuses.get(scenario) == {"SUCCESS"}, (scenario, statuses.get(scenario))


def _inspector(server: RunningServer, tmp_path: Path, headers: dict[str, str], *args: str) -> dict:  # type: ignore[type-arg]
    header_args = [arg for name, value in headers.items() for arg in ("--header", f"{name}: {value}")]
    run = _run([str(TOOLS / "mcp-inspector"), "--cli", f"{server.api}/mcp", "--transport", "http", *header_args, *args],
               _node_env(tmp_path))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return json.loads(run.stdout)  # type: ignore[no-any-return]


def test_inspector_cli_lists_and_calls_the_tools(core_server: RunningServer, tmp_path: Path) -> None:
    """Inspector CLI: tools/list shows every tool with annotations; append then get round-trips over HTTP."""
    instance = f"inspector-{uuid.uuid4().hex[:8]}"
    fact = f"- prefers green tea {uuid.uuid4().hex[:6]}"
    headers = mcp_headers(USER_KEY, instance=instance)
    listed = _inspector(core_server, tmp_path, headers, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert set(tools) == set(TOOL_NAMES)
    assert tools["clear_memory"]["annotations"]["destructiveHint"] is True
    assert "outputSchema" in tools["search_memory"]
    appended = _inspector(core_server, tmp_path, headers, "--method", "tools/call", "--tool-name", "append_memory",
                          "--tool-arg", "scope=user", f"memory={fact}")
    assert appended.get("isError") is not True and fact in appended["structuredContent"]["content_markdown"]
    got = _inspector(core_server, tmp_path, headers, "--method", "tools/call", "--tool-name", "get_memory",
                     "--tool-arg", "scope=user")
    assert fact in got["content"][0]["text"]


def test_inspector_cli_without_a_key_is_refused(core_server: RunningServer, tmp_path: Path) -> None:
    """Without X-API-KEY the endpoint answers 401 and the Inspector takes it as "sign in first" (auth_required)."""
    run = _run([str(TOOLS / "mcp-inspector"), "--cli", f"{core_server.api}/mcp", "--transport", "http",
                "--method", "tools/list"], _node_env(tmp_path))
    assert run.returncode != 0
    assert json.loads(run.stderr.strip().splitlines()[-1])["error"]["code"] == "auth_required"


def _inspector_stdio(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The Inspector CLI launching ``python -m memory_core mcp`` over the TypeScript SDK's stdio transport.

    The launched process gets only ``env`` (with the SDK's default variables such as PATH and HOME), as
    a client's configuration gives it.
    """
    env_args = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
    return _run([str(TOOLS / "mcp-inspector"), "--cli", "--cwd", str(PROJECT_ROOT), *env_args,
                 sys.executable, "-m", "memory_core", "mcp", *args], _node_env(tmp_path))


def test_inspector_cli_over_stdio_lists_appends_and_reads_across_launches(tmp_path: Path) -> None:
    """The TypeScript SDK's stdio client (as Claude Desktop and Claude Code use): each launch serves, then exits.

    Identity comes from the launch configuration: a key and a user identity, then the same file
    read by a second launch as that user; a third launch as another user sees nothing of it.
    """
    db = tmp_path / "memory.sqlite3"
    fact = f"- prefers green tea {uuid.uuid4().hex[:6]}"

    def launch(upn: str) -> dict[str, str]:
        return {"MEMORY_SQLITE_PATH": str(db), "MEMORY_DEFAULT_INSTANCE_ID": "inspector-stdio",
                "MEMORY_API_KEYS": USER_KEY, "MEMORY_MCP_API_KEY": USER_KEY,
                "MEMORY_MCP_USER_IDENTITY": identity(upn)}

    listed = _inspector_stdio(tmp_path, launch("alex@contoso.com"), "--method", "tools/list")
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    assert {tool["name"] for tool in json.loads(listed.stdout)["tools"]} == set(TOOL_NAMES)
    appended = _inspector_stdio(tmp_path, launch("alex@contoso.com"), "--method", "tools/call",
                                "--tool-name", "append_memory", "--tool-arg", "scope=user", f"memory={fact}")
    assert appended.returncode == 0, appended.stdout[-2000:] + appended.stderr[-2000:]
    assert fact in json.loads(appended.stdout)["structuredContent"]["content_markdown"]
    for upn, expected in (("alex@contoso.com", True), ("sam@contoso.com", False)):
        got = _inspector_stdio(tmp_path, launch(upn), "--method", "tools/call", "--tool-name", "get_memory",
                               "--tool-arg", "scope=user")
        assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
        assert (fact in json.loads(got.stdout)["content"][0]["text"]) is expected


def test_inspector_cli_over_stdio_without_a_credential_reports_the_refusal(tmp_path: Path) -> None:
    """With no key in the launch configuration the server exits 2 before serving, and the client says it failed."""
    env = {"MEMORY_SQLITE_PATH": str(tmp_path / "memory.sqlite3"), "MEMORY_DEFAULT_INSTANCE_ID": "inspector-stdio",
           "MEMORY_API_KEYS": USER_KEY}
    run = _inspector_stdio(tmp_path, env, "--method", "tools/list")
    assert run.returncode != 0
    assert "tools" not in run.stdout
    assert "refused: missing X-API-KEY header" in run.stderr  # the server's own reason, on the stderr clients show
