"""The MCP endpoint accepts the same credentials as REST, and never passes a caller's token on.

Real servers, the official MCP client over HTTP. Tokens are signed with keys
generated here and checked against a JWKS served over HTTP on loopback; the
on-behalf-of exchange goes to a token endpoint served over HTTPS on loopback.
Both stand in for Entra ID's servers (and the platform's), which cannot be
reached here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from memory_core.mcp.server import TOOL_NAMES
from tests.auth.conftest import ALEX, BOB, OLIVIA, Tokens, identity_settings
from tests.auth.idp import CORE_SCOPE, MCP_AUDIENCE, AuthorityServer, JwksServer
from tests.mcp.client import ACCEPT, INITIALIZE, call, text
from tests.support.local_server import USER_KEY, RunningServer, identity, running_server

pytestmark = pytest.mark.anyio

TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "get_memory": {"scope": "user"},
    "append_memory": {"scope": "user", "memory": "- mcp identity fact"},
    "clear_memory": {"scope": "user", "confirm": True},
    "search_memory": {"query": "identity", "scope": "user"},
    "memory": {"command": "view", "path": "/memories"},
}
TOOLS = list(TOOL_NAMES)


def _arguments(tool: str) -> dict[str, Any]:
    if tool not in TOOL_ARGUMENTS:
        pytest.fail(f"tool {tool} has no sample arguments: add them to TOOL_ARGUMENTS in {__name__}")
    return TOOL_ARGUMENTS[tool]


def _url(server: RunningServer) -> str:
    return f"{server.api}/mcp"


def _instance() -> str:
    return f"inst-{uuid.uuid4().hex[:12]}"


def _error(result: Any) -> dict[str, str]:
    assert result.is_error, text(result)
    return result.structured_content["error"]


CALLERS: dict[str, Callable[[Tokens], dict[str, str]]] = {
    "entra token": lambda t: t.bearer(ALEX),
    "platform context": lambda t: t.platform_header(ALEX),
    "key": lambda t: {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(ALEX)},
    "operator's own token": lambda t: t.operator_bearer(OLIVIA),
}


def test_every_tool_has_sample_arguments() -> None:
    """Each MCP tool the server offers has sample arguments here (new tools join the matrix)."""
    assert [tool for tool in TOOLS if tool not in TOOL_ARGUMENTS] == []


async def _refusal(server: RunningServer, headers: dict[str, str]) -> tuple[int, str, str]:
    """(status, WWW-Authenticate, message) of an initialize: credentials are checked before the protocol runs."""
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(_url(server), json=INITIALIZE, headers={**ACCEPT, **headers})
    assert response.json()["error"]["code"] == -32001, response.text
    return response.status_code, response.headers.get("www-authenticate", ""), response.json()["error"]["message"]


def _metadata_url(server: RunningServer) -> str:
    return f"{server.api}/.well-known/oauth-protected-resource/mcp"


async def test_no_credential_is_refused_before_anything_is_read(identity_server: RunningServer) -> None:
    """Without a credential, initialize answers 401 "missing credential" and names the OAuth metadata."""
    status, challenge, message = await _refusal(identity_server, {"X-INSTANCE-ID": _instance()})
    assert status == 401 and message.startswith("missing credential")
    assert challenge.startswith(f'Bearer resource_metadata="{_metadata_url(identity_server)}", scope="')
    assert 'ApiKey header="X-API-KEY"' in challenge and "PlatformIdentity" in challenge


async def test_forged_token_is_refused_as_invalid_token(identity_server: RunningServer, tokens: Tokens) -> None:
    """A bearer token with a tampered payload answers 401 "invalid token", with the Bearer error and metadata."""
    header, _, signature = tokens.entra(ALEX).split(".")
    payload = tokens.entra(BOB).split(".")[1]
    headers = {"Authorization": f"Bearer {header}.{payload}.{signature}", "X-INSTANCE-ID": _instance()}
    status, challenge, message = await _refusal(identity_server, headers)
    assert (status, message) == (401, "invalid token")
    assert 'error="invalid_token"' in challenge and f'resource_metadata="{_metadata_url(identity_server)}"' in challenge


async def test_expired_token_is_refused_as_expired_token(identity_server: RunningServer, tokens: Tokens) -> None:
    """An expired bearer token answers 401 "expired token"."""
    headers = {**tokens.bearer(ALEX, exp=1, iat=0, nbf=0), "X-INSTANCE-ID": _instance()}
    assert (await _refusal(identity_server, headers))[::2] == (401, "expired token")


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("tool", TOOLS)
async def test_accepted_credentials_succeed_on_every_tool(identity_server: RunningServer, tool: str, caller: str,
                                                          tokens: Tokens) -> None:
    """An Entra token, a platform identity context, a key, or an operator's own token all work on every tool."""
    headers = {**CALLERS[caller](tokens), "X-INSTANCE-ID": _instance()}
    result = await call(_url(identity_server), headers, tool, _arguments(tool))
    assert not result.is_error, text(result)


async def test_token_decides_whose_memory_is_written(identity_server: RunningServer, tokens: Tokens) -> None:
    """append_memory with a bearer token writes the token user's memory, whatever X-USER-IDENTITY says."""
    headers = {**tokens.bearer(BOB), "X-USER-IDENTITY": identity(ALEX), "X-INSTANCE-ID": _instance()}
    result = await call(_url(identity_server), headers, "append_memory", _arguments("append_memory"))
    assert result.structured_content["upn"] == BOB


async def test_other_user_never_reads_the_owners_memory(identity_server: RunningServer, tokens: Tokens) -> None:
    """What the owner appended over MCP is invisible to another user's get_memory and search_memory."""
    instance = _instance()
    marker = f"private-{uuid.uuid4().hex[:8]}"
    owner = {**tokens.bearer(ALEX), "X-INSTANCE-ID": instance}
    other = {**tokens.bearer(BOB), "X-INSTANCE-ID": instance}
    await call(_url(identity_server), owner, "append_memory", {"scope": "user", "memory": f"- {marker}"})
    read = await call(_url(identity_server), other, "get_memory", {"scope": "user"})
    found = await call(_url(identity_server), other, "search_memory", {"query": marker, "scope": "user"})
    assert marker not in text(read) and found.structured_content["hits"] == []
    assert marker in text(await call(_url(identity_server), owner, "get_memory", {"scope": "user"}))


# -- an MCP front calling a remote CoreAPI ----------------------------------------------------------


def _front_headers(tokens: Tokens, upn: str, instance: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens.entra(upn, audience=MCP_AUDIENCE)}", "X-INSTANCE-ID": instance}


@pytest.mark.parametrize("tool", TOOLS)
async def test_front_serves_entra_callers_on_every_tool(mcp_front: RunningServer, tool: str, tokens: Tokens) -> None:
    """Through an MCP front with a remote CoreAPI, an Entra caller succeeds on every tool (the token is
    exchanged on behalf of the user at the loopback token endpoint standing in for Entra ID's)."""
    result = await call(_url(mcp_front), _front_headers(tokens, ALEX, _instance()), tool, _arguments(tool))
    assert not result.is_error, text(result)


async def test_front_exchanges_the_token_on_behalf_of_the_user(
    mcp_front: RunningServer, identity_server: RunningServer, authority: AuthorityServer, tokens: Tokens
) -> None:
    """The front asks the token endpoint for a CoreAPI token on behalf of the user (the user's token is the
    assertion) and the CoreAPI stores under that user. The user's token, for the front's audience, would be
    refused by the CoreAPI: it was not passed through. (Loopback token endpoint standing in for Entra ID's.)"""
    instance, upn = _instance(), f"obo-{uuid.uuid4().hex[:8]}@contoso.com"
    headers = _front_headers(tokens, upn, instance)
    user_token = headers["Authorization"].removeprefix("Bearer ")
    result = await call(_url(mcp_front), headers, "append_memory", {"scope": "user", "memory": "- via obo"})
    assert not result.is_error, text(result)
    exchanges = [r for r in authority.requests_to(authority.token_path) if r.form.get("assertion") == user_token]
    assert len(exchanges) == 1
    assert exchanges[0].form["requested_token_use"] == "on_behalf_of" and CORE_SCOPE in exchanges[0].form["scope"]
    with httpx.Client(base_url=identity_server.api, headers=tokens.bearer(upn)) as rest:
        assert "- via obo" in rest.get(f"/instances/{instance}/memory", params={"scope": "user"}).json()[
            "content_markdown"]
    with httpx.Client(base_url=identity_server.api, headers={"Authorization": f"Bearer {user_token}"}) as rest:
        assert rest.get(f"/instances/{instance}/memory", params={"scope": "user"}).status_code == 401


async def test_front_forwards_the_platform_context_as_it_is(mcp_front: RunningServer, identity_server: RunningServer,
                                                            tokens: Tokens) -> None:
    """A platform identity context reaches the remote CoreAPI unchanged and names the owner there.
    (Loopback JWKS standing in for the platform's.)"""
    instance, upn = _instance(), f"agent-user-{uuid.uuid4().hex[:8]}@contoso.com"
    headers = {**tokens.platform_header(upn), "X-INSTANCE-ID": instance}
    result = await call(_url(mcp_front), headers, "append_memory", {"scope": "user", "memory": "- via platform"})
    assert not result.is_error and result.structured_content["upn"] == upn
    with httpx.Client(base_url=identity_server.api, headers=tokens.platform_header(upn)) as rest:
        assert "- via platform" in rest.get(f"/instances/{instance}/memory", params={"scope": "user"}).json()[
            "content_markdown"]


async def test_front_refuses_a_token_for_the_coreapi(mcp_front: RunningServer, tokens: Tokens) -> None:
    """The front accepts only tokens for its own audience: a CoreAPI token answers 401 "invalid token"."""
    headers = {**tokens.bearer(ALEX), "X-INSTANCE-ID": _instance()}
    assert (await _refusal(mcp_front, headers))[::2] == (401, "invalid token")


async def test_front_without_key_mode_refuses_raw_identity_headers(mcp_front: RunningServer) -> None:
    """A front that accepts tokens only does not believe X-API-KEY + X-USER-IDENTITY: 401, no ApiKey challenge."""
    headers = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(ALEX), "X-INSTANCE-ID": _instance()}
    status, challenge, _ = await _refusal(mcp_front, headers)
    assert status == 401 and "ApiKey" not in challenge and "resource_metadata=" in challenge


STALL_SECONDS = 3.0


@pytest.fixture(scope="module")
def stalled_keys_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core (entra,key) whose identity provider takes STALL_SECONDS to answer its key set, with no keys."""
    stalled = JwksServer()

    def slow_empty_key_set(_request: object) -> tuple[int, dict[str, Any]]:
        time.sleep(STALL_SECONDS)
        return 200, {"keys": []}

    stalled.routes[("GET", "/stalled/keys")] = slow_empty_key_set
    env = identity_settings(stalled, MEMORY_AUTH_MODE="entra,key", MEMORY_ENTRA_JWKS_URL=stalled.url("stalled"))
    try:
        with running_server(tmp_path_factory.mktemp("stalled-keys"), env) as server:
            yield server
    finally:
        stalled.close()


async def test_a_stalled_key_set_fetch_holds_up_no_other_caller(
    stalled_keys_server: RunningServer, tokens: Tokens
) -> None:
    """A token naming a key the server has not seen makes it fetch the key set. While that fetch stalls, another
    caller's tool call (official client) is answered at once; the token's request then answers 503 with JSON-RPC
    -32603 and Retry-After, as the REST API answers an identity provider it cannot reach."""
    url = _url(stalled_keys_server)
    key_caller = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(ALEX), "X-INSTANCE-ID": _instance()}
    await call(url, key_caller, "get_memory", {"scope": "user"})  # the MCP app is built on first use
    answered: list[float] = []
    refused: list[httpx.Response] = []
    async with httpx.AsyncClient(timeout=30) as http:
        started = time.monotonic()

        async def token_caller() -> None:
            refused.append(await http.post(url, json=INITIALIZE, headers={**ACCEPT, **tokens.bearer(ALEX)}))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(token_caller)
            await anyio.sleep(0.5)  # the key set is being fetched
            result = await call(url, key_caller, "get_memory", {"scope": "user"})
            answered.append(time.monotonic() - started)
    assert not result.is_error
    assert answered[0] < STALL_SECONDS - 1, answered
    response = refused[0]
    assert response.status_code == 503 and response.headers["retry-after"] == "5", response.text
    assert response.json()["error"] == {
        "code": -32603, "message": "the identity provider's signing keys cannot be used; retry later",
        "data": {"code": "unavailable"}}
