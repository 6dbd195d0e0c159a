"""Isolation of the memory tool's files: user A's /memories never shows B's, under every auth mode.

Through ``MemoryCoreMemoryTool`` (Entra bearer token, platform identity context, key with
X-USER-IDENTITY) and raw HTTP for App Service authentication (whose principal header only
App Service can inject). Tokens are really signed and checked against a JWKS served over
HTTP on loopback, standing in for Entra ID's and the platform's servers, which cannot be
reached here. MEMORY_AUTH_MODE=local serves one user by design, so it has no second user
to isolate from (tests/auth/test_local_mode.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from anthropic.lib.tools import ToolError

from memory_core.integrations.anthropic import MemoryCoreMemoryTool
from tests.auth.conftest import ALEX, BOB, Tokens, client_principal
from tests.support.local_server import USER_KEY, RunningServer

MARKER = "alex-private-fact"

TOOLS: dict[str, Callable[[RunningServer, str, Tokens, str], MemoryCoreMemoryTool]] = {
    "entra token": lambda s, i, t, upn: MemoryCoreMemoryTool(s.api, i, bearer_token=lambda: t.entra(upn)),
    "platform context": lambda s, i, t, upn: MemoryCoreMemoryTool(s.api, i, platform_identity=t.platform(upn)),
    "key": lambda s, i, t, upn: MemoryCoreMemoryTool(s.api, i, api_key=USER_KEY, user_identity={"upn": upn}),
}


def _answer(tool: MemoryCoreMemoryTool, command: dict[str, Any]) -> str:
    try:
        return str(tool.call(command))
    except ToolError as error:
        return f"ERROR {error.content}"


def _isolation_script(alex: Callable[[dict[str, Any]], str], bob: Callable[[dict[str, Any]], str]) -> None:
    secret = f"/memories/private-{uuid.uuid4().hex[:6]}/notes.md"
    assert alex({"command": "create", "path": secret, "file_text": f"{MARKER}\n"}).startswith("File created")
    assert alex({"command": "create", "path": "/memories/same-name.md", "file_text": "alex's\n"}).startswith("File")
    listing = bob({"command": "view", "path": "/memories"})
    assert "private-" not in listing and "same-name" not in listing
    assert bob({"command": "view", "path": secret}) == (
        f"ERROR The path {secret} does not exist. Please provide a valid path.")
    assert bob({"command": "str_replace", "path": secret, "old_str": MARKER, "new_str": "x"}).startswith(
        "ERROR The path")
    # The same name in B's memory is B's own file: created, changed and deleted without touching A's.
    assert bob({"command": "create", "path": "/memories/same-name.md", "file_text": "bob's\n"}).startswith("File")
    assert bob({"command": "rename", "old_path": "/memories/same-name.md", "new_path": secret}).startswith("Success")
    assert bob({"command": "delete", "path": "/memories/private-x"}).startswith("ERROR The path")
    assert MARKER not in bob({"command": "view", "path": secret})
    assert MARKER in alex({"command": "view", "path": secret})
    assert "alex's" in alex({"command": "view", "path": "/memories/same-name.md"})


@pytest.mark.parametrize("mode", list(TOOLS))
def test_users_never_see_each_others_files(identity_server: RunningServer, tokens: Tokens, mode: str,
                                           instance_id: str) -> None:
    """Under each credential the REST API accepts, B lists, reads and edits only B's files."""
    alex = TOOLS[mode](identity_server, instance_id, tokens, ALEX)
    bob = TOOLS[mode](identity_server, instance_id, tokens, BOB)
    _isolation_script(lambda c: _answer(alex, c), lambda c: _answer(bob, c))


def test_users_never_see_each_others_files_under_app_service_auth(easyauth_server: RunningServer,
                                                                  instance_id: str) -> None:
    """With App Service authentication (X-MS-CLIENT-PRINCIPAL), the same holds."""

    def as_user(upn: str) -> Callable[[dict[str, Any]], str]:
        def run(command: dict[str, Any]) -> str:
            with httpx.Client(base_url=easyauth_server.api,
                              headers={"X-MS-CLIENT-PRINCIPAL": client_principal(upn)}) as http:
                response = http.post(f"/instances/{instance_id}/memory/files/{command['command']}", json=command)
            body = response.json()
            return body["result"] if response.is_success else f"ERROR {body['error']['message']}"
        return run

    _isolation_script(as_user(ALEX), as_user(BOB))


def test_a_tool_argument_cannot_name_another_user(identity_server: RunningServer, tokens: Tokens,
                                                  instance_id: str) -> None:
    """Extra fields (an upn, an identity) in a command are refused; the caller is the credential's."""
    with httpx.Client(base_url=identity_server.api, headers=tokens.bearer(BOB)) as http:
        response = http.post(f"/instances/{instance_id}/memory/files/view",
                             json={"command": "view", "path": "/memories", "upn": ALEX})
    assert response.status_code == 400 and response.json()["error"]["code"] == "validation_error"
