"""The MCP front takes the Host and Origin the edge admitted, and nothing reaches it without the edge.

The edge checks Host and Origin once (``AppNames.admitted``) and keeps its answer (``Call.address``); the ``mcp``
function hands it over in the ASGI scope (``ADDRESS_SCOPE_KEY``) and the front gives the SDK those headers without
running the rule again. That is safe only while every request reaching the front has passed the edge:

- in process, through ``FunctionHost`` over function_app's own routes (what ``serve`` runs; every spelling of the
  MCP path and every method, with this app's Host and with foreign ones), the real edge, bridge, front and SDK:
  every request that reaches the front carries the edge's address, and none with a foreign Host or Origin does;
- in the source: the MCP app is built only by the composition root's endpoint, and that endpoint is called only
  by the ``mcp`` function, which the edge wraps;
- the front itself: an address in the scope is taken as it is; a scope without one (or with anything else under
  the key) is checked by the edge's rule, as before.
"""

from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import AsyncIterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import function_app
from memory_core import composition
from memory_core.composition import Runtime, build_runtime
from memory_core.edge import spec_of
from memory_core.edge.names import ADDRESS_SCOPE_KEY, Address, AppNames
from memory_core.local.host import FunctionHost
from memory_core.mcp import transport
from memory_core.mcp.front import McpHttpApp
from memory_core.settings import Settings
from tests.support.local_server import PROJECT_ROOT, USER_KEY, identity

pytestmark = pytest.mark.anyio

PING = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
PATHS = ["/api/mcp", "/api/MCP", "/api/mcp/", "/API/Mcp/", "/api//mcp", "/api/mcp/x", "/api/mcp\n", "/api/./mcp",
         "/api/mcp%2F", "/api/mcp/.."]
METHODS = ["POST", "GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"]
ADDRESSES = [
    ("localhost:7071", None), ("LOCALHOST:7071", "HTTP://LocalHost:7071/"), (None, None),
    ("evil.example", None), ("localhost.:7071", None), ("localhost:7071", "https://evil.example"),
    ("localhost:7071@evil.example", None), ("localhost:7071", "null"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    """A runtime of this test as the process's, and the process's MCP endpoint built over it (closed after)."""
    rt = build_runtime(Settings(memory_store="sqlite", memory_sqlite_path=str(tmp_path / "m.sqlite3"),
                                memory_api_keys=(USER_KEY,), website_hostname=None, memory_allowed_hosts=(),
                                memory_mcp_allowed_hosts=(), memory_coreapi_base_url=None))
    monkeypatch.setattr(composition._process, "runtime", rt)
    monkeypatch.setattr(composition._process, "mcp", None)
    monkeypatch.setattr(composition._process, "abandoned", None)
    try:
        yield rt
    finally:
        if composition._process.mcp is not None:
            await composition._process.mcp.aclose()
        rt.store.close()


async def _request(host_app: FunctionHost, method: str, path: str, host: str | None,
                   origin: str | None) -> int:
    headers = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream"),
               (b"x-api-key", USER_KEY.encode()), (b"x-user-identity", identity("edge@contoso.com").encode()),
               (b"mcp-protocol-version", b"2025-11-25"), (b"content-length", str(len(PING)).encode())]
    headers += [(b"host", host.encode())] if host is not None else []
    headers += [(b"origin", origin.encode())] if origin is not None else []
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "scheme": "http", "headers": headers, "server": ("127.0.0.1", 7071)}
    given = False
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal given
        if given:  # the body was given whole: nothing else comes until the client goes away
            await asyncio.sleep(3600)
        given = True
        return {"type": "http.request", "body": PING, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await host_app(scope, receive, send)
    return status[0]


async def test_every_request_that_reaches_the_front_carries_the_address_the_edge_admitted(
        process: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    reached: list[tuple[tuple[str, str, str | None, str | None], object, list[tuple[bytes, bytes]]]] = []
    answer = McpHttpApp.__call__
    sent: tuple[str, str, str | None, str | None] = ("", "", None, None)

    async def recording(self: McpHttpApp, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":  # not the lifespan the endpoint starts the app with
            reached.append((sent, scope.get(ADDRESS_SCOPE_KEY), list(scope.get("headers", []))))
        await answer(self, scope, receive, send)

    monkeypatch.setattr(McpHttpApp, "__call__", recording)
    names = AppNames.from_settings(process.settings)
    host_app = FunctionHost(function_app.app)
    answered: dict[tuple[str, str, str | None, str | None], int] = {}
    for path in PATHS:
        for method in METHODS:
            for host, origin in ADDRESSES:
                sent = (method, path, host, origin)
                answered[sent] = await _request(host_app, method, path, host, origin)
    served = [request for request, status in answered.items() if status == 200]
    assert {(m, p) for m, p, _, _ in served} == {("POST", "/api/mcp"), ("POST", "/api/MCP"), ("POST", "/api/mcp/"),
                                                  ("POST", "/API/Mcp/")}, served  # not a vacuous run
    assert set(served) <= {request for request, _, _ in reached}
    for (method, path, host, origin), address, _ in reached:
        assert isinstance(address, Address), (method, path, host, origin)
        assert address == names.admitted(host or "localhost", origin)  # the local host's URL names localhost
    refused = {request for request in answered if request[2] is not None and not names.accepts_host(request[2])}
    refused |= {request for request in answered if request[3] is not None and not names.accepts_origin(request[3])}
    assert refused and not refused & {request for request, _, _ in reached}
    assert all(answered[request] in (403, 404, 405, 421) for request in refused)


class _Callers(ast.NodeVisitor):
    """Every name called in a module, with the functions (``module.function``, the innermost) that call it."""

    def __init__(self, module: str, callers: dict[str, set[str]]) -> None:
        self._module = module
        self._callers = callers
        self._functions: list[str] = []

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions.append(node.name)
        self.generic_visit(node)
        self._functions.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def visit_Call(self, node: ast.Call) -> None:
        called = node.func
        name = called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute) else None
        if name is not None:
            where = self._functions[-1] if self._functions else "<module>"
            self._callers.setdefault(name, set()).add(f"{self._module}.{where}")
        self.generic_visit(node)


@cache
def _callers() -> dict[str, set[str]]:
    """Who calls what in memory_core and function_app.py."""
    callers: dict[str, set[str]] = {}
    for path in [PROJECT_ROOT / "function_app.py", *sorted((PROJECT_ROOT / "memory_core").rglob("*.py"))]:
        module = ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
        _Callers(module, callers).visit(ast.parse(path.read_text(encoding="utf-8")))
    return callers


def _calls_of(name: str) -> set[str]:
    """``module.function`` of every function in memory_core and function_app.py that calls ``name``."""
    return _callers().get(name, set())


def test_the_mcp_app_is_reached_only_through_the_edges_mcp_function() -> None:
    """The app (``McpHttpApp``) is built by ``build_asgi_app`` alone, which only the endpoint calls; the process's
    endpoint is called only by the ``mcp`` function, an edge function registered in function_app.py."""
    assert _calls_of("McpHttpApp") == {"memory_core.mcp.transport.build_asgi_app"}
    assert _calls_of("build_asgi_app") == {"memory_core.mcp.transport._started"}
    assert _calls_of("FunctionsMcpEndpoint") == {"memory_core.composition.mcp_endpoint"}
    assert _calls_of("mcp_endpoint") == {"memory_core.mcp.transport.mcp"}
    assert spec_of(transport.mcp) is not None
    assert any(f.get_user_function() is transport.mcp for f in function_app.app.get_functions())


async def _through_the_front(scope: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``scope`` through a front with this app's loopback names: what reached the app behind it, and what was sent."""
    reached: list[dict[str, Any]] = []
    sent: list[dict[str, Any]] = []

    async def sdk(inner: Any, receive: Any, send: Any) -> None:
        reached.append(inner)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": PING, "more_body": False}

    async def record(message: dict[str, Any]) -> None:
        sent.append(message)

    settings = Settings(website_hostname=None, memory_allowed_hosts=(), memory_mcp_allowed_hosts=())
    await McpHttpApp(sdk, names=AppNames.from_settings(settings))(scope, receive, record)
    return reached, sent


def _scope(host: bytes, origin: bytes | None = None, **extra: object) -> dict[str, Any]:
    headers = [(b"host", host), (b"content-type", b"application/json")]
    headers += [(b"origin", origin)] if origin is not None else []
    return {"type": "http", "method": "POST", "path": "/api/mcp", "headers": headers, "query_string": b"",
            "scheme": "http", "server": ("127.0.0.1", 7071), **extra}


async def test_the_front_gives_the_sdk_the_edges_address_without_checking_the_headers_again() -> None:
    """The scope's headers are not read for Host and Origin when the edge's address is there: its canonical forms
    replace them, whatever they say."""
    address = Address("localhost:7071", "http://localhost:7071")
    reached, _ = await _through_the_front(_scope(b"LOCALHOST:7071", b"HTTP://LocalHost:7071/",
                                                 **{ADDRESS_SCOPE_KEY: address}))
    headers = reached[0]["headers"]
    assert [v for k, v in headers if k == b"host"] == [b"localhost:7071"]
    assert [v for k, v in headers if k == b"origin"] == [b"http://localhost:7071"]
    assert [v for k, v in headers if k == b"content-type"] == [b"application/json"]


@pytest.mark.parametrize("forged", ["localhost:7071", ("localhost:7071", None), {"host": "localhost:7071"}],
                         ids=["text", "tuple", "dict"])
async def test_anything_but_an_address_under_the_key_is_checked_by_the_edges_rule(forged: object) -> None:
    """Only an ``Address`` (which only the bridge puts there) is taken: anything else, as a foreign Host, is 421."""
    reached, sent = await _through_the_front(_scope(b"evil.example", **{ADDRESS_SCOPE_KEY: forged}))
    assert not reached and sent[0]["status"] == 421


async def test_without_the_edges_address_the_front_still_refuses_a_foreign_host_or_origin() -> None:
    for scope, status in ((_scope(b"evil.example"), 421), (_scope(b"localhost", b"https://evil.example"), 403)):
        reached, sent = await _through_the_front(scope)
        assert not reached and sent[0]["status"] == status

