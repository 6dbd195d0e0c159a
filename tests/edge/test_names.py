"""The app's names: which Host and Origin values the edge accepts."""

from __future__ import annotations

import pytest

from memory_core.domain.errors import Forbidden, MisdirectedRequest
from memory_core.edge.names import AppNames
from memory_core.settings import Settings


def _names(**values: object) -> AppNames:
    base: dict[str, object] = {"website_hostname": None, "memory_allowed_hosts": (), "memory_mcp_allowed_hosts": ()}
    return AppNames.from_settings(Settings(**{**base, **values}))  # type: ignore[arg-type]


def test_local_accepts_loopback_names_with_any_port_over_http() -> None:
    names = _names()
    for host in ("localhost", "127.0.0.1:7071", "[::1]:8080", "LOCALHOST:1"):
        assert names.accepts_host(host)
    assert names.accepts_origin("http://localhost:5173")
    assert names.accepts_origin("https://127.0.0.1")


def test_deployed_accepts_its_names_over_https_only() -> None:
    names = _names(website_hostname="memory.azurewebsites.net", memory_allowed_hosts=("memory.contoso.com",))
    assert names.accepts_host("memory.azurewebsites.net")
    assert names.accepts_host("memory.contoso.com:443")
    assert not names.accepts_host("localhost")
    assert names.accepts_origin("https://memory.contoso.com")
    assert not names.accepts_origin("http://memory.contoso.com")
    assert not names.accepts_origin("http://localhost:5173")


def test_the_older_mcp_setting_is_still_read() -> None:
    """MEMORY_MCP_ALLOWED_HOSTS (the older name) adds names for every route."""
    names = _names(website_hostname="m.azurewebsites.net", memory_mcp_allowed_hosts=("https://Old.Example.com/",))
    assert names.accepts_host("old.example.com")


@pytest.mark.parametrize("origin", ["null", "https://evil.example", "https://localhost.evil.example",
                                    "https://evil.example/localhost", "file://", "chrome-extension://abc", ""])
def test_foreign_origins_are_refused(origin: str) -> None:
    assert not _names().accepts_origin(origin)


def test_check_raises_421_for_host_and_403_for_origin() -> None:
    names = _names()
    names.check("127.0.0.1:7071", None)
    names.check("127.0.0.1:7071", "http://127.0.0.1:7071")
    with pytest.raises(MisdirectedRequest):
        names.check("evil.com", None)
    with pytest.raises(MisdirectedRequest):
        names.check("", None)
    with pytest.raises(Forbidden):
        names.check("localhost", "https://evil.example")
