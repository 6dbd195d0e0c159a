"""MCP fixtures: two real local servers, one per backend.

``core_server`` runs the MCP tools in process and stores memory; ``front_server``
runs them against core_server's CoreAPI over HTTP (MEMORY_COREAPI_BASE_URL) and
stores nothing. ``mcp_target`` runs a test against each.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.local_server import USER_KEY, RunningServer, running_server

DEFAULT_INSTANCE = "mcp-default-instance"
FRONT_KEY = "test-mcp-front-key"

# Explicit values, so neither the caller's environment nor a local.settings.json changes the setup.
_COMMON = {
    "MEMORY_DEFAULT_INSTANCE_ID": DEFAULT_INSTANCE,
    "MEMORY_MCP_ALLOWED_HOSTS": "",
    "WEBSITE_HOSTNAME": "",
    "MEMORY_STORE": "sqlite",
    # clear answers the emptied scope; the operator-approval answer is covered in test_functions_glue.py
    "MEMORY_DELETION_MODE": "immediate",
}


@dataclass(frozen=True)
class McpTarget:
    """An MCP endpoint under test and where its memory ends up."""

    backend: str
    server: RunningServer
    key: str
    store: RunningServer

    @property
    def url(self) -> str:
        return f"{self.server.api}/mcp"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def core_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core serving the CoreAPI and the MCP tools in process (the default backend)."""
    env = {**_COMMON, "MEMORY_COREAPI_BASE_URL": ""}
    with running_server(tmp_path_factory.mktemp("mcp-core"), env) as server:
        yield server


@pytest.fixture(scope="session")
def front_server(core_server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core whose MCP tools call core_server's CoreAPI, with a caller key of its own."""
    env = {
        **_COMMON,
        "MEMORY_API_KEYS": FRONT_KEY,
        "MEMORY_COREAPI_BASE_URL": core_server.api,
        "MEMORY_COREAPI_KEY": USER_KEY,
    }
    with running_server(tmp_path_factory.mktemp("mcp-front"), env) as server:
        yield server


@pytest.fixture(scope="session")
def approval_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core whose deletions wait for operator approval (clear answers 202 pending_approval)."""
    env = {**_COMMON, "MEMORY_COREAPI_BASE_URL": "", "MEMORY_DELETION_MODE": "operator_approval"}
    with running_server(tmp_path_factory.mktemp("mcp-approval"), env) as server:
        yield server


@pytest.fixture(scope="session", params=["in_process", "coreapi"])
def mcp_target(request: pytest.FixtureRequest) -> McpTarget:
    """The MCP endpoint on each backend."""
    core: RunningServer = request.getfixturevalue("core_server")
    if request.param == "in_process":
        return McpTarget("in_process", core, USER_KEY, core)
    return McpTarget("coreapi", request.getfixturevalue("front_server"), FRONT_KEY, core)
