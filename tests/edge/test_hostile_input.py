"""The issue #13 reproducers, against `serve` on the embedded store: each answers a clear 4xx,
and nothing is stored or read that should not be."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, identity

DEEP = ("[" * 1000 + "]" * 1000).encode()
SURROGATE = b'{"scope": "user", "content_markdown": "- \\ud800"}'

# The seven routes that take a JSON body: (method, path after /instances/{id}/, operator?)
JSON_ROUTES = [
    ("POST", "memory/append", False),
    ("POST", "memory/clear", False),
    ("POST", "memory/import", False),
    ("POST", "operator/deletions/req-1/reject", True),
    ("POST", "operator/purges", True),
    ("PUT", "operator/agent-settings?agentObjectId=a1", True),
    ("POST", "operator/legacy-imports", True),
]


def _headers(operator: bool, upn: str = "alex@contoso.com") -> dict[str, str]:
    if operator:
        return {"X-API-KEY": OPERATOR_KEY}
    return {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(upn)}


def _memory(server: RunningServer, instance_id: str, upn: str, **params: str) -> str:
    with server.client(upn) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user", **params})
    response.raise_for_status()
    return str(response.json()["content_markdown"])


# -- 1. reserved owners ----------------------------------------------------------


@pytest.mark.parametrize("upn", ["~shared", "~SHARED ", "~system", "~deletions", "~settings", "shared", "", "a@", "@b"])
def test_an_internal_owner_or_malformed_upn_is_never_a_caller(sqlite_server: RunningServer, instance_id: str,
                                                             upn: str) -> None:
    """X-USER-IDENTITY naming an internal partition (or no name@domain at all) is refused with 401."""
    with sqlite_server.client(None, X_USER_IDENTITY=json.dumps({"upn": upn})) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_reserved_owner_cannot_read_or_clear_the_team_partition(immediate_server: RunningServer,
                                                                instance_id: str) -> None:
    """The reproducer: "~shared" with a valid key neither reads the team entries nor clears them (immediate mode)."""
    with immediate_server.client("alex@contoso.com") as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- team fact", "share": "team"}).raise_for_status()
    forged = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": '{"upn": "~shared"}'}
    with httpx.Client(base_url=immediate_server.api, headers=forged) as http:
        read = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
        cleared = http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user", "confirm": True})
    assert (read.status_code, cleared.status_code) == (401, 401)
    assert "team fact" not in read.text
    with immediate_server.client("alex@contoso.com") as http:
        entries = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
    assert any("team fact" in e["content_markdown"] for e in entries)


def test_a_look_alike_upn_is_its_own_user(sqlite_server: RunningServer, instance_id: str) -> None:
    """"~shared@x" is a well-formed UPN: it gets its own empty partition, never the team one."""
    with sqlite_server.client("alex@contoso.com") as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- alex team fact", "share": "team"}).raise_for_status()
    assert _memory(sqlite_server, instance_id, "~shared@x") == ""


def test_a_kelvin_sign_never_reads_the_memory_of_the_k_it_lower_cases_to(sqlite_server: RunningServer,
                                                                          instance_id: str) -> None:
    """"\u212aate@example.com" lower-cases to kate@example.com in Python: it is refused with 401 over REST, and
    kate's memory is not read."""
    with sqlite_server.client("kate@example.com") as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- kate's own fact"}).raise_for_status()
    with sqlite_server.client(None, X_USER_IDENTITY=json.dumps({"upn": "\u212aate@example.com"})) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401 and "kate's own fact" not in response.text


@pytest.mark.parametrize(("agent", "named"), [("trusted-\u202etob-lizziw", "U+202E"), ("z\u200b\u200b\u200bz", "U+200B"),
                                              ("a\u2066b", "U+2066"), ("x\u3164y", "U+3164"), ("t\U000e0041ag", "U+E0041")])
def test_an_agent_id_that_would_show_as_another_is_refused(sqlite_server: RunningServer, instance_id: str,
                                                            agent: str, named: str) -> None:
    """An agent id is shown in the console's scope list, headings and the operator's deletions: one holding an
    override, zero-width or tag characters would show as another ("trusted-wizzil-bot"). 400 at the write, on the
    query of a read, and nothing stored; visible non-ASCII ids are kept."""
    with sqlite_server.client("alex@contoso.com") as http:
        write = http.post(f"/instances/{instance_id}/memory/append",
                          json={"scope": "agent", "agent_object_id": agent, "content_markdown": "- a fact"})
        read = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": agent})
        kept = http.post(f"/instances/{instance_id}/memory/append",
                         json={"scope": "agent", "agent_object_id": "agent ü 日本", "content_markdown": "- a fact"})
        agents = http.get(f"/instances/{instance_id}/memory/agents").json()
    assert (write.status_code, read.status_code, kept.status_code) == (400, 400, 200)
    assert named in write.text
    assert [a["agent_object_id"] for a in agents["agents"]] == ["agent ü 日本"]


def test_a_tag_holding_a_comma_is_refused_as_no_search_could_name_it(sqlite_server: RunningServer,
                                                                      instance_id: str) -> None:
    """A search names its tags as one comma-separated parameter: "work,home" would be stored and never found."""
    with sqlite_server.client("alex@contoso.com") as http:
        refused = http.post(f"/instances/{instance_id}/memory/append",
                            json={"scope": "user", "content_markdown": "- alpha", "tags": ["work,home"]})
        kept = http.post(f"/instances/{instance_id}/memory/append",
                         json={"scope": "user", "content_markdown": "- alpha", "tags": ["work", "home"]})
        found = http.get(f"/instances/{instance_id}/memory/search",
                         params={"q": "alpha", "scope": "user", "tags": "work,home"})
    assert (refused.status_code, kept.status_code) == (400, 200)
    assert len(found.json()["hits"]) == 1


@pytest.mark.parametrize("upn", ["~shared", "~deletions", "not-a-upn"])
def test_operators_cannot_name_an_internal_partition(sqlite_server: RunningServer, instance_id: str,
                                                      upn: str) -> None:
    """Purge and audit take a user's UPN under the same grammar: internal owners answer 400 invalid_upn. The one
    exception is the audit read of exactly ``~deletions`` (the instance's trail of dismissals naming no user)."""
    with httpx.Client(base_url=sqlite_server.api, headers={"X-API-KEY": OPERATOR_KEY}) as http:
        purge = http.post(f"/instances/{instance_id}/operator/purges", json={"upn": upn})
        audit = http.get(f"/instances/{instance_id}/operator/audit", params={"upn": upn})
        pending = http.get(f"/instances/{instance_id}/operator/deletions").json()["requests"]
    assert (purge.status_code, purge.json()["error"]["code"]) == (400, "invalid_upn")
    if upn == "~deletions":
        assert (audit.status_code, audit.json()["events"]) == (200, [])
    else:
        assert (audit.status_code, audit.json()["error"]["code"]) == (400, "invalid_upn")
    assert pending == []


# -- 2. browsers: Host, Origin, content type -------------------------------------------


def test_a_foreign_host_is_refused_dns_rebinding(sqlite_server: RunningServer, instance_id: str) -> None:
    """`curl -H 'Host: evil.com' $API/instances/local/memory?scope=user` answers 421, not the memory."""
    with sqlite_server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- private fact"}).raise_for_status()
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"},
                            headers={"Host": "evil.com"})
    assert response.status_code == 421
    assert response.json()["error"]["code"] == "host_not_allowed"
    assert "private fact" not in response.text


def test_a_foreign_host_is_refused_before_authentication(sqlite_server: RunningServer) -> None:
    """Even without credentials, a foreign Host learns nothing but 421."""
    response = httpx.get(f"{sqlite_server.api}/instances/i1/memory?scope=user", headers={"Host": "evil.com:7071"})
    assert response.status_code == 421


@pytest.mark.parametrize("host", ["localhost:abc", "localhost:99999", "localhost:0", "localhost:-1", "[::1]:abc",
                                  "localhost:80@evil.example", "[::1]x", "localhost/evil", "localhost:"])
def test_a_host_with_a_bad_port_userinfo_or_trailing_text_is_refused_alike_on_rest_and_mcp(
        sqlite_server: RunningServer, instance_id: str, host: str) -> None:
    """The app's own name with anything but a port of 1-65535 after it answers 421 on every route, before a
    reader (the MCP bridge's URL parsing, the OAuth metadata URL built from the Host) sees it."""
    with sqlite_server.client(Host=host) as http:
        rest = http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
        mcp = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"Accept": "application/json, text/event-stream"})
    assert (rest.status_code, mcp.status_code) == (421, 421), (rest.text, mcp.text)
    assert rest.json()["error"]["code"] == "host_not_allowed"
    assert mcp.json()["error"]["code"] == -32600
    assert _memory(sqlite_server, instance_id, "alex@contoso.com") == ""


def test_cross_site_text_plain_form_post_stores_nothing(sqlite_server: RunningServer, instance_id: str) -> None:
    """A form POST with Content-Type: text/plain is refused (415), and from a foreign Origin (403)."""
    body = json.dumps({"scope": "user", "content_markdown": "- planted"})
    with sqlite_server.client() as http:
        plain = http.post(f"/instances/{instance_id}/memory/append", content=body,
                          headers={"Content-Type": "text/plain"})
        cross = http.post(f"/instances/{instance_id}/memory/append", content=body,
                          headers={"Content-Type": "text/plain", "Origin": "https://evil.example"})
        cross_json = http.post(f"/instances/{instance_id}/memory/append", content=body,
                               headers={"Content-Type": "application/json", "Origin": "https://evil.example"})
    assert plain.status_code == 415
    assert plain.json()["error"]["code"] == "unsupported_media_type"
    assert cross.status_code == cross_json.status_code == 403
    assert cross_json.json()["error"]["code"] == "origin_not_allowed"
    assert _memory(sqlite_server, instance_id, "alex@contoso.com") == ""


def test_same_origin_browser_calls_are_served(sqlite_server: RunningServer, instance_id: str) -> None:
    """A page the app serves itself (Origin = the app's own loopback name) may call the API."""
    port = sqlite_server.base_url.rsplit(":", 1)[1]
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        with sqlite_server.client() as http:
            response = http.post(f"/instances/{instance_id}/memory/append", headers={"Origin": origin},
                                 json={"scope": "user", "content_markdown": "- from the console"})
        assert response.status_code == 200, response.text
    document = httpx.get(f"{sqlite_server.api}/openapi.json", headers={"Origin": f"http://127.0.0.1:{port}"})
    assert document.status_code == 200


@pytest.mark.parametrize(("tail", "status"), [
    (b"\xa0", b"403"), ("\u00a0".encode(), b"403"), ("\u3000".encode(), b"403"), (b"\x85", b"403"),
    (b"\x0b", b"400"), (b"\x1f", b"400"),
], ids=["nbsp-latin1", "nbsp-utf8", "ideographic-space-utf8", "nel-latin1", "vt", "unit-separator"])
def test_the_apps_own_origin_with_whitespace_str_strip_would_drop_after_it_is_refused_on_rest_and_mcp(
        sqlite_server: RunningServer, instance_id: str, tail: bytes, status: bytes) -> None:
    """Only a header's spaces and tabs are dropped around an Origin: ``http://127.0.0.1:PORT`` followed by a
    no-break space answers 403 on every route, and nothing is stored; a control character (a header value may
    not hold one) is already refused by the HTTP server's parser (400). Raw requests, as httpx refuses to send a
    control character in a header."""
    host = sqlite_server.base_url.removeprefix("http://").encode()
    credentials = "".join(f"{name}: {value}\r\n" for name, value in _headers(operator=False).items()).encode()
    answers = []
    for path, body in ((f"/api/instances/{instance_id}/memory/append", {"scope": "user", "content_markdown": "- x"}),
                       ("/api/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"})):
        content = json.dumps(body).encode()
        head = (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\nOrigin: http://" + host + tail
                + b"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                + credentials + b"Content-Length: " + str(len(content)).encode() + b"\r\nConnection: close\r\n\r\n")
        answers.append(_raw_request(sqlite_server, head + content).split(b"\r\n", 1)[0])
    assert [answer.split(b" ")[1] for answer in answers] == [status, status], answers
    assert _memory(sqlite_server, instance_id, "alex@contoso.com") == ""


def test_json_with_a_charset_or_a_json_suffix_is_json(sqlite_server: RunningServer, instance_id: str) -> None:
    """application/json; charset=utf-8 is JSON."""
    with sqlite_server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append",
                             content=json.dumps({"scope": "user", "content_markdown": "- ok"}),
                             headers={"Content-Type": "application/json; charset=utf-8"})
    assert response.status_code == 200


# -- 3. bodies: declared length first, before authentication -------------------------


def _raw_request(server: RunningServer, head: bytes, body_chunks: Iterator[bytes] | None = None) -> bytes:
    """Send a raw HTTP/1.1 request; stop sending when the server answers or closes. Returns the answer."""
    host, port = server.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head)
        try:
            for chunk in body_chunks or ():
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except (ConnectionResetError, TimeoutError):
            pass
        return answer


def test_declared_oversize_body_is_refused_before_it_is_read(sqlite_server: RunningServer) -> None:
    """An unauthenticated request declaring 30 MB answers 413 from its headers alone: no body is sent at all."""
    head = (b"POST /api/instances/i1/memory/append HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 31457280\r\n\r\n")
    answer = _raw_request(sqlite_server, head)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_oversize_chunked_body_is_refused_while_read(sqlite_server: RunningServer) -> None:
    """A chunked body is cut off at the route's limit with 413, without authentication."""
    head = (b"POST /api/instances/i1/memory/append HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 65536
    chunks = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(480))  # 30 MiB
    answer = _raw_request(sqlite_server, head, chunks)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_declared_oversize_body_is_413_on_the_mcp_endpoint(sqlite_server: RunningServer) -> None:
    """The MCP function has the same edge: 413 from the declared length."""
    head = (b"POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 31457280\r\n\r\n")
    assert _raw_request(sqlite_server, head).startswith(b"HTTP/1.1 413")


# -- 4. malformed JSON: 400, never 500 ---------------------------------------------------


TWICE = b'{"scope": "user", "scope": "agent", "reason": "x", "content_markdown": "- a"}'


@pytest.mark.parametrize(("method", "path", "operator"), JSON_ROUTES, ids=[p for _, p, _ in JSON_ROUTES])
@pytest.mark.parametrize(("body", "why"), [(DEEP, "JSON nests too deeply"),
                                           (TWICE, "a JSON object names the same member twice")],
                         ids=["deep", "member-named-twice"])
def test_json_the_strict_decoder_refuses_is_400_on_every_json_route(
        sqlite_server: RunningServer, instance_id: str, method: str, path: str, operator: bool, body: bytes,
        why: str) -> None:
    """'['*1000 + ']'*1000 (it was a RecursionError 500) and a body naming a member twice (parsers differ on which
    value wins) answer 400 malformed_json, saying why."""
    response = httpx.request(method, f"{sqlite_server.api}/instances/{instance_id}/{path}", content=body,
                             headers={**_headers(operator), "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "malformed_json"
    assert error["message"] == f"request body is not acceptable JSON: {why}"


@pytest.mark.parametrize("route", ["memory/append", "memory/import", "operator/legacy-imports"])
def test_a_lone_surrogate_is_400_and_stores_nothing(sqlite_server: RunningServer, instance_id: str,
                                                    route: str) -> None:
    """"- \\ud800" answers 400 (it was a UnicodeEncodeError 500 on the legacy import)."""
    operator = route.startswith("operator/")
    response = httpx.post(f"{sqlite_server.api}/instances/{instance_id}/{route}", content=SURROGATE,
                          headers={**_headers(operator), "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert "surrogate" in response.json()["error"]["message"]
    with sqlite_server.client() as http:
        entries = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
    assert entries == []


def test_a_surrogate_pair_is_text(sqlite_server: RunningServer, instance_id: str) -> None:
    """A proper escaped pair (an emoji) is accepted and read back."""
    body = b'{"scope": "user", "content_markdown": "- likes \\ud83d\\ude00"}'
    with sqlite_server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append", content=body,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    assert "\U0001f600" in _memory(sqlite_server, instance_id, "alex@contoso.com")


@pytest.mark.parametrize("forged", ['{"upn": "a@b.c", "name": "\\udc00"}',
                                    '{"upn": "alex@contoso.com", "upn": "bob@contoso.com"}'],
                         ids=["lone-surrogate", "upn-named-twice"])
def test_an_identity_header_the_strict_decoder_refuses_is_401(sqlite_server: RunningServer, instance_id: str,
                                                              forged: str) -> None:
    """X-USER-IDENTITY is decoded by the same strict decoder: a lone surrogate, or two upn members (a gateway
    may have checked the other one), is no identity."""
    headers = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": forged}
    response = httpx.get(f"{sqlite_server.api}/instances/{instance_id}/memory?scope=user", headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_an_append_naming_its_content_twice_stores_neither(sqlite_server: RunningServer, instance_id: str) -> None:
    """The reproducer: two content_markdown members stored the last one; now nothing is stored."""
    body = b'{"scope": "user", "content_markdown": "- first", "content_markdown": "- second"}'
    with sqlite_server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append", content=body,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert _memory(sqlite_server, instance_id, "alex@contoso.com") == ""


# -- 5. methods ------------------------------------------------------------------------


def test_head_on_a_get_route_answers_like_get_without_a_body(sqlite_server: RunningServer, instance_id: str) -> None:
    """HEAD runs the GET function: same status and length, no body (it was 405)."""
    with sqlite_server.client() as http:
        get = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
        head = http.head(f"/instances/{instance_id}/memory", params={"scope": "user"})
        unauthenticated = httpx.head(f"{sqlite_server.api}/instances/{instance_id}/memory?scope=user")
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(get.content))
    assert unauthenticated.status_code == 401
    assert httpx.head(f"{sqlite_server.api}/openapi.json").status_code == 200


def test_options_on_mcp_advertises_post_only(sqlite_server: RunningServer) -> None:
    """OPTIONS /api/mcp answers 204 with Allow: POST, OPTIONS (it advertised GET and DELETE)."""
    response = httpx.options(f"{sqlite_server.api}/mcp")
    assert response.status_code == 204
    assert response.headers["allow"] == "POST, OPTIONS"
    assert httpx.options(f"{sqlite_server.api}/mcp", headers={"Origin": "https://evil.example"}).status_code == 403


# -- 6. the OpenAPI findings -----------------------------------------------------------


def test_booleans_are_json_booleans(sqlite_server: RunningServer, instance_id: str) -> None:
    """"auto_append": 0 and "confirm": 1 answer 400: a boolean is true or false."""
    with httpx.Client(base_url=sqlite_server.api, headers={"X-API-KEY": OPERATOR_KEY}) as http:
        settings = http.put(f"/instances/{instance_id}/operator/agent-settings", params={"agentObjectId": "a1"},
                            json={"auto_append": 0})
    with sqlite_server.client() as http:
        clear = http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user", "confirm": 1})
    assert (settings.status_code, clear.status_code) == (400, 400)


def test_integers_in_a_body_are_json_integers(sqlite_server: RunningServer, instance_id: str) -> None:
    """A memory-tool command's "insert_line": "1" or true, or a view_range of strings, answers 400 and changes
    nothing (as MCP's memory tool refuses them); 1 works."""
    files = f"/instances/{instance_id}/memory/files"
    with sqlite_server.client() as http:
        http.post(f"{files}/create", json={"command": "create", "path": "/memories/n.md",
                                           "file_text": "one\ntwo\n"}).raise_for_status()
        refused = [http.post(f"{files}/insert", json={"command": "insert", "path": "/memories/n.md",
                                                      "insert_line": line, "insert_text": "x"})
                   for line in ("1", True, 1.0)]
        view = http.post(f"{files}/view", json={"command": "view", "path": "/memories/n.md", "view_range": ["1", "2"]})
        kept = http.post(f"{files}/view", json={"command": "view", "path": "/memories/n.md"}).json()["result"]
        inserted = http.post(f"{files}/insert", json={"command": "insert", "path": "/memories/n.md",
                                                      "insert_line": 1, "insert_text": "x"})
    assert [r.status_code for r in refused] == [400, 400, 400] and view.status_code == 400
    assert "one" in kept and "two" in kept and "x" not in kept.split("\n", 1)[1], kept
    assert inserted.status_code == 200


def test_the_document_lists_what_the_service_answers(sqlite_server: RunningServer) -> None:
    """202 on clear, 403 on the reads, 400 on the sweep, and the instanceId pattern are documented."""
    paths = httpx.get(f"{sqlite_server.api}/openapi.json").json()["paths"]
    base = "/api/instances/{instanceId}"
    assert "202" in paths[f"{base}/memory/clear"]["post"]["responses"]
    for read in ("memory", "memory/export", "memory/entries", "memory/search"):
        assert "403" in paths[f"{base}/{read}"]["get"]["responses"], read
    assert "400" in paths[f"{base}/operator/sweep"]["post"]["responses"]
    parameter = paths[f"{base}/memory"]["get"]["parameters"][0]
    assert parameter["name"] == "instanceId" and parameter["schema"]["pattern"].startswith("^")
    assert "/api/mcp" not in paths
    # Under X-MEMORY-MODE: off a write answers not_stored, with the status its success has (202 for a forget).
    not_stored = {"$ref": "#/components/schemas/NotStoredResponse"}
    for path, method, status in ((f"{base}/memory/append", "post", "200"), (f"{base}/memory/clear", "post", "200"),
                                 (f"{base}/memory/import", "post", "200"),
                                 (f"{base}/memory/entries/{{entryId}}", "delete", "202")):
        schema = paths[path][method]["responses"][status]["content"]["application/json"]["schema"]
        assert not_stored in schema["anyOf"], path
    # The edge refuses a foreign Host (421) and a cross-site Origin (403) on every operation.
    for path, item in paths.items():
        for method, operation in item.items():
            assert {"403", "421"} <= set(operation["responses"]), f"{method} {path}"


def test_every_operation_with_a_body_documents_the_edges_refusals(sqlite_server: RunningServer,
                                                                   instance_id: str) -> None:
    """The edge answers 415 to a body not sent as JSON and 413 to one past the limit before any handler
    runs, so every operation that takes a body documents both (the memory tool's routes once lacked 415)."""
    paths = httpx.get(f"{sqlite_server.api}/openapi.json").json()["paths"]
    with_body = [(path, method, op) for path, item in paths.items() for method, op in item.items()
                 if "requestBody" in op]
    assert any("/memory/files/" in path for path, _, _ in with_body)
    for path, method, op in with_body:
        assert {"413", "415"} <= set(op["responses"]), f"{method} {path}"
    with sqlite_server.client() as http:
        plain = http.post(f"/instances/{instance_id}/memory/files/create",
                          content=json.dumps({"path": "/memories/a.md", "file_text": "x"}),
                          headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415
    assert plain.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize("arguments", [b'"memory": "- \\ud800"', b'"memory": "- first", "memory": "- second"'],
                         ids=["lone-surrogate", "member-named-twice"])
def test_text_the_strict_decoder_refuses_in_an_mcp_tool_call_is_an_invalid_request_answering_its_id(
        sqlite_server: RunningServer, instance_id: str, arguments: bytes) -> None:
    """Over MCP the same text is refused before any tool runs (400, JSON-RPC -32600 with the request's id, as over
    stdio: it is JSON, only refused), and nothing is stored."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25", "X-INSTANCE-ID": instance_id, **_headers(False)}
    body = (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "append_memory", '
            b'"arguments": {"scope": "user", ' + arguments + b'}}}')
    response = httpx.post(f"{sqlite_server.api}/mcp", content=body, headers=headers)
    assert response.status_code == 400
    assert (response.json()["id"], response.json()["error"]["code"]) == (3, -32600)
    assert _memory(sqlite_server, instance_id, "alex@contoso.com") == ""
