"""The host name of a configured entry: its ASCII form, or a ValueError naming it."""

from __future__ import annotations

import pytest

from memory_core.domain.host_names import ascii_form, host_name


@pytest.mark.parametrize(("entry", "name"), [
    ("https://Api.X.com:443/path", "api.x.com"),
    ("LOCALHOST:7071", "localhost"),
    ("[::1]:8080", "[::1]"),
    ("https://B\u00fccher.Stra\u00dfe.example/", "xn--bcher-kva.xn--strae-oqa.example"),
    ("xn--n3h.example", "xn--n3h.example"),
])
def test_an_entry_is_its_lower_case_ascii_host_name(entry: str, name: str) -> None:
    assert host_name(entry) == name


@pytest.mark.parametrize("name", ["\u2603.example", "a\u200db.example", "\u2764.example"])
def test_a_name_idna_2008_refuses_raises_naming_it(name: str) -> None:
    """UTS #46 maps these (a browser sends \u2603.example as xn--n3h.example), but IDNA 2008 has no form for them."""
    with pytest.raises(ValueError, match="has no IDNA 2008 ASCII form") as refused:
        ascii_form(name)
    assert repr(name) in str(refused.value)
    with pytest.raises(ValueError):
        host_name(f"https://{name.upper()}:443/")
