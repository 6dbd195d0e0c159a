"""Authorization matrix over every HTTP route of function_app.app (new routes are picked up by themselves).

Callers: the owner (Entra token, platform identity context, or key), another
user, an operator (Entra token with Memory.Operator, or operator key), a user
credential on an operator route, and no credential. Tokens are really signed
and checked against a JWKS served over HTTP on loopback, standing in for
Entra ID's and the platform's, which cannot be reached here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

import function_app
from memory_core.api.function_table import functions_of, http_methods
from tests.auth.conftest import ALEX, BOB, OLIVIA, Tokens
from tests.support.later_release import put_hold_beside, put_unreadable_request_beside
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, identity
from tests.support.routes import route_path

AGENT = "/instances/i/providers/FoundationaLLM.Agent/agents/matrix-agent"
MARKER = "matrix-secret-of-alex"


@dataclass(frozen=True)
class Route:
    name: str
    template: str
    method: str

    @property
    def is_operator(self) -> bool:
        return "/operator/" in f"/{self.template}/"

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def _routes() -> list[Route]:
    found = []
    for function in functions_of(function_app.app):
        trigger = function.get_trigger()
        if getattr(trigger, "type", None) != "httpTrigger":
            continue
        template = getattr(trigger, "route", None) or function.get_function_name()
        for method in http_methods(trigger):
            if method == "HEAD":  # HEAD runs the GET function; tests/edge checks that it answers the same status
                continue
            found.append(Route(function.get_function_name(), template, method))
    return found


PUBLIC = {"openapi", "console_page", "console_asset", "oauth_protected_resource"}
"""Routes that take no credential."""
MCP = {"mcp"}
"""The MCP endpoint: it authenticates every request before the protocol runs (tests/auth/test_mcp_identity.py)."""
ROUTES = [r for r in _routes() if r.name not in PUBLIC | MCP]
USER_ROUTES = [r for r in ROUTES if not r.is_operator]
OPERATOR_ROUTES = [r for r in ROUTES if r.is_operator]


@dataclass
class Context:
    """What a sample request needs: the instance, an entry of the caller's, a pending request id."""

    server: RunningServer
    instance: str
    headers: dict[str, str]
    operator_headers: dict[str, str] = field(default_factory=dict)
    owner_headers: dict[str, str] = field(default_factory=dict)

    def entry_id(self) -> str:
        """An entry of the owner (the caller unless owner_headers says otherwise)."""
        headers = self.owner_headers or self.headers
        with httpx.Client(base_url=self.server.api, headers=headers) as http:
            http.post(f"/instances/{self.instance}/memory/append",
                      json={"scope": "user", "content_markdown": f"- {MARKER}"}).raise_for_status()
            entries = http.get(f"/instances/{self.instance}/memory/entries", params={"scope": "user"}).json()
        return entries["entries"][-1]["id"]

    def memory_file(self) -> str:
        """A memory-tool file of the caller's own, holding "matrix fact"."""
        path = f"/memories/matrix-{uuid.uuid4().hex[:8]}.md"
        with httpx.Client(base_url=self.server.api, headers=self.headers) as http:
            http.post(f"/instances/{self.instance}/memory/files/create",
                      json={"command": "create", "path": path, "file_text": "matrix fact\n"}).raise_for_status()
        return path

    def configured_agent(self) -> str:
        """An agent whose settings the caller (an operator) has just saved."""
        agent = f"{AGENT}-{uuid.uuid4().hex[:8]}"
        with httpx.Client(base_url=self.server.api, headers=self.headers) as http:
            http.put(f"/instances/{self.instance}/operator/agent-settings", params={"agentObjectId": agent},
                     json={"enabled": False}).raise_for_status()
        return agent

    def unreadable_request_id(self) -> str:
        """A stored deletion request this release cannot read (a later release's kind), planted in the store."""
        request_id = f"later-{uuid.uuid4().hex[:8]}"
        put_unreadable_request_beside(self.server, self.instance, request_id=request_id)
        return request_id

    def orphan_hold_id(self) -> str:
        """A hold on ``ALEX``'s memory whose request is not stored (as a forced dismissal leaves one), planted in the
        store: the body-named release answers 404 when none stands."""
        request_id = f"gone-{uuid.uuid4().hex[:8]}"
        put_hold_beside(self.server, self.instance, ALEX, request_id)
        return request_id

    def pending_request_id(self) -> str:
        """A deletion request waiting for an operator (the owner forgets an entry)."""
        headers = self.owner_headers or self.headers
        entry = self.entry_id()
        with httpx.Client(base_url=self.server.api, headers=headers) as http:
            response = http.delete(f"/instances/{self.instance}/memory/entries/{entry}")
        response.raise_for_status()
        return response.json()["request_id"]


Sample = Callable[[Context], tuple[dict[str, str], dict[str, Any], dict[str, Any] | None]]
"""(path parameters, query, JSON body) of a request that succeeds for an allowed caller; by function name, or by
"name METHOD" where one function takes its input differently by method (search: a query on GET, a body on POST)."""

SAMPLES: dict[str, Sample] = {
    "get_memory": lambda c: ({}, {"scope": "user"}, None),
    "append_memory": lambda c: ({}, {}, {"scope": "user", "content_markdown": "- matrix fact"}),
    "clear_memory": lambda c: ({}, {}, {"scope": "user", "confirm": True}),
    "export_memory": lambda c: ({}, {"scope": "user"}, None),
    "import_memory": lambda c: ({}, {}, {"scope": "user", "content_markdown": "- imported", "mode": "append"}),
    "list_entries": lambda c: ({}, {"scope": "user"}, None),
    "forget_entry": lambda c: ({"entryId": c.entry_id()}, {}, None),
    "search_memory": lambda c: ({}, {"q": "matrix", "scope": "user"}, None),
    "search_memory POST": lambda c: ({}, {}, {"q": "matrix", "scope": "user"}),
    "read_own_audit": lambda c: ({}, {}, None),
    "list_own_deletions": lambda c: ({}, {"status": "pending"}, None),
    "list_agents": lambda c: ({}, {}, None),
    "list_deletions": lambda c: ({}, {"status": "pending"}, None),
    "approve_deletion": lambda c: ({"requestId": c.pending_request_id()}, {}, None),
    "dismiss_deletion": lambda c: ({"requestId": c.unreadable_request_id()}, {}, None),
    "reject_deletion": lambda c: ({"requestId": c.pending_request_id()}, {}, {"reason": "not verified"}),
    "request_purge": lambda c: ({}, {}, {"upn": ALEX}),
    "request_forget": lambda c: ({}, {}, {"upn": ALEX, "entry_id": c.entry_id()}),
    "scan_hidden_text": lambda c: ({}, {}, None),
    "list_orphan_holds": lambda c: ({}, {}, None),
    # No hold stands under a fresh id: the release answers 200, 0 released (idempotent), for an allowed caller.
    "release_orphan_hold": lambda c: ({"requestId": f"gone-{uuid.uuid4().hex[:8]}"}, {"upn": ALEX}, None),
    "release_named_orphan_hold": lambda c: ({}, {}, {"request_id": c.orphan_hold_id(), "upn": ALEX}),
    "run_sweep": lambda c: ({}, {}, None),
    "read_audit": lambda c: ({}, {"upn": ALEX}, None),
    "get_agent_settings": lambda c: ({}, {"agentObjectId": AGENT}, None),
    "put_agent_settings": lambda c: ({}, {"agentObjectId": AGENT}, {"enabled": True}),
    "delete_agent_settings": lambda c: ({}, {"agentObjectId": c.configured_agent()}, None),
    "read_agent_settings_audit": lambda c: ({}, {"agentObjectId": AGENT}, None),
    "import_legacy": lambda c: ({}, {}, {"scope": "user", "content_markdown": "- legacy fact"}),
    "read_legacy_import_audit": lambda c: ({}, {}, None),
    "list_agent_settings": lambda c: ({}, {}, None),
    "view_file": lambda c: ({}, {}, {"command": "view", "path": "/memories"}),
    "create_file": lambda c: ({}, {}, {"command": "create", "path": f"/memories/m-{uuid.uuid4().hex}.md",
                                       "file_text": "matrix fact"}),
    "str_replace_file": lambda c: ({}, {}, {"command": "str_replace", "path": c.memory_file(), "old_str": "fact",
                                            "new_str": "fact, edited"}),
    "insert_file": lambda c: ({}, {}, {"command": "insert", "path": c.memory_file(), "insert_line": 0,
                                       "insert_text": "first"}),
    "delete_file": lambda c: ({}, {}, {"command": "delete", "path": c.memory_file()}),
    "rename_file": lambda c: ({}, {}, {"command": "rename", "old_path": c.memory_file(),
                                       "new_path": f"/memories/moved-{uuid.uuid4().hex}.md"}),
}


def _path(route: Route, instance: str, params: dict[str, str] | None = None) -> str:
    values = {"instanceId": instance, "entryId": "e-unknown", "requestId": "r-unknown", **(params or {})}
    return route_path(route.template, values)


def _call(server: RunningServer, route: Route, instance: str, headers: dict[str, str],
          params: dict[str, str] | None = None, query: dict[str, Any] | None = None,
          body: dict[str, Any] | None = None) -> httpx.Response:
    json_body = body if body is not None else ({} if route.method in ("POST", "PUT", "PATCH") else None)
    with httpx.Client(base_url=server.api, headers=headers, timeout=30) as http:
        return http.request(route.method, _path(route, instance, params), params=query, json=json_body)


def _sample_call(server: RunningServer, route: Route, context: Context) -> httpx.Response:
    if route.name not in SAMPLES:
        pytest.fail(f"{route} has no sample request: add one to SAMPLES in {__name__}")
    params, query, body = SAMPLES.get(f"{route.name} {route.method}", SAMPLES[route.name])(context)
    return _call(server, route, context.instance, context.headers, params, query, body)


def _key_headers(upn: str) -> dict[str, str]:
    return {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(upn)}


def test_the_matrix_sees_every_route() -> None:
    """The route table is read from function_app.app, and every route has a sample request."""
    assert {"get_memory", "list_deletions", "forget_entry"} <= {r.name for r in ROUTES}
    assert [str(r) for r in ROUTES if r.name not in SAMPLES] == []


# -- no credential / bad credential: every route --------------------------------------------------


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_no_credential_is_401_with_a_challenge(identity_server: RunningServer, route: Route, instance_id: str) -> None:
    """Without any credential every route answers 401 with WWW-Authenticate naming Bearer and the API key."""
    response = _call(identity_server, route, instance_id, {})
    assert response.status_code == 401, response.text
    assert 'Bearer realm="memory-core"' in response.headers["www-authenticate"]
    assert 'ApiKey header="X-API-KEY"' in response.headers["www-authenticate"]


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_forged_token_is_401_invalid_token(identity_server: RunningServer, route: Route, instance_id: str,
                                           tokens: Tokens) -> None:
    """A token with a tampered payload is 401 "invalid token" with error="invalid_token" on every route."""
    header, _, signature = tokens.entra(ALEX).split(".")
    forged = tokens.entra(OLIVIA, roles=("Memory.Operator",)).split(".")[1]
    response = _call(identity_server, route, instance_id, {"Authorization": f"Bearer {header}.{forged}.{signature}"})
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "invalid token"
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_expired_token_is_401_expired_token(identity_server: RunningServer, route: Route, instance_id: str,
                                            tokens: Tokens) -> None:
    """An expired token (even an operator's) is 401 "expired token" on every route."""
    expired = tokens.operator(exp=1, iat=0, nbf=0)
    response = _call(identity_server, route, instance_id, {"Authorization": f"Bearer {expired}"})
    assert (response.status_code, response.json()["error"]["message"]) == (401, "expired token")


# -- user credentials on operator routes -----------------------------------------------------------

USER_CREDENTIALS: dict[str, Callable[[Tokens], dict[str, str]]] = {
    "user token": lambda t: t.bearer(ALEX),
    "user key": lambda t: _key_headers(ALEX),
    "platform context": lambda t: t.platform_header(ALEX),
}


@pytest.mark.parametrize("credential", list(USER_CREDENTIALS))
@pytest.mark.parametrize("route", OPERATOR_ROUTES, ids=str)
def test_user_credential_on_an_operator_route_is_403(identity_server: RunningServer, route: Route, credential: str,
                                                     instance_id: str, tokens: Tokens) -> None:
    """A valid user credential (token without the role, user key, platform context) is 403 on operator routes."""
    response = _call(identity_server, route, instance_id, USER_CREDENTIALS[credential](tokens))
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "forbidden"


# -- allowed callers ----------------------------------------------------------------------------------

OPERATOR_CREDENTIALS: dict[str, Callable[[Tokens], dict[str, str]]] = {
    "operator role": lambda t: t.operator_bearer(OLIVIA),
    "operator key": lambda t: {"X-API-KEY": OPERATOR_KEY},
}


@pytest.mark.parametrize("credential", list(OPERATOR_CREDENTIALS))
@pytest.mark.parametrize("route", OPERATOR_ROUTES, ids=str)
def test_operator_succeeds_on_every_operator_route(identity_server: RunningServer, route: Route, credential: str,
                                                   instance_id: str, tokens: Tokens) -> None:
    """An Entra token with Memory.Operator, or an operator key, is answered 2xx on every operator route."""
    context = Context(identity_server, instance_id, OPERATOR_CREDENTIALS[credential](tokens),
                      owner_headers=tokens.bearer(ALEX))
    response = _sample_call(identity_server, route, context)
    assert 200 <= response.status_code < 300, response.text


OWNER_CREDENTIALS: dict[str, Callable[[Tokens], dict[str, str]]] = {
    "entra token": lambda t: t.bearer(ALEX),
    "platform context": lambda t: t.platform_header(ALEX),
    "key": lambda t: _key_headers(ALEX),
    "operator's own token": lambda t: t.operator_bearer(OLIVIA),
}


@pytest.mark.parametrize("credential", list(OWNER_CREDENTIALS))
@pytest.mark.parametrize("route", USER_ROUTES, ids=str)
def test_owner_succeeds_on_every_user_route(identity_server: RunningServer, route: Route, credential: str,
                                            instance_id: str, tokens: Tokens) -> None:
    """The owner is answered 2xx on every user route, whichever accepted credential names them."""
    context = Context(identity_server, instance_id, OWNER_CREDENTIALS[credential](tokens))
    response = _sample_call(identity_server, route, context)
    assert 200 <= response.status_code < 300, response.text


@pytest.mark.parametrize("route", USER_ROUTES, ids=str)
def test_other_user_never_reaches_the_owners_memory(identity_server: RunningServer, route: Route,
                                                    tokens: Tokens) -> None:
    """Another user's call on any user route touches only their own memory: the owner's entry is never
    shown, a forget of it is 404, and the owner's memory is intact afterwards."""
    instance = f"inst-{uuid.uuid4().hex[:12]}"
    owner = Context(identity_server, instance, tokens.bearer(ALEX))
    owner_entry = owner.entry_id()
    other = Context(identity_server, instance, tokens.bearer(BOB))
    if route.name == "forget_entry":
        response = _call(identity_server, route, instance, other.headers, {"entryId": owner_entry})
        assert response.status_code == 404
    else:
        response = _sample_call(identity_server, route, other)
        assert 200 <= response.status_code < 300, response.text
        assert MARKER not in response.text and ALEX not in response.text
    with httpx.Client(base_url=identity_server.api, headers=owner.headers) as http:
        document = http.get(f"/instances/{instance}/memory", params={"scope": "user"}).json()
    assert MARKER in document["content_markdown"]


def test_openapi_needs_no_credential(identity_server: RunningServer) -> None:
    """The OpenAPI document is public."""
    assert httpx.get(f"{identity_server.api}/openapi.json").status_code == 200


def test_identity_header_cannot_override_the_token(identity_server: RunningServer, instance_id: str,
                                                   tokens: Tokens) -> None:
    """With a bearer token, an X-USER-IDENTITY naming someone else is ignored: the token's UPN owns the write."""
    headers = {**tokens.bearer(BOB), "X-USER-IDENTITY": identity(ALEX)}
    with httpx.Client(base_url=identity_server.api, headers=headers) as http:
        answer = http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
    assert answer.json()["upn"] == BOB


def test_an_identity_past_a_limit_is_401_naming_the_limit_not_the_upn(identity_server: RunningServer) -> None:
    """Over sockets: 1,025 group ids, or a 513-character name, are refused naming that member and its limit;
    the largest identity accepted (1,024 groups, about 40 KB) passes ``serve``'s 64 KiB head limit."""
    groups = [f"{i:08x}-0000-0000-0000-000000000000" for i in range(1025)]
    url = f"{identity_server.api}/instances/limits/memory"
    cases = [
        (identity(BOB, group_ids=groups), "group_ids has more than 1024 entries"),
        (identity(BOB, name="N" * 513), "name is longer than 512 characters"),
    ]
    for document, problem in cases:
        answer = httpx.get(url, params={"scope": "user"},
                           headers={"X-API-KEY": USER_KEY, "X-USER-IDENTITY": document}, timeout=30)
        assert answer.status_code == 401
        assert answer.json()["error"]["message"] == f"X-USER-IDENTITY is not a valid user identity: {problem}"
    largest = identity(BOB, group_ids=groups[:1024])
    answer = httpx.get(url, params={"scope": "user"}, headers={"X-API-KEY": USER_KEY, "X-USER-IDENTITY": largest},
                       timeout=30)
    assert answer.status_code == 200, answer.text
