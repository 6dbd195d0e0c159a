"""The SDK's OpenTelemetry spans are still made while a tracer provider is set (``server.SpansWhenTraced``).

With none set the span is skipped; that changes only the cost of a request
(docs/performance.md), since a span made with no provider goes nowhere.

The tracer provider here is a recording stand-in built on the OpenTelemetry API's
no-op classes: no telemetry backend runs in these tests. It is installed the way
OpenTelemetry's own test utilities do (the API's global, reset afterwards). The
server, the front and the SDK are real; the wire is in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mcp.shared._otel as sdk_otel
import pytest
from opentelemetry import trace

from memory_core.identity.local import LocalPath
from memory_core.mcp.server import new_server
from memory_core.mcp.stdio_front import StdioFront
from tests.support.stdio_server import initialize, serve_in_memory, tool_call

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RecordingTracer(trace.NoOpTracer):
    def __init__(self) -> None:
        self.names: list[str] = []

    @contextmanager  # type: ignore[override]
    def start_as_current_span(self, name: str, *args: Any, **kwargs: Any) -> Iterator[trace.Span]:
        self.names.append(name)
        with super().start_as_current_span(name, *args, **kwargs) as span:
            yield span


class RecordingProvider(trace.NoOpTracerProvider):
    def __init__(self) -> None:
        self.tracer = RecordingTracer()

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return self.tracer


def _tracing(monkeypatch: pytest.MonkeyPatch, provider: trace.TracerProvider | None) -> None:
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.setattr(sdk_otel._tracer, "_real_tracer", None)  # the SDK's tracer resolves the provider again


async def test_a_provider_set_after_the_server_is_built_gets_a_span_per_request_until_it_is_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether to make the span is decided per request, not when the server is built."""
    server = new_server("test")
    provider = RecordingProvider()
    unset = False

    @server.tool(name="get_memory")  # the server serves only its own tools' names
    def switch() -> str:
        nonlocal unset
        if not unset:  # the next request is served with no provider set
            _tracing(monkeypatch, None)
            unset = True
        return "ok"

    _tracing(monkeypatch, provider)  # after the server was built, as opentelemetry-instrument or Azure Monitor may
    chunks = [*initialize().splitlines(keepends=True), tool_call(1, "get_memory", {}), tool_call(2, "get_memory", {})]
    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=4096, time_limit=5)
    # one request at a time: the provider changes between them
    lines = await serve_in_memory(front, *chunks, pause=0.05)
    assert [line["result"]["content"][0]["text"] for line in lines if line.get("id") in (1, 2)] == ["ok", "ok"]
    assert provider.tracer.names == ["initialize", "notifications/initialized", "tools/call get_memory"]
