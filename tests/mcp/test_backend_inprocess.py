"""InProcessBackend over a real MemoryService and SQLite store."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import pytest

from memory_core import composition
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.auth import parse_identity
from memory_core.domain.errors import InvalidInput, Unavailable
from memory_core.domain.identity import AgentContext
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService
from memory_core.mcp.backend import CallTarget, InProcessBackend
from memory_core.mcp.guidance import guidance_within
from memory_core.mcp.stalled import AbandonedCalls
from memory_core.settings import Settings
from tests.mcp.client import AGENT_A
from tests.support.local_server import identity

pytestmark = pytest.mark.anyio

UPN = "alex@contoso.com"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    yield store
    store.close()


def _target(**extra: object) -> CallTarget:
    raw = identity(UPN)
    return CallTarget(parse_identity(raw), raw, "inst", **extra)  # type: ignore[arg-type]


async def test_append_stores_agent_name_and_provenance(store: SqliteMemoryStore) -> None:
    """An append stores reason, X-SESSION-ID, X-OPERATION-ID and the X-AGENT-NAME on the entry."""
    backend = InProcessBackend(MemoryService(store))
    target = _target(agent=AgentContext(AGENT_A, "Benefits Assistant"), session_id="s-1", operation_id="op-1")
    await backend.append(target, Scope.AGENT, "- fact", "stated")
    (state,) = store.load([ProfileKey("inst", UPN, Scope.AGENT, AGENT_A)])
    entry = state.entries[0]
    assert (entry.reason, entry.session_id, entry.operation_id, entry.agent_name) == (
        "stated", "s-1", "op-1", "Benefits Assistant"
    )


async def test_get_answers_the_memory_response_of_the_service(store: SqliteMemoryStore) -> None:
    """get answers MemoryResponse.from_view of the service's view (empty content for a new user)."""
    response = await InProcessBackend(MemoryService(store)).get(_target(), Scope.USER)
    assert (response.scope, response.upn, response.content_markdown) == (Scope.USER, UPN, "")


async def test_clear_without_confirm_raises_the_service_error(store: SqliteMemoryStore) -> None:
    """clear(confirm=False) raises the service's InvalidInput("clear requires confirm=true")."""
    with pytest.raises(InvalidInput, match="clear requires confirm=true"):
        await InProcessBackend(MemoryService(store)).clear(_target(), Scope.USER, confirm=False)


async def test_memory_tool_writes_take_the_users_turn_in_the_process(
    store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hosted memory tool's writes of one user take turns among the process's (``service.file_writers``), as the
    REST route's do (docs/memory-tool.md, "Concurrency"): racing, each read the files again for a commit it lost. A
    view does not wait."""
    service = MemoryService(store)
    turns: list[tuple[str, str]] = []
    real = service.file_writers.turn
    monkeypatch.setattr(service.file_writers, "turn", lambda *key: turns.append(key) or real(*key))
    backend = InProcessBackend(service)
    await backend.memory_command(_target(), {"command": "create", "path": "/memories/a.md", "file_text": "x\n"})
    await backend.memory_command(_target(), {"command": "view", "path": "/memories"})
    assert turns == [("inst", UPN)]


@pytest.mark.parametrize(("offload", "on_loop_thread"), [(True, False), (False, True)])
async def test_service_calls_run_in_a_worker_thread_unless_offload_is_off(
    store: SqliteMemoryStore, offload: bool, on_loop_thread: bool
) -> None:
    """By default the service runs in a worker thread; offload=False (one stdio client) runs it in place."""
    seen: list[int] = []
    service = MemoryService(store)
    for name in ("append", "get_within"):
        method = getattr(service, name)

        def recording(*args: object, _method: Any = method, **kwargs: object) -> object:
            seen.append(threading.get_ident())
            return _method(*args, **kwargs)

        setattr(service, name, recording)
    backend = InProcessBackend(service, offload=offload)
    await backend.append(_target(), Scope.USER, "- fact", None)
    answer = await backend.get(_target(), Scope.USER, max_chars=1000)
    assert "- fact" in answer.content_markdown
    assert len(seen) == 2 and all((ident == threading.get_ident()) is on_loop_thread for ident in seen)


@pytest.mark.alone
@pytest.mark.parametrize("offload", [True, False], ids=["http", "stdio"])
async def test_a_slow_settings_read_is_abandoned_at_the_guidance_bound(offload: bool) -> None:
    """The agent's settings are read in a thread the caller's bound may abandon, on both fronts: a read stuck for
    2 s (a busy file, a throttled store) gives way to the base guidance at a 0.3 s bound."""

    class StuckSettings:
        def for_models(self, instance_id: str, agent_object_id: str) -> Any:
            time.sleep(2.0)
            raise AssertionError("never answered in time")

    service = cast(MemoryService, types.SimpleNamespace(agent_settings=StuckSettings()))
    backend = InProcessBackend(service, offload=offload)

    async def read(headers: Any) -> Any:
        return await backend.guidance("i", "/agents/a")

    started = time.monotonic()
    guidance = await guidance_within(read, {}, 0.3)
    assert guidance is None and time.monotonic() - started < 1.0


@pytest.mark.alone
async def test_a_stalled_store_call_is_abandoned_at_the_callers_time_bound(store: SqliteMemoryStore) -> None:
    """A tool's store call in a worker thread gives way when the caller's bound (McpHttpApp, StdioFront) cancels it:
    a read stuck for 2 s (a stalled Cosmos DB, each operation allowed up to COSMOS_OPERATION_TIMEOUT) no longer
    holds a 0.3 s bound until it returns (before, a get_memory on a frozen store answered after 40 s, not 30)."""
    service = MemoryService(store)
    stalled = threading.Event()

    def stuck(*args: object, **kwargs: object) -> object:
        stalled.set()
        time.sleep(2.0)
        raise AssertionError("never answered in time")

    service.get_within = stuck  # type: ignore[method-assign]
    backend = InProcessBackend(service)
    started = time.monotonic()
    with anyio.move_on_after(0.3) as bound:
        await backend.get(_target(), Scope.USER, max_chars=1000)
    assert bound.cancelled_caught and stalled.is_set() and time.monotonic() - started < 1.0


async def test_abandoned_store_calls_cannot_pile_up_without_bound(store: SqliteMemoryStore,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a stalled store, calls abandoned at the caller's bound stop at the count's ``limit`` (plus the threads
    running at once): a new call is refused with ``Unavailable`` (503, Retry-After) instead of starting one more
    thread to wait (before, each wave of 50 requests left about 30 more threads waiting), and calls are taken again
    once the stalled ones return."""
    abandoned = AbandonedCalls(limit=5)
    service = MemoryService(store)
    release = threading.Event()
    stalled = service.get_within

    def stuck(*args: Any, **kwargs: Any) -> object:
        release.wait(30)
        return stalled(*args, **kwargs)

    service.get_within = stuck  # type: ignore[method-assign]
    backend = InProcessBackend(service, abandoned=abandoned)
    refusals: list[Unavailable] = []

    async def bounded_read() -> None:
        with anyio.move_on_after(0.2):
            try:
                await backend.get(_target(), Scope.USER, max_chars=1000)
            except Unavailable as refused:
                refusals.append(refused)

    try:
        for _ in range(3):
            async with anyio.create_task_group() as requests:
                for _ in range(50):
                    requests.start_soon(bounded_read)
        assert abandoned.full and 5 <= abandoned.running <= 5 + 40 and refusals
        with pytest.raises(Unavailable) as refused:
            await backend.get(_target(), Scope.USER, max_chars=1000)
        assert refused.value.retry_after_seconds > 0 and "have not returned yet" in refused.value.message
    finally:
        release.set()
    with anyio.fail_after(5):
        while abandoned.running:
            await anyio.sleep(0.05)
    assert (await backend.get(_target(), Scope.USER, max_chars=1000)).content_markdown == ""


async def test_one_user_bursting_across_instances_never_holds_more_than_their_share(store: SqliteMemoryStore) -> None:
    """The review's repro: Alex sends three waves of 40 reads at once, each wave naming another instance, and every
    read stalls. A call takes its place in its user's share (``CallTarget.share``: the authenticated user, whatever
    instance it names) when it starts and gives it back only when its thread returns, so ``running_for`` never
    passes ``share_limit`` (sampled by a thread every millisecond; before, abandoned calls counted only once abandoned
    and each instance was a share: 40 each, 120 of the process's 100, and everyone was refused). Alex's other calls
    are refused with ``Unavailable`` (Retry-After, "... of your earlier calls ...") without a thread, while Blake's
    read is answered. Once the stalled reads return, the share is forgotten (the map does not grow)."""
    abandoned = AbandonedCalls()
    service = MemoryService(store)
    release = threading.Event()
    read = service.get_within

    def stuck_for_alex(caller: Any, *args: Any) -> object:
        if caller.upn == UPN:
            release.wait(30)
        return read(caller, *args)

    service.get_within = stuck_for_alex  # type: ignore[method-assign]
    backend = InProcessBackend(service, abandoned=abandoned)
    alex = [CallTarget(_target().caller, _target().identity_header, instance) for instance in ("a", "b", "c")]
    blake = CallTarget(parse_identity(identity("blake@contoso.com")), identity("blake@contoso.com"), "a")
    refusals: list[str] = []
    seen: list[int] = []
    sampling = True

    def sample() -> None:
        while sampling:
            seen.append(abandoned.running_for(alex[0].share))
            time.sleep(0.001)

    async def bounded_read(target: CallTarget) -> None:
        with anyio.move_on_after(0.3):
            try:
                await backend.get(target, Scope.USER, max_chars=1000)
            except Unavailable as refused:
                refusals.append(refused.message)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        for target in alex:
            async with anyio.create_task_group() as wave:
                for _ in range(40):
                    wave.start_soon(bounded_read, target)
        with anyio.fail_after(5):
            served = await backend.get(blake, Scope.USER, max_chars=1000)
    finally:
        sampling = False
        release.set()
        sampler.join()
    assert max(seen) == abandoned.share_limit == 10 and len(seen) > 100
    assert len(refusals) == 120 - 10 and set(refusals) == {
        "10 of your earlier calls to the store have not returned yet; retry later"}
    assert served.upn == "blake@contoso.com" and abandoned.running <= 10
    with anyio.fail_after(5):
        while abandoned.running or abandoned.shares():
            await anyio.sleep(0.05)
    assert (await backend.get(alex[1], Scope.USER, max_chars=1000)).content_markdown == ""


async def test_a_call_cancelled_before_it_got_a_thread_gives_its_place_in_the_share_back(
    store: SqliteMemoryStore,
) -> None:
    """With a share larger than the threads (5 here), calls wait for a thread; cancelled there, anyio drops them and
    their places are given back at once, not held as if they ran: the share holds exactly the calls that run, and once
    the stalled ones return, nothing is left counted."""
    anyio.to_thread.current_default_thread_limiter().total_tokens = 5  # this test's event loop only
    abandoned = AbandonedCalls(share_limit=60)
    release = threading.Event()
    ran: list[int] = []

    def stuck(n: int) -> None:
        ran.append(n)
        release.wait(30)

    async def bounded(n: int) -> None:
        with anyio.move_on_after(0.3):
            await abandoned.run(stuck, n, share=_target().share)

    try:
        async with anyio.create_task_group() as burst:
            for n in range(60):
                burst.start_soon(bounded, n)
        waiting = abandoned.running_for(_target().share)
    finally:
        release.set()
    with anyio.fail_after(5):
        while abandoned.running or abandoned.shares():
            await anyio.sleep(0.05)
    assert waiting == len(ran) < 60 and abandoned.running_for(_target().share) == 0


async def test_a_backend_built_without_a_count_keeps_its_own_and_the_composition_roots_join_the_processs(
    store: SqliteMemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One count of abandoned calls per process, held by the composition root, which hands it to the backends it
    builds: one of those is refused while the process's count is full (the bound is the process's, not each
    backend's). A backend built without a count keeps its own and leaves the process's unbuilt (no process state)."""
    monkeypatch.setattr(composition._process, "abandoned", None)
    answer = await InProcessBackend(MemoryService(store)).get(_target(), Scope.USER)
    assert answer.content_markdown == "" and composition._process.abandoned is None
    monkeypatch.setattr(composition._process, "abandoned", AbandonedCalls(limit=0))  # full with no call abandoned
    rt = composition.build_runtime(Settings(memory_store="sqlite", memory_sqlite_path=str(tmp_path / "rt.sqlite3"),
                                            memory_coreapi_base_url=None, memory_api_keys=("k",)))
    try:
        with pytest.raises(Unavailable, match="have not returned yet"):
            await composition.build_mcp_backend(rt).get(_target(), Scope.USER)
    finally:
        rt.store.close()
