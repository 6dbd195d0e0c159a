"""The host name of a configured entry (WEBSITE_HOSTNAME, MEMORY_ALLOWED_HOSTS), as a Host header names it.

Pure: the settings check every entry with it when they load, and the edge (``memory_core.edge.names``) compares
requests with what it answers, so an entry the settings accept always has the form the edge compares.
"""

from __future__ import annotations


def host_name(entry: str) -> str:
    """``entry`` without scheme, path or port, lower case ("https://Api.X.com:443/" -> "api.x.com"); a name in
    Unicode in its ASCII form ("Bücher.example" -> "xn--bcher-kva.example", ``ascii_form``).

    Raises ``ValueError`` (naming the entry) for a Unicode name that has no ASCII form (``ascii_form``)."""
    name = entry.strip().lower()
    for scheme in ("https://", "http://"):
        if name.startswith(scheme):
            name = name[len(scheme) :]
    name = name.split("/", 1)[0]
    if name.startswith("["):
        return name[: name.find("]") + 1] if "]" in name else name
    name = name.rsplit(":", 1)[0] if ":" in name else name
    return name if name.isascii() else ascii_form(name)


def ascii_form(name: str) -> str:
    """An IDN as IDNA 2008 spells it in a Host (UTS #46 mapping, nontransitional as browsers map, then punycode).

    Raises ``ValueError`` for a name IDNA 2008 refuses although UTS #46 maps it (a symbol such as "☃.example",
    which browsers still send as ``xn--n3h.example``): a name kept in Unicode would match no Host (a Host is ASCII),
    so such an entry is refused rather than silently never matched; it can be listed in its ``xn--`` form."""
    import idna  # pinned (requirements.txt); loaded only for a configured name that is not ASCII

    try:
        return idna.encode(name, uts46=True).decode("ascii")
    except idna.IDNAError as refused:
        raise ValueError(
            f"{name!r} has no IDNA 2008 ASCII form ({refused}); list it in the xn-- form browsers send"
        ) from None
