"""``python -m memory_core mcp``: the MCP server over stdio, as a local client starts it.

Every test runs the real command as a subprocess on a temporary SQLite file,
driven by a real client (the official mcp client's ``stdio_client``,
agent_framework's ``MCPStdioTool``) or by raw lines for what no client sends.
A ``serve`` process on the same file checks over REST what stdio wrote. Every
process is bounded in time.
"""

from __future__ import annotations

import asyncio
import json
import select
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import mcp_types as types
import pytest
from agent_framework import MCPStdioTool, Message
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from memory_core.mcp.server import TOOL_NAMES
from tests.mcp.client import AGENT_A
from tests.mcp.test_agent_framework_tool import ToolCallingChatClient, _call, _results, _run_travel_agent
from tests.support.local_server import OPERATOR_KEY, PROJECT_ROOT, RunningServer, identity, running_server
from tests.support.stdio_server import (
    COMMAND,
    TIME_LIMIT,
    exchange,
    initialize,
    parameters,
    stdio_env,
    tool_call,
)

pytestmark = pytest.mark.anyio

HANDSHAKE_ERAS = ("2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
TOOLS_ONLY = {"tools": {"listChanged": False}}
KEY_BODY = "MIIEowIBAAKCAQEA7v" + "Qx9s2kLmZ3pR8tW1yB4nC6dF0gH5jK" * 3
PRIVATE_KEY = f"- my key is\n-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``serve`` (REST and /api/mcp) on the SQLite file every stdio process of this module uses."""
    env = {"MEMORY_DELETION_MODE": "immediate", "WEBSITE_HOSTNAME": "", "MEMORY_MCP_ALLOWED_HOSTS": "",
           "MEMORY_COREAPI_BASE_URL": ""}
    with running_server(tmp_path_factory.mktemp("mcp-stdio"), env) as server:
        yield server


def _db(server: RunningServer) -> Path:
    return Path(server.env["MEMORY_SQLITE_PATH"])


def _upn() -> str:
    return f"stdio-{uuid.uuid4().hex[:8]}@contoso.com"


@asynccontextmanager
async def _session(env: Mapping[str, str], version: str | None = None) -> AsyncIterator[ClientSession]:
    """An official-client session over stdio to a fresh ``mcp`` process; initialized unless ``version`` is MODERN."""
    async with asyncio.timeout(TIME_LIMIT):
        async with stdio_client(parameters(env)) as (read, write), ClientSession(read, write) as session:
            if version is None:
                await session.initialize()
            elif version != MODERN:
                request = types.InitializeRequest(params=types.InitializeRequestParams(
                    protocol_version=version, capabilities=types.ClientCapabilities(),
                    client_info=types.Implementation(name="era-test", version="0")))
                result = await session.send_request(request, types.InitializeResult)
                assert result.protocol_version == version
                assert result.capabilities.model_dump(by_alias=True, exclude_none=True) == TOOLS_ONLY
                session.adopt(result)
                await session.send_notification(types.InitializedNotification())
            yield session


def _text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    return result.content[0].text  # type: ignore[union-attr]


# -- the official client ------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", HANDSHAKE_ERAS)
async def test_official_client_round_trips_every_tool(shared: RunningServer, instance_id: str, era: str) -> None:
    """initialize at ``era``, tools/list, then append, get, search, the memory tool and clear, as the hosted endpoint."""
    upn = _upn()
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id)
    fact = f"- prefers aisle seats {uuid.uuid4().hex[:6]}"
    async with _session(env, era) as session:
        tools = await session.list_tools()
        assert {t.name for t in tools.tools} == set(TOOL_NAMES)
        appended = await session.call_tool("append_memory", {"scope": "user", "memory": fact})
        assert not appended.is_error and appended.structured_content["upn"] == upn  # type: ignore[index]
        got = await session.call_tool("get_memory", {"scope": "user"})
        assert fact in _text(got)
        found = await session.call_tool("search_memory", {"query": "aisle", "scope": "user"})
        assert json.loads(_text(found))["hits"][0]["entry"]["content_markdown"].strip() == fact
        created = await session.call_tool("memory", {"command": "create", "path": "/memories/prefs.md",
                                                     "file_text": "likes window views\n"})
        assert not created.is_error
        viewed = await session.call_tool("memory", {"command": "view", "path": "/memories/prefs.md"})
        assert "likes window views" in _text(viewed)
        cleared = await session.call_tool("clear_memory", {"scope": "user", "confirm": True})
        assert not cleared.is_error
        assert _text(await session.call_tool("get_memory", {"scope": "user"})) == ""


async def test_stateless_era_discovers_and_calls_tools(shared: RunningServer, instance_id: str) -> None:
    """server/discover at 2026-07-28 over stdio: tools only, the instructions, and a tool call."""
    env = stdio_env(_db(shared), _upn(), MEMORY_MCP_INSTANCE_ID=instance_id)
    async with _session(env, MODERN) as session:
        discovered = await session.discover()
        assert session.protocol_version == MODERN
        assert discovered.capabilities.model_dump(by_alias=True, exclude_none=True) == TOOLS_ONLY
        assert "Use memory to personalize" in (discovered.instructions or "")
        result = await session.call_tool("append_memory", {"scope": "user", "memory": "- modern era fact"})
        assert not result.is_error
        assert "modern era fact" in _text(await session.call_tool("get_memory", {"scope": "user"}))


async def test_writes_over_stdio_are_read_over_rest_from_serve(shared: RunningServer, instance_id: str) -> None:
    """What stdio appends, serve answers over REST on the same file, and the other way round."""
    upn = _upn()
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id)
    async with _session(env) as session:
        await session.call_tool("append_memory", {"scope": "user", "memory": "- written over stdio"})
        with shared.client(upn) as rest:
            read = rest.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
            assert "written over stdio" in read.json()["content_markdown"]
            rest.post(f"/instances/{instance_id}/memory/append",
                      json={"scope": "user", "content_markdown": "- written over REST"}).raise_for_status()
        assert "written over REST" in _text(await session.call_tool("get_memory", {"scope": "user"}))


async def test_agent_and_instance_come_from_the_environment(shared: RunningServer, instance_id: str) -> None:
    """MEMORY_MCP_AGENT_OBJECT_ID and _NAME make scope=agent work; the default instance serves without X-INSTANCE-ID."""
    upn = _upn()
    env = stdio_env(_db(shared), upn, MEMORY_DEFAULT_INSTANCE_ID=instance_id, MEMORY_MCP_AGENT_OBJECT_ID=AGENT_A,
                    MEMORY_MCP_AGENT_NAME="Benefits Assistant")
    async with _session(env) as session:
        result = await session.call_tool("append_memory", {"scope": "agent", "memory": "- agent fact"})
        assert result.structured_content["agent_object_id"] == AGENT_A  # type: ignore[index]
    with shared.client(upn) as rest:
        stored = rest.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": AGENT_A})
    assert "agent fact" in stored.json()["content_markdown"]
    assert "Benefits Assistant" in stored.json()["content_markdown"]


async def test_the_agents_guidance_reaches_initialize_and_tools_list(shared: RunningServer, instance_id: str) -> None:
    """The operator's policy for the configured agent is in the instructions and append_memory's description."""
    agent = f"/agents/guided-{uuid.uuid4().hex[:6]}"
    policy = f"Remember travel preferences {uuid.uuid4().hex[:6]}"
    with shared.client(None, key=OPERATOR_KEY) as operator:
        operator.put(f"/instances/{instance_id}/operator/agent-settings", params={"agentObjectId": agent},
                     json={"policy_instructions": policy, "auto_append": True}).raise_for_status()
    env = stdio_env(_db(shared), _upn(), MEMORY_MCP_INSTANCE_ID=instance_id, MEMORY_MCP_AGENT_OBJECT_ID=agent)
    async with asyncio.timeout(TIME_LIMIT):
        async with stdio_client(parameters(env)) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
    assert policy in (initialized.instructions or "")
    assert "auto-appends" in (tools["append_memory"].description or "")


# -- agent_framework ---------------------------------------------------------------------------------------


async def test_agent_framework_stdio_tool_appends_then_reads(shared: RunningServer, instance_id: str) -> None:
    """An Agent run with agent_framework's own MCPStdioTool: the scripted model's append and get really run."""
    upn = _upn()
    fact = f"- prefers aisle seats ({uuid.uuid4().hex[:6]})"
    model = ToolCallingChatClient([
        _call("call-1", "append_memory", {"scope": "user", "memory": fact, "reason": "user said so"}),
        _call("call-2", "get_memory", {"scope": "user"}),
        Message(role="assistant", contents=["Noted: aisle seats."]),
    ])
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id)
    tool = MCPStdioTool("memory", COMMAND[0], args=COMMAND[1:], env=env, request_timeout=20)
    response = await _run_travel_agent(tool, model, TIME_LIMIT)
    assert response.text == "Noted: aisle seats."
    results = _results(model.requests[2])
    assert fact in str(results["call-1"]) and json.loads(str(results["call-1"]))["upn"] == upn
    assert fact in str(results["call-2"])


# -- identity ----------------------------------------------------------------------------------------------


async def test_a_tool_argument_naming_another_user_is_not_obeyed(shared: RunningServer, instance_id: str) -> None:
    """Arguments naming another user or instance are refused or ignored: the memory is the environment's user's."""
    upn, victim = _upn(), _upn()
    with shared.client(victim) as rest:
        rest.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- the victim's secret plan"}).raise_for_status()
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id)
    forged = {"upn": victim, "user": victim, "X-USER-IDENTITY": identity(victim), "instance_id": instance_id}
    async with _session(env) as session:
        read = await session.call_tool("get_memory", {"scope": "user", **forged})
        written = await session.call_tool("append_memory", {"scope": "user", "memory": "- mine", **forged})
        own = await session.call_tool("get_memory", {"scope": "user"})
    assert not read.is_error and "victim's secret plan" not in _text(read)  # extra arguments are ignored
    assert not written.is_error and written.structured_content["upn"] == upn  # type: ignore[index]
    assert "- mine" in _text(own) and "victim's secret plan" not in _text(own)
    with shared.client(victim) as rest:
        assert "mine" not in rest.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).text


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"MEMORY_MCP_API_KEY": ""}, "missing X-API-KEY"),
        ({"MEMORY_MCP_API_KEY": "forged-key"}, "invalid API key"),
        ({"MEMORY_MCP_USER_IDENTITY": "not json"}, "X-USER-IDENTITY"),
        ({"MEMORY_AUTH_MODE": "easyauth", "WEBSITE_AUTH_ENABLED": "true"}, "missing credential"),
    ],
    ids=["missing-key", "forged-key", "bad-identity", "easyauth-has-no-stdio-credential"],
)
def test_a_missing_or_bad_credential_exits_with_the_reason(shared: RunningServer, instance_id: str,
                                                           values: dict[str, str], said: str) -> None:
    """Nothing is served: status 2, the reason on stderr (pointing at MEMORY_MCP_*), stdout empty."""
    env = stdio_env(_db(shared), _upn(), MEMORY_MCP_INSTANCE_ID=instance_id, **values)
    result = exchange(env, initialize() + tool_call(1, "get_memory", {}))
    assert result.returncode == 2
    assert result.stdout == b""
    assert said in result.stderr and "MEMORY_MCP_" in result.stderr
    assert "forged-key" not in result.stderr


def test_a_store_that_cannot_be_opened_exits_with_the_store_error_not_a_refusal(
        shared: RunningServer, instance_id: str, tmp_path: Path) -> None:
    """MEMORY_SQLITE_PATH naming a directory: status 2 and the store's own error, as `serve` prints it; it is no
    credential's refusal, so nothing points at the MEMORY_MCP_* variables."""
    env = stdio_env(tmp_path, _upn(), MEMORY_MCP_INSTANCE_ID=instance_id)
    result = exchange(env, initialize())
    assert result.returncode == 2 and result.stdout == b""
    assert "MEMORY_SQLITE_PATH" in result.stderr and "cannot be opened" in result.stderr
    assert "refused" not in result.stderr and "MEMORY_MCP_" not in result.stderr


def test_no_instance_exits_with_the_reason(shared: RunningServer) -> None:
    """Without MEMORY_MCP_INSTANCE_ID or MEMORY_DEFAULT_INSTANCE_ID the process refuses to start."""
    result = exchange(stdio_env(_db(shared), _upn()), initialize())
    assert result.returncode == 2 and result.stdout == b""
    assert "no instance" in result.stderr


async def test_local_mode_serves_the_local_user_without_a_credential(shared: RunningServer, instance_id: str) -> None:
    """MEMORY_AUTH_MODE=local (no socket listens) serves local@localhost; REST's local user is the same person."""
    env = stdio_env(_db(shared), None, MEMORY_AUTH_MODE="local", MEMORY_MCP_API_KEY="", MEMORY_API_KEYS="",
                    MEMORY_DEFAULT_INSTANCE_ID=instance_id)
    async with _session(env) as session:
        result = await session.call_tool("append_memory", {"scope": "user", "memory": "- local fact"})
    assert result.structured_content["upn"] == "local@localhost"  # type: ignore[index]


# -- custody -----------------------------------------------------------------------------------------------


async def test_clear_waits_for_approval_and_secrets_are_refused(shared: RunningServer, instance_id: str) -> None:
    """Under operator approval clear_memory answers pending_approval (memory hidden); a private key is refused."""
    upn = _upn()
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id, MEMORY_DELETION_MODE="operator_approval")
    async with _session(env) as session:
        await session.call_tool("append_memory", {"scope": "user", "memory": "- keep me until approved"})
        cleared = await session.call_tool("clear_memory", {"scope": "user", "confirm": True})
        secret = await session.call_tool("append_memory", {"scope": "user", "memory": PRIVATE_KEY})
        after = await session.call_tool("get_memory", {"scope": "user"})
    assert cleared.structured_content["status"] == "pending_approval"  # type: ignore[index]
    assert secret.is_error and secret.structured_content["error"]["code"] == "secret_detected"  # type: ignore[index]
    assert KEY_BODY[:16] not in _text(secret)
    assert _text(after) == ""
    with shared.client(None, key=OPERATOR_KEY) as operator:
        pending = operator.get(f"/instances/{instance_id}/operator/deletions", params={"status": "pending"}).json()
    request_id = cleared.structured_content["request_id"]  # type: ignore[index]
    assert [r["id"] for r in pending["requests"]] == [request_id]


# -- hostile lines -----------------------------------------------------------------------------------------


def test_hostile_lines_are_refused_and_the_stream_goes_on(shared: RunningServer, instance_id: str) -> None:
    """Over-long, non-JSON, non-JSON-RPC, invalid UTF-8 and twice-named-member lines each answer an error; the
    next request is served, and nothing the refused lines held is stored."""
    upn = _upn()
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id)
    secret = "sk-hostile-" + uuid.uuid4().hex
    long_line = b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"append_memory","arguments":' \
                b'{"scope":"user","memory":"' + b"x" * 2_000_000 + b'"}}}\n'
    stdin = b"".join([
        initialize(),
        long_line,
        b"this is not json " + secret.encode() + b"\n",
        json.dumps({"jsonrpc": "1.0", "id": 7, "method": secret}).encode() + b"\n",
        json.dumps({"id": 8, "params": {"password": secret}}).encode() + b"\n",
        b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"s":"\xff\xfe"}}\n',
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"append_memory","arguments":'
        b'{"scope":"user","memory":"- first","memory":"- second"}}}\n',
        b"\n   \n",
        tool_call(10, "append_memory", {"scope": "user", "memory": "- still served"}),
    ])
    result = exchange(env, stdin)
    assert result.returncode == 0, result.stderr
    errors = [a["error"] for a in result.answers if "error" in a]
    assert [e["code"] for e in errors] == [-32600, -32700, -32600, -32600, -32700, -32600]
    assert "Payload Too Large" in errors[0]["message"]
    assert result.answer(11)["error"]["message"] == "Invalid Request: a JSON object names the same member twice"
    assert result.answer(7)["error"]["code"] == -32600 and result.answer(8)["error"]["code"] == -32600
    assert secret.encode() not in result.stdout
    assert not result.answer(10)["result"]["isError"]
    assert all(a.get("id") != 99 for a in result.answers)
    with shared.client(upn) as rest:
        stored = rest.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
    assert "- still served" in stored and "first" not in stored and "second" not in stored


@pytest.mark.parametrize(("arguments", "said"), [
    (b'"memory": "- loves pizza \\ud83d"', "unpaired surrogate"),
    (b'"memory": "- first", "memory": "- second"', "names the same member twice"),
], ids=["lone-surrogate", "member-named-twice"])
def test_json_the_strict_decoder_refuses_is_answered_with_its_request_id(
        shared: RunningServer, instance_id: str, arguments: bytes, said: str) -> None:
    """A request that is JSON but refused (an emoji cut in half, as a JavaScript client writes it; a member named
    twice) answers -32600 with its own id, as /api/mcp does, so the client can match it instead of waiting for
    its timeout; nothing is stored and the next request is served."""
    upn = _upn()
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id)
    stdin = b"".join([
        initialize(),
        b'{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"append_memory","arguments":'
        b'{"scope":"user",' + arguments + b'}}}\n',
        tool_call(8, "get_memory", {"scope": "user"}),
    ])
    result = exchange(env, stdin)
    assert result.returncode == 0, result.stderr
    refused = result.answer("call-7")
    assert refused["error"]["code"] == -32600 and said in refused["error"]["message"]
    assert result.answer(8)["result"]["content"][0]["text"] == ""


def test_a_request_with_a_null_or_fractional_id_is_answered_with_an_error(shared: RunningServer, instance_id: str) -> None:
    """A request whose id is null or not an integer answers -32600 with id null (it is not a notification
    to drop silently, which would leave the client waiting); the next request is served."""
    env = stdio_env(_db(shared), _upn(), MEMORY_MCP_INSTANCE_ID=instance_id)
    stdin = b"".join([
        initialize(),
        b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}\n',
        b'{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"get_memory","arguments":{}}}\n',
        b'{"jsonrpc":"2.0","id":null,"method":"notifications/roots/list_changed"}\n',
        tool_call(3, "get_memory", {"scope": "user"}),
    ])
    result = exchange(env, stdin)
    assert result.returncode == 0, result.stderr
    errors = [a for a in result.answers if "error" in a]
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(None, -32600), (None, -32600)]
    assert all("id must be a string or an integer" in e["error"]["message"] for e in errors)
    assert not result.answer(3)["result"]["isError"]


def test_end_of_input_answers_what_was_read_then_exits_zero(shared: RunningServer, instance_id: str) -> None:
    """Requests sent just before the input closes are answered (and written) before the process exits 0."""
    upn = _upn()
    env = stdio_env(_db(shared), upn, MEMORY_MCP_INSTANCE_ID=instance_id)
    stdin = initialize() + b"".join(
        tool_call(i, "append_memory", {"scope": "user", "memory": f"- fact {i}"}) for i in range(1, 6))
    result = exchange(env, stdin)
    assert result.returncode == 0
    assert sorted(a["id"] for a in result.answers) == [0, 1, 2, 3, 4, 5]
    with shared.client(upn) as rest:
        stored = rest.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
    assert all(f"fact {i}" in stored for i in range(1, 6))


def test_stdout_carries_only_protocol(shared: RunningServer, instance_id: str) -> None:
    """Every line on stdout is a JSON-RPC message; the logs are on stderr."""
    env = stdio_env(_db(shared), _upn(), MEMORY_MCP_INSTANCE_ID=instance_id)
    result = exchange(env, initialize() + tool_call(1, "get_memory", {}) + tool_call(2, "no_such_tool", {}))
    assert result.returncode == 0
    assert all(a.get("jsonrpc") == "2.0" for a in result.answers)
    assert len(result.answers) == 3 and result.answer(2)["error"]["code"] == -32602


def test_a_closed_stdout_ends_the_process(shared: RunningServer, instance_id: str) -> None:
    """When the client stops reading (its end of stdout closed), the process ends instead of hanging."""
    env = stdio_env(_db(shared), _upn(), MEMORY_MCP_INSTANCE_ID=instance_id)
    process = subprocess.Popen(COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, cwd=PROJECT_ROOT)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(initialize())
        process.stdin.flush()
        readable, _, _ = select.select([process.stdout], [], [], TIME_LIMIT)
        assert readable, "no answer to initialize"
        assert json.loads(process.stdout.readline())["id"] == 0
        process.stdout.close()
        process.stdin.write(tool_call(1, "get_memory", {}))
        process.stdin.flush()
        assert process.wait(timeout=TIME_LIMIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
