"""The app's names: which Host and Origin values the edge accepts."""

from __future__ import annotations

import pytest

from memory_core.domain.errors import ConfigurationError, Forbidden, MisdirectedRequest
from memory_core.edge.names import AppNames
from memory_core.settings import Settings, settings_from


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


@pytest.mark.parametrize("host", ["localhost:abc", "localhost:99999", "localhost:0", "localhost:-1", "localhost:",
                                  "localhost:\u0668\u0660", "[::1]:abc", "[::1]x", "[::1]:80:80", "localhost:80@evil",
                                  "evil@localhost", "localhost/x", "localhost?x", "local host", "localhost, evil"])
def test_a_loopback_name_with_anything_but_a_port_after_it_is_refused(host: str) -> None:
    """Only ``name`` or ``name:port`` (1-65535, ASCII digits): a URL parser would raise on the port or read
    another host from the rest."""
    assert not _names().accepts_host(host)
    with pytest.raises(MisdirectedRequest):
        _names().check(host, None)


def test_ports_at_the_ends_of_the_range_are_accepted() -> None:
    names = _names(website_hostname="memory.azurewebsites.net")
    assert names.accepts_host("memory.azurewebsites.net:1") and names.accepts_host("memory.azurewebsites.net:65535")
    assert not names.accepts_host("memory.azurewebsites.net:65536")


@pytest.mark.parametrize("origin", ["http://localhost:80@evil.example", "http://evil.example@localhost",
                                    "http://localhost:abc", "http://[::1]x:80", "http://[::1", "http://a\uff03b"])
def test_an_origin_whose_authority_is_more_than_a_name_and_port_is_refused(origin: str) -> None:
    """Refused, not raised: a URL parser raises on an unclosed bracket or a name NFKC folds into a separator."""
    assert not _names().accepts_origin(origin)


# -- case, IDNs and canonical forms ---------------------------------------------


@pytest.mark.parametrize(("host", "canonical"), [
    ("LOCALHOST:7071", "localhost:7071"), ("LocalHost", "localhost"), ("[::1]:08080", "[::1]:8080"),
    (" 127.0.0.1:7071 ", "127.0.0.1:7071"), ("MEMORY.Contoso.COM:443", "memory.contoso.com:443"),
])
def test_a_host_in_any_ascii_case_is_admitted_in_lower_case(host: str, canonical: str) -> None:
    """Host names compare without ASCII case (RFC 9110 4.2.3); the canonical form is what a reader behind the edge
    (the MCP SDK's exact-string check) is given."""
    names = _names(memory_allowed_hosts=("memory.contoso.com",))
    assert names.admitted(host, None) == (canonical, None)


@pytest.mark.parametrize(("origin", "canonical"), [
    ("http://LOCALHOST:7071", "http://localhost:7071"), ("HTTP://LocalHost/", "http://localhost"),
    ("HTTPS://[::1]:443", "https://[::1]:443"),
])
def test_an_origin_in_any_ascii_case_is_admitted_without_case_or_its_slash(origin: str, canonical: str) -> None:
    assert _names().admitted("localhost", origin) == ("localhost", canonical)


@pytest.mark.parametrize("host", ["memory.\u212aontoso.com", "memory.kontos\u00d8.com", "m\u0130mory.contoso.com",
                                  "localhost\u3002", "\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54"])
def test_a_host_outside_ascii_is_refused_even_when_unicode_case_or_width_maps_it_onto_a_name(host: str) -> None:
    """The Kelvin sign lower-cases to "k", U+0130 to "i" and a combining dot, NFKC folds full-width letters and the
    ideographic full stop: none of it is DNS's case rule, and a browser sends an IDN as xn--."""
    names = _names(memory_allowed_hosts=("memory.kontoso.com", "mimory.contoso.com", "memory.kontosø.com"))
    assert not names.accepts_host(host)
    assert not names.accepts_origin(f"https://{host}")
    with pytest.raises(MisdirectedRequest):
        names.check(host, None)


def test_a_configured_unicode_name_is_compared_in_the_ascii_form_a_browser_sends() -> None:
    """UTS #46 (as browsers): "Straße" keeps its ß (xn--strae-oqa), unlike IDNA 2003's "strasse"."""
    names = _names(website_hostname="memory.azurewebsites.net",
                   memory_allowed_hosts=("https://Bücher.Straße.example/",))
    assert "xn--bcher-kva.xn--strae-oqa.example" in names.names
    assert names.admitted("XN--BCHER-KVA.xn--STRAE-OQA.example:443", "https://xn--bcher-kva.XN--strae-oqa.example") \
        == ("xn--bcher-kva.xn--strae-oqa.example:443", "https://xn--bcher-kva.xn--strae-oqa.example")
    assert not names.accepts_host("bücher.straße.example")
    assert not names.accepts_host("xn--bcher-kva.strasse.example")


@pytest.mark.parametrize("setting", ["MEMORY_ALLOWED_HOSTS", "MEMORY_MCP_ALLOWED_HOSTS", "WEBSITE_HOSTNAME"])
def test_a_unicode_name_without_an_idna_2008_form_stops_the_settings_naming_the_setting(setting: str) -> None:
    """UTS #46 maps "☃.example" (browsers send xn--n3h.example) but IDNA 2008 refuses the snowman: kept in Unicode it
    would never match a Host, so the start stops instead; its xn-- form can be listed."""
    base = {"WEBSITE_HOSTNAME": "", "MEMORY_ALLOWED_HOSTS": "", "MEMORY_MCP_ALLOWED_HOSTS": ""}
    with pytest.raises(ConfigurationError) as refused:
        settings_from({**base, setting: "https://☃.example/"})
    assert f"{setting}: '☃.example' has no IDNA 2008 ASCII form" in str(refused.value)
    assert "xn--" in str(refused.value)
    names = AppNames.from_settings(settings_from({**base, "MEMORY_ALLOWED_HOSTS": "xn--n3h.example,Bücher.example"}))
    assert names.accepts_host("XN--N3H.example") and names.accepts_host("xn--bcher-kva.example")


@pytest.mark.parametrize("origin", [
    "https://memory.azure\twebsites.net", "https://memory.azure\rwebsites.net", "https://memory.azure\nwebsites.net",
    "https://memory.azurewebsites.net\t/", "https://memory.azurewebsites.net?x=1", "https://memory.azurewebsites.net?",
    "https://memory.azurewebsites.net#top", "https://memory.azurewebsites.net/#", "https://memory.azurewebsites.net/?a",
    "https://memory.azurewebsites.net:443?", "https://memory.azurewebsites.net\x00", "https://memory azurewebsites.net",
])
def test_an_origin_holding_more_than_a_scheme_name_and_port_is_refused(origin: str) -> None:
    """urlsplit drops tab, CR and LF anywhere and takes "?" and "#" apart; none of it is in an Origin."""
    names = _names(website_hostname="memory.azurewebsites.net")
    assert names.accepts_origin("https://memory.azurewebsites.net:443/")
    assert not names.accepts_origin(origin)
    with pytest.raises(Forbidden) as refused:
        names.check("memory.azurewebsites.net", origin)
    assert refused.value.code == "origin_not_allowed"


def test_a_trailing_dot_names_another_host() -> None:
    """"localhost." is another origin to a browser: refused, like any name not configured."""
    with pytest.raises(MisdirectedRequest):
        _names().check("localhost.:7071", None)
    with pytest.raises(Forbidden):
        _names().check("localhost", "http://localhost.:7071")
    assert _names(memory_allowed_hosts=("memory.contoso.com.",)).accepts_host("MEMORY.CONTOSO.COM.")


# Every character str.strip() takes but RFC 9110's optional whitespace (space, tab) is not: derived, not listed.
_STRIPPED_BUT_NOT_OWS = [c for c in map(chr, range(0x110000)) if c.isspace() and c not in " \t"]


@pytest.mark.parametrize("character", _STRIPPED_BUT_NOT_OWS, ids=lambda c: f"U+{ord(c):04X}")
def test_whitespace_other_than_space_and_tab_at_either_end_of_an_origin_or_host_is_refused(character: str) -> None:
    """Only a header's optional whitespace is dropped around it; a no-break space, \\x0b, \\x1c-\\x1f, \\x85 or
    \\u3000 stays, and is refused like any other character that is not in an Origin or a Host."""
    names = _names()
    for origin in (f"http://localhost:7071{character}", f"{character}http://localhost:7071"):
        assert not names.accepts_origin(origin)
        with pytest.raises(Forbidden):
            names.check("localhost:7071", origin)
    for host in (f"localhost:7071{character}", f"{character}localhost:7071", f"localhost{character}"):
        assert not names.accepts_host(host)
        with pytest.raises(MisdirectedRequest):
            names.check(host, None)


def test_spaces_and_tabs_around_an_origin_or_host_are_a_headers_optional_whitespace_and_dropped() -> None:
    names = _names()
    assert names.admitted(" \tlocalhost:7071 \t", "\t http://LOCALHOST:7071/ \t") == (
        "localhost:7071", "http://localhost:7071")
    assert not names.accepts_origin("http://localhost:7071 /")
