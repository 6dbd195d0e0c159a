"""The edge's reading of Content-Length on the Functions path (``admit``): ASCII digits only, a huge one too large,
never a 500. The request is built by hand, as azure-functions-host's ToRpcHttp shapes it, because the Functions host
cannot run here; over ``serve`` the HTTP parser refuses such headers before the app sees them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import azure.functions as func
import pytest

from memory_core.api import rest
from memory_core.composition import Runtime, build_runtime
from memory_core.domain.errors import InvalidInput, PayloadTooLarge
from memory_core.edge import spec_of
from memory_core.edge.admission import admit
from memory_core.settings import Settings
from tests.support.local_server import USER_KEY, identity

BODY = b'{"scope": "user", "content_markdown": "- a fact"}'


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = build_runtime(Settings(memory_store="sqlite", memory_sqlite_path=str(tmp_path / "m.sqlite3"),
                                memory_api_keys=(USER_KEY,), website_hostname=None))
    try:
        yield rt
    finally:
        rt.store.close()


def _append(rt: Runtime, content_length: str) -> object:
    spec = spec_of(rest.append_memory)
    assert spec is not None
    request = func.HttpRequest(method="POST", url="http://localhost:7071/api/instances/i/memory/append",
                               route_params={"instanceId": "i"}, body=BODY,
                               headers={"host": "localhost:7071", "content-type": "application/json",
                                        "content-length": content_length, "x-api-key": USER_KEY,
                                        "x-user-identity": identity("alex@contoso.com")})
    return admit(spec, request, rt)


@pytest.mark.parametrize("declared", ["\u00b2", "1\u00b2", "\u0661\u0662", "\uff11\uff12", "12\u00a0", "\u3000" + "12",
                                      "1 2", "-1", "+12", "0x10", "1e3", "12.0"])
def test_a_length_that_is_not_ascii_digits_is_400(runtime: Runtime, declared: str) -> None:
    """Superscripts, Arabic-Indic and full-width digits (``str.isdigit`` takes them; ``int`` refuses the first) and
    whitespace HTTP does not allow around a value are refused as 400 invalid_content_length, never a ValueError."""
    with pytest.raises(InvalidInput) as refused:
        _append(runtime, declared)
    assert refused.value.code == "invalid_content_length"


@pytest.mark.parametrize("declared", ["9" * 19, "1" * 5000])
def test_a_length_of_more_digits_than_any_body_is_413(runtime: Runtime, declared: str) -> None:
    """Nineteen digits and more are too large without a conversion (``int`` of 5,000 digits raised ValueError)."""
    with pytest.raises(PayloadTooLarge):
        _append(runtime, declared)


@pytest.mark.parametrize("declared", [str(len(BODY)), f" \t{len(BODY)}\t ", "0" * 30 + str(len(BODY))])
def test_a_length_in_ascii_digits_with_http_whitespace_is_read(runtime: Runtime, declared: str) -> None:
    """Spaces and tabs around the digits (RFC 9110's optional whitespace) and leading zeros are a length."""
    assert _append(runtime, declared) is not None
