"""Fixtures of the memory tool tests: the local server in each deletion mode, on each store."""

from __future__ import annotations

import pytest

from tests.support.local_server import RunningServer

# (fixture of tests/conftest.py, whether deletions wait for an operator)
SERVERS = {
    "sqlite-immediate": ("immediate_server", False),
    "sqlite-approval": ("sqlite_server", True),
    "cosmos-approval": ("cosmos_server", True),
}


@pytest.fixture(params=list(SERVERS))
def mode_server(request: pytest.FixtureRequest) -> tuple[RunningServer, bool]:
    """The local server on each store and deletion mode, and whether deletions await approval."""
    fixture, approval = SERVERS[request.param]
    return request.getfixturevalue(fixture), approval


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
