"""``python -m memory_core serve``: settings, refusals and timers, as a real process."""

from __future__ import annotations

import os
import re
import select
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

import function_app
from memory_core.domain.errors import ConfigurationError
from memory_core.local.host import FunctionHost, RouteIndex, compile_route, http_routes
from memory_core.local.timers import TimerFunction, resolve_schedule
from tests.support.later_release import put_unreadable_request_beside
from tests.support.local_server import (
    OPERATOR_KEY,
    PROJECT_ROOT,
    RunningServer,
    free_port,
    read_until_closed,
    running_server,
    sweep_schedule_outside_the_session,
)


def _serve(args: list[str], env: dict[str, str], timeout: float = 20) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))}
    return subprocess.run(
        [sys.executable, "-m", "memory_core", "serve", *args], cwd=PROJECT_ROOT, env={**clean, **env},
        capture_output=True, text=True, timeout=timeout,
    )


def test_refuses_a_non_loopback_address_with_only_sample_keys(tmp_path: Path) -> None:
    """With the sample keys of local.settings.sample.json, serving on 0.0.0.0 is refused with exit code 2."""
    result = _serve(["--host", "0.0.0.0", "--port", str(free_port())], {"MEMORY_SQLITE_PATH": str(tmp_path / "m.db")})
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0" in result.stderr


def test_invalid_setting_stops_the_start_naming_it(tmp_path: Path) -> None:
    """A bad MEMORY_MAX_WRITE_BYTES stops the start with a message naming the setting."""
    result = _serve(["--port", str(free_port())], {"MEMORY_MAX_WRITE_BYTES": "lots"})
    assert result.returncode == 2
    assert "MEMORY_MAX_WRITE_BYTES" in result.stderr


def test_invalid_deletion_mode_stops_the_start(tmp_path: Path) -> None:
    """MEMORY_DELETION_MODE accepts only operator_approval or immediate."""
    result = _serve(["--port", str(free_port())], {"MEMORY_DELETION_MODE": "whenever"})
    assert result.returncode == 2 and "MEMORY_DELETION_MODE" in result.stderr


def test_start_prints_urls_and_the_sample_key(tmp_path: Path) -> None:
    """On start the server prints its base URL, its routes, its SQLite file and the sample key to use."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_core", "serve", "--port", str(port)], cwd=PROJECT_ROOT,
        env={**clean, "MEMORY_SQLITE_PATH": str(tmp_path / "m.db"), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        while len(lines) < 80 and not any("sample user key" in line for line in lines):
            lines.append(process.stdout.readline())
    finally:
        process.terminate()
        process.wait(timeout=10)
    banner = "".join(lines)
    assert f"http://127.0.0.1:{port}/api/" in banner
    assert "/api/instances/(?P<instanceId>" not in banner, "routes are shown as templates, not regexes"
    assert "X-API-KEY): local-dev-key" in banner
    assert f"SQLite file: {(tmp_path / 'm.db').resolve()}" in banner  # where memory is, absolute


def test_timer_functions_run_on_their_schedule(tmp_path: Path) -> None:
    """The sweep timer runs by itself: an approved request is executed without calling the sweep endpoint."""
    env = {"MEMORY_SWEEP_SCHEDULE": "* * * * * *"}
    with running_server(tmp_path, env) as server, server.client() as http:
        http.post("/instances/t/memory/append", json={"scope": "user", "content_markdown": "- x"}).raise_for_status()
        request_id = http.post("/instances/t/memory/clear", json={"scope": "user", "confirm": True}).json()["request_id"]
        op = {"X-API-KEY": OPERATOR_KEY}
        httpx.post(f"{server.api}/instances/t/operator/deletions/{request_id}/approve", headers=op).raise_for_status()
        deadline = time.monotonic() + 10
        status = "approved"
        while status != "executed" and time.monotonic() < deadline:
            time.sleep(0.3)
            listed = httpx.get(f"{server.api}/instances/t/operator/deletions", headers=op).json()["requests"]
            status = listed[0]["status"]
    assert status == "executed"


def test_the_timers_sweep_logs_the_requests_it_left_and_why(tmp_path: Path) -> None:
    """The scheduled sweep's one log line names an approved request it left, with its kind and reason (WARNING),
    as well as how many it executed."""
    with running_server(tmp_path, {"MEMORY_SWEEP_SCHEDULE": "* * * * * *"}) as server:
        put_unreadable_request_beside(server, "t")
        wanted = ("WARNING memory_core.sweep: sweep executed 0 deletion request(s), left 1 for a later sweep: "
                  "from-a-later-release (unknown kind: unreadable)")
        deadline = time.monotonic() + 10
        while not any(wanted in log.read_text() for log in tmp_path.glob("server-*.log")):
            assert time.monotonic() < deadline, "no sweep line naming the request left"
            time.sleep(0.3)


def test_the_shared_test_servers_sweep_timer_stays_away_for_months(sqlite_server: RunningServer) -> None:
    """The session's server runs its sweep timer (every instance) on a schedule whose next run is months away, so it
    never executes a request a test approved before the test's own sweep or listing; on the default schedule it
    once did (test_sweep_refuses_a_step_out_of_range)."""
    banner = "".join(log.read_text() for log in Path(sqlite_server.env["MEMORY_SQLITE_PATH"]).parent.glob("server-*"))
    served = re.search(r"timer sweep_timer on '([^']+)'", banner)
    assert served is not None, banner
    now = datetime.now(UTC)
    assert TimerFunction("sweep_timer", served.group(1), print, "timer").next_fire(now) - now > timedelta(days=140)


@pytest.mark.parametrize("month", range(1, 13))
def test_the_test_servers_schedule_is_months_away_from_any_day(month: int) -> None:
    """From the first second to the last of any month, the schedule running_server gives the sweep timer fires no
    sooner than five months (at least 140 days) later."""
    first = datetime(2027, month, 1, tzinfo=UTC)
    last = (first + timedelta(days=32)).replace(day=1) - timedelta(seconds=1)
    for now in (first, last):
        timer = TimerFunction("sweep_timer", sweep_schedule_outside_the_session(now), print, "timer")
        assert timer.next_fire(now) - now > timedelta(days=140), now


def test_route_templates_match_like_the_functions_host() -> None:
    """{param} matches one segment; the prefix is required; a trailing slash is tolerated."""
    pattern = compile_route("instances/{instanceId}/memory", "api")
    assert pattern.match("/api/instances/abc/memory").groupdict() == {"instanceId": "abc"}  # type: ignore[union-attr]
    assert pattern.match("/api/instances/abc/memory/")
    assert not pattern.match("/instances/abc/memory")
    assert not pattern.match("/api/instances/a/b/memory")


def test_a_route_matches_the_whole_path_not_one_ending_in_a_newline() -> None:
    """A regex's $ also matches before a final newline; a route must not."""
    for template in ("mcp", "instances/{instanceId}/memory", "console/{*path}"):
        pattern = compile_route(template, "api")
        path = "/api/" + template.replace("{instanceId}", "a").replace("{*path}", "x")
        assert pattern.match(path) and pattern.match(path + "/")
        assert not pattern.match(path + "\n") and not pattern.match(path + "/\n")


@pytest.mark.parametrize("path", ["/api/mcp%0A", "/api/openapi.json%0A", "/api/instances/local/memory%0A"])
def test_serve_does_not_serve_a_path_with_a_trailing_encoded_newline(sqlite_server: RunningServer, path: str) -> None:
    """Real sockets: ``/api/mcp%0A`` is not ``/api/mcp`` (404, the REST error body)."""
    with sqlite_server.client(Accept="application/json, text/event-stream") as http:
        response = http.post(sqlite_server.base_url + path, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("prefix", ["api", "", "v1/memory"])
def test_the_route_index_finds_what_trying_every_route_finds_in_the_same_order(prefix: str) -> None:
    """Every route's own path, other spellings the patterns accept (case, a long s or a Kelvin sign, which the
    case-insensitive match takes for s and k, a dotless i), a trailing slash, and paths no route serves."""
    routes = http_routes(function_app.app, prefix)
    index = RouteIndex(routes, prefix)
    base = f"/{prefix}" if prefix else ""
    paths = {_example_path(route.template) for route in routes}
    paths |= {p.upper() for p in paths} | {p + "/" for p in paths}
    paths |= {p.replace("s", "\u017f").replace("k", "\u212a").replace("i", "\u0131") for p in paths}
    paths |= {base, f"{base}/", f"{base}/nothing", "/elsewhere/mcp", f"{base}/mcp/x", f"{base}//mcp", ""}
    for path in sorted(paths):
        everyone = [(r.name, m.groupdict()) for r in routes if (m := r.pattern.match(path))]
        assert [(r.name, m.groupdict()) for r, m in index.matches(path)] == everyone, path
    assert [r.name for r, _ in index.matches(f"{base}/MCP")] == ["mcp"]  # the index does find routes


def test_schedule_settings_are_resolved_and_checked() -> None:
    """%SETTING% schedules come from the environment and must have six NCRONTAB fields."""
    assert resolve_schedule("%S%", {"S": "0 */5 * * * *"}) == "0 */5 * * * *"
    with pytest.raises(ConfigurationError):
        resolve_schedule("%S%", {})
    with pytest.raises(ConfigurationError):
        resolve_schedule("*/5 * * * *", {})


def test_port_zero_listens_on_a_free_port_named_in_the_first_line(tmp_path: Path) -> None:
    """--port 0: the first line names the port serve holds, and that port answers before the line could be read."""
    with running_server(tmp_path) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        assert port != 0
        assert httpx.get(f"{server.api}/openapi.json", timeout=10).status_code == 200


def test_a_port_another_process_holds_stops_the_start_naming_it(tmp_path: Path) -> None:
    """A taken port exits 2 with the address on stderr, before any line claims to serve on it."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = _serve(["--port", str(port)], {"MEMORY_SQLITE_PATH": str(tmp_path / "m.db")})
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "serving function_app.py" not in result.stdout


def test_a_keep_alive_clients_small_answers_are_not_held_back_by_nagles_algorithm(tmp_path: Path) -> None:
    """Sequential requests on one keep-alive connection are answered in a few ms, not after a delayed ACK.

    The listening socket is bound by ``serve`` itself (``bound_listener``); asyncio sets TCP_NODELAY
    only on connections whose listener was made with protocol IPPROTO_TCP. Without it an answer
    written in two sends waits for the client's delayed ACK: about 40 ms on Linux (a benchmark
    measured 44 ms per MCP call against 2.2). Real sockets, a real ``serve``; the median of 30 reads
    must stay under 20 ms, far from 40 and far above what a loaded 2-core machine needs.
    """
    with running_server(tmp_path) as server, server.client() as http:
        http.post("/instances/t/memory/append", json={"scope": "user", "content_markdown": "- x"}).raise_for_status()
        times = []
        for _ in range(30):
            started = time.perf_counter()
            http.get("/instances/t/memory", params={"scope": "user"}).raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    assert statistics.median(times) < 20, sorted(times)


def _send_until_answered(sock: socket.socket, head: bytes, total: int) -> None:
    """Send ``head`` then filler header bytes, 8 KiB at a time, until ``total`` bytes or the server answers."""
    sock.sendall(head)
    sent = len(head)
    while sent < total:
        if select.select([sock], [], [], 0.02)[0]:
            return  # answered: stop sending, so its answer is not lost to a reset
        try:
            sock.sendall(b"a" * 8192)
        except OSError:
            return
        sent += 8192


def test_a_request_head_past_the_limit_is_refused_with_431_before_it_is_all_read(tmp_path: Path) -> None:
    """An unfinished header of 1 MiB, sent without a key, is answered 431 and the connection closed.

    httptools keeps an unfinished header in memory however long it grows: 64 MiB of one header made
    ``serve`` grow by about 100 MiB. ``serve`` counts each head's bytes as they arrive
    (``memory_core.local.protocol``) and refuses past 64 KiB; the server still answers afterwards.
    """
    with running_server(tmp_path) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            _send_until_answered(sock, b"GET /api/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk: ", 1 << 20)
            answer = read_until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b'"code":"request_header_fields_too_large"' in answer
        with socket.create_connection(("127.0.0.1", port)) as sock:
            _send_until_answered(sock, b"GET /api/openapi.json?" + b"q" * 100_000, 1 << 20)
            assert read_until_closed(sock).startswith(b"HTTP/1.1 431 "), "a URL counts toward the same limit"
        assert httpx.get(f"{server.api}/openapi.json", timeout=10).status_code == 200


def test_heads_within_the_limit_are_served_also_when_pipelined_past_it(tmp_path: Path) -> None:
    """A 60 KB header is read; 40 pipelined requests of 2 KB heads in one write (80 KB) are all answered."""
    with running_server(tmp_path) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        big = b"GET /api/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 60_000 + b"\r\n\r\n"
        one = b"GET /api/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"p" * 2000 + b"\r\n\r\n"
        last = one.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(big + one * 39 + last)
            answer = read_until_closed(sock)
    assert answer.count(b"HTTP/1.1 200 OK") == 41, answer.count(b"HTTP/1.1 ")
    assert b"HTTP/1.1 431" not in answer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("methods"), {"MEMORY_MCP_ALLOWED_HOSTS": "", "WEBSITE_HOSTNAME": ""}) as server:
        yield server


@pytest.mark.parametrize("method", ["HEAD", "TRACE", "PROPFIND"])
def test_a_method_mcp_does_not_serve_answers_405_naming_post_as_the_endpoint_does(
    served: RunningServer, method: str
) -> None:
    """HEAD, TRACE and any other method on /api/mcp answer 405 with Allow: POST, as the endpoint's own 405 for GET
    does (docs/mcp.md); the host's 405 named GET, DELETE, PUT and PATCH, which all answer 405. The body is the
    endpoint's too, a JSON-RPC error (-32600, id null; the REST error body before), the only error body an MCP
    client reads; HEAD's answer has none (its Content-Length is the body's that GET-like methods get)."""
    response = httpx.request(method, f"{served.api}/mcp", timeout=10)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.headers["content-type"].startswith("application/json")
    assert httpx.get(f"{served.api}/mcp", timeout=10).headers["allow"] == "POST"
    if method == "HEAD":
        assert response.content == b"" and int(response.headers["content-length"]) > 0
        return
    document = response.json()
    assert (document["jsonrpc"], document["id"], document["error"]["code"]) == ("2.0", None, -32600)
    assert document["error"]["message"] == f"{method} is not allowed on /api/mcp"


def test_a_rest_route_keeps_the_rest_405_body(served: RunningServer) -> None:
    """A method a REST route does not serve answers the REST error body, as before."""
    response = httpx.request("TRACE", f"{served.api}/instances/x/memory", timeout=10)
    assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"
    assert response.json() == {"error": {"code": "method_not_allowed",
                                         "message": "TRACE is not allowed on /api/instances/x/memory"}}


def _example_path(template: str) -> str:
    """A concrete path for a route template: each parameter filled in."""
    return re.sub(r"{[^}]*}", "x", template)


def test_every_405_names_only_methods_its_route_answers(served: RunningServer) -> None:
    """For every route, a method it does not serve answers 405, and no method its Allow names answers 405."""
    paths = sorted({_example_path(route.template) for route in FunctionHost(function_app.app).routes})
    with httpx.Client(base_url=served.base_url, timeout=10) as http:
        for path in paths:
            refused = http.request("TRACE", path)
            assert refused.status_code == 405, path
            allowed = [m.strip() for m in refused.headers["allow"].split(",")]
            for method in allowed:
                assert http.request(method, path).status_code != 405, (path, method, allowed)
