"""The Functions glue: the ``mcp`` function called with azure.functions.HttpRequest objects.

These run the real AsgiMiddleware (the lifespan; each request through ``memory_core.mcp.functions_bridge``),
the real SDK app and a real SQLite store, in one event loop per test, as the Python worker runs an async function.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import azure.functions as func
import pytest

from memory_core import composition
from memory_core.api.function_table import functions_of, http_methods
from memory_core.composition import Runtime, build_runtime
from memory_core.domain.errors import ConfigurationError
from memory_core.mcp.stalled import AbandonedCalls
from memory_core.mcp.tool_results import result_for_error
from memory_core.mcp.transport import FunctionsMcpEndpoint
from memory_core.settings import Settings
from tests.support.local_server import PROJECT_ROOT, free_port, identity

pytestmark = pytest.mark.anyio

KEY = "glue-key"
PROTOCOL = "2025-11-25"
URL = "http://localhost:7071/api/mcp"


def _settings(tmp_path: Path, **values: Any) -> Settings:
    base: dict[str, Any] = {
        "memory_store": "sqlite",
        "memory_sqlite_path": str(tmp_path / "memory.sqlite3"),
        "memory_api_keys": (KEY,),
        "memory_default_instance_id": "glue",
        "website_hostname": None,
        "memory_mcp_allowed_hosts": (),
        "memory_coreapi_base_url": None,
        "memory_coreapi_key": None,
        "memory_deletion_mode": "immediate",
    }
    return Settings(**{**base, **values})


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[Callable[..., Runtime]]:
    """Builds a Runtime on tmp_path from explicit settings; closes what it built."""
    built: list[Runtime] = []

    def make(**values: Any) -> Runtime:
        rt = build_runtime(_settings(tmp_path, **values))
        built.append(rt)
        return rt

    yield make
    for rt in built:
        rt.store.close()


def _request(
    body: dict[str, Any] | None, *, method: str = "POST", host: str = "localhost:7071", **headers: str
) -> func.HttpRequest:
    sent = {
        "host": host,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL,
        "x-api-key": KEY,
        "x-user-identity": identity("glue@contoso.com"),
        **{k.lower().replace("_", "-"): v for k, v in headers.items()},
    }
    payload = json.dumps(body).encode() if body is not None else b""
    return func.HttpRequest(method=method, url=URL, headers=sent, body=payload)


def _tool_call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "glue", "version": "0"}},
}


@pytest.fixture
async def endpoint_for(make_runtime: Callable[..., Runtime]) -> Any:
    """Makes FunctionsMcpEndpoints over runtimes with the given settings; shuts them down after the test."""
    made: list[FunctionsMcpEndpoint] = []

    def make(**values: Any) -> FunctionsMcpEndpoint:
        rt = make_runtime(**values)
        endpoint = FunctionsMcpEndpoint(lambda: rt)
        made.append(endpoint)
        return endpoint

    yield make
    for endpoint in made:
        await endpoint.aclose()


def _result(response: func.HttpResponse) -> dict[str, Any]:
    assert response.status_code == 200, response.get_body()
    return json.loads(response.get_body())["result"]


def test_function_app_routes_mcp_to_an_async_handler() -> None:
    """function_app.py declares function "mcp" on route mcp for POST, OPTIONS, and GET, DELETE, PUT and PATCH
    (answered 405 by the endpoint, with Allow: POST), async with (req, context)."""
    import function_app

    function = next(f for f in functions_of(function_app.app) if f.get_function_name() == "mcp")
    trigger = function.get_trigger()
    handler = function.get_user_function()
    assert trigger.route == "mcp"
    assert sorted(http_methods(trigger)) == ["DELETE", "GET", "OPTIONS", "PATCH", "POST", "PUT"]
    assert inspect.iscoroutinefunction(handler)
    assert list(inspect.signature(handler).parameters) == ["req", "context"]


def test_importing_function_app_builds_nothing() -> None:
    """Importing function_app reads no settings and builds neither the runtime nor the MCP app."""
    code = (
        "import function_app\n"
        "from memory_core import composition\n"
        "assert not composition.is_built()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env["MEMORY_STORE"] = "not-a-store"  # would fail if anything read the settings
    completed = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


async def test_initialize_and_tool_call_through_the_handler(endpoint_for: Any) -> None:
    """initialize then tools/call, each a separate HttpRequest, answer JSON-RPC results as JSON."""
    endpoint = endpoint_for()
    initialized = _result(await endpoint(_request(INITIALIZE), None))
    append = _tool_call("append_memory", {"scope": "user", "memory": "- glue"})
    appended = _result(await endpoint(_request(append), None))
    read = _result(await endpoint(_request(_tool_call("get_memory", {"scope": "user"})), None))
    assert initialized["serverInfo"]["name"] == "memory-core"
    assert appended["isError"] is False and appended["structuredContent"]["upn"] == "glue@contoso.com"
    assert "- glue" in read["content"][0]["text"]


async def test_the_process_endpoint_refuses_a_tool_call_while_the_processs_count_of_abandoned_calls_is_full(
    make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``composition.mcp_endpoint()``'s front checks the process's count (``composition.abandoned_calls``), the one
    its backends join: while it is full a tools/call answers 503 before it starts a thread, and a ping still passes."""
    counted = AbandonedCalls()
    monkeypatch.setattr(composition, "_process", composition._Process(runtime=make_runtime(), abandoned=counted))
    endpoint = composition.mcp_endpoint()
    try:
        before = await endpoint(_request(_tool_call("get_memory", {"scope": "user"})), None)
        counted.limit = 0  # full with no call abandoned
        refused = await endpoint(_request(_tool_call("get_memory", {"scope": "user"}, request_id=2)), None)
        ping = await endpoint(_request({"jsonrpc": "2.0", "id": 3, "method": "ping"}), None)
    finally:
        await endpoint.aclose()
    assert _result(before)["isError"] is False and _result(ping) == {}
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
    assert "have not returned yet" in json.loads(refused.get_body())["error"]["message"]


async def test_lifespan_starts_once_for_concurrent_and_later_requests(endpoint_for: Any) -> None:
    """Many first requests at once, then more, start the SDK's lifespan exactly once."""
    endpoint = endpoint_for()
    responses: list[func.HttpResponse] = []

    async def one(i: int) -> None:
        responses.append(await endpoint(_request(_tool_call("get_memory", {"scope": "user"}, i)), None))

    async with anyio.create_task_group() as group:
        for i in range(10):
            group.start_soon(one, i)
    await one(99)
    assert {r.status_code for r in responses} == {200}
    assert endpoint.startups == 1


async def test_get_through_the_handler_answers_405_at_once(endpoint_for: Any) -> None:
    """A GET asking for an event stream answers 405 through the endpoint (its request through the bridge, the
    app's lifespan under the real AsgiMiddleware), without hanging."""
    endpoint = endpoint_for()
    with anyio.fail_after(5):
        response = await endpoint(_request(None, method="GET", accept="text/event-stream"), None)
    assert response.status_code == 405


async def test_deployed_host_name_is_accepted(endpoint_for: Any) -> None:
    """With WEBSITE_HOSTNAME set, a request for that host name is served."""
    endpoint = endpoint_for(website_hostname="memory-core.azurewebsites.net")
    response = await endpoint(_request(INITIALIZE, host="memory-core.azurewebsites.net"), None)
    assert response.status_code == 200


async def test_custom_domain_from_setting_is_accepted(endpoint_for: Any) -> None:
    """A host listed in MEMORY_MCP_ALLOWED_HOSTS is served beside WEBSITE_HOSTNAME."""
    endpoint = endpoint_for(
        website_hostname="memory-core.azurewebsites.net", memory_mcp_allowed_hosts=("memory.contoso.com",)
    )
    assert (await endpoint(_request(INITIALIZE, host="memory.contoso.com"), None)).status_code == 200


async def test_deployed_app_refuses_localhost(endpoint_for: Any) -> None:
    """Once deployed (WEBSITE_HOSTNAME set), Host localhost answers 421."""
    endpoint = endpoint_for(website_hostname="memory-core.azurewebsites.net")
    assert (await endpoint(_request(INITIALIZE, host="localhost:7071"), None)).status_code == 421


NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def test_a_deployed_name_in_upper_case_is_served_by_the_front_and_the_sdk(endpoint_for: Any) -> None:
    """The endpoint without the edge in front: a request (the front answers) and a notification (the SDK's own app
    answers, after its DNS-rebinding check) with Host and Origin in another case than WEBSITE_HOSTNAME's."""
    endpoint = endpoint_for(website_hostname="memory-core.azurewebsites.net")
    sent = {"host": "MEMORY-CORE.AzureWebsites.NET", "origin": "HTTPS://Memory-Core.azurewebsites.net"}
    assert (await endpoint(_request(INITIALIZE, **sent), None)).status_code == 200
    assert (await endpoint(_request(NOTIFICATION, **sent), None)).status_code == 202


async def test_a_request_without_a_host_header_is_served_as_its_url_names_it(endpoint_for: Any) -> None:
    """The edge reads the URL's authority when there is no Host; the SDK, which refuses a request without one, is
    given it."""
    endpoint = endpoint_for()
    request = _request(NOTIFICATION)
    without_host = func.HttpRequest(method="POST", url=URL, body=request.get_body(),
                                    headers={k: v for k, v in request.headers.items() if k != "host"})
    assert (await endpoint(without_host, None)).status_code == 202


@pytest.mark.parametrize(("sent", "status"), [
    ({"host": "localhost.:7071"}, 421), ({"host": "LOCALHOST.evil.example"}, 421),
    ({"origin": "http://LOCALHOST.evil.example"}, 403),
])
async def test_a_host_or_origin_the_edge_refuses_is_a_json_rpc_error(endpoint_for: Any, sent: dict[str, str],
                                                                     status: int) -> None:
    """Refused by the edge's rule with its status and message, as JSON-RPC (never the SDK's plain text)."""
    response = await endpoint_for()(_request(NOTIFICATION, **sent), None)
    assert response.status_code == status
    error = json.loads(response.get_body())["error"]
    assert error["code"] == -32600 and ("Host" in error["message"] or "Origin" in error["message"])


async def test_build_failure_answers_500_with_an_incident_and_is_retried(
    make_runtime: Callable[..., Runtime], caplog: pytest.LogCaptureFixture
) -> None:
    """A failure to build answers 500 with a JSON-RPC internal error naming an incident, is logged, and is retried."""
    attempts: list[int] = []

    def failing() -> Runtime:
        attempts.append(1)
        raise ConfigurationError("invalid configuration: SECRET_SETTING is wrong")

    endpoint = FunctionsMcpEndpoint(failing)
    with caplog.at_level(logging.ERROR, logger="memory_core"):
        first = await endpoint(_request(INITIALIZE), None)
        await endpoint(_request(INITIALIZE), None)
    document = json.loads(first.get_body())
    error = document["error"]
    assert first.status_code == 500
    assert document["jsonrpc"] == "2.0" and document["id"] is None and error["code"] == -32603
    assert "SECRET_SETTING" not in error["message"] and "incident" in error["message"]
    assert "SECRET_SETTING" in caplog.text
    assert len(attempts) == 2 and not endpoint.is_built


async def test_clear_under_operator_approval_answers_the_pending_request(endpoint_for: Any) -> None:
    """With deletions needing operator approval, clear_memory answers REST's pending_approval JSON and hides memory."""
    endpoint = endpoint_for(memory_deletion_mode="operator_approval")
    _result(await endpoint(_request(_tool_call("append_memory", {"scope": "user", "memory": "- hide me"})), None))
    cleared = _result(await endpoint(_request(_tool_call("clear_memory", {"scope": "user", "confirm": True})), None))
    read = _result(await endpoint(_request(_tool_call("get_memory", {"scope": "user"})), None))
    assert cleared["isError"] is False
    assert cleared["structuredContent"]["status"] == "pending_approval"
    assert cleared["structuredContent"]["request_id"]
    assert json.loads(cleared["content"][0]["text"]) == cleared["structuredContent"]
    assert read["content"][0]["text"] == ""


async def test_storage_failure_is_a_tool_error_with_the_store_message(endpoint_for: Any, tmp_path: Path) -> None:
    """A store that cannot serve the read answers isError with the Unavailable message REST also answers (503)."""
    endpoint = endpoint_for()
    _result(await endpoint(_request(_tool_call("append_memory", {"scope": "user", "memory": "- x"})), None))
    db = tmp_path / "memory.sqlite3"
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if path.exists():
            path.write_bytes(b"this is not a database" * 512)
    result = _result(await endpoint(_request(_tool_call("get_memory", {"scope": "user"})), None))
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "unavailable"
    assert result["content"][0]["text"].startswith("the SQLite store could not complete the read")


async def test_unreachable_coreapi_is_a_tool_error(endpoint_for: Any) -> None:
    """With MEMORY_COREAPI_BASE_URL pointing nowhere, a tool answers isError "the CoreAPI cannot be reached"."""
    endpoint = endpoint_for(
        memory_coreapi_base_url=f"http://127.0.0.1:{free_port()}/api", memory_coreapi_key="coreapi-key"
    )
    result = _result(await endpoint(_request(_tool_call("get_memory", {"scope": "user"})), None))
    assert result["isError"] is True
    assert result["content"][0]["text"] == "the CoreAPI cannot be reached; retry later"


def test_unexpected_failure_is_a_generic_error_with_an_incident(caplog: pytest.LogCaptureFixture) -> None:
    """An exception outside the error family answers a generic message with an incident id; details go to the log."""
    with caplog.at_level(logging.ERROR, logger="memory_core"):
        result = result_for_error(RuntimeError("secret detail /etc/passwd"))
    message = result.content[0].text  # type: ignore[union-attr]
    incident = message.split("incident ")[1].split()[0]
    assert result.is_error
    assert message == f"internal error; the operator can find incident {incident} in the service log"
    assert "secret" not in message
    assert incident in caplog.text and "secret detail" in caplog.text
