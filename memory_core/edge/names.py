"""The app's own names, and refusing requests addressed to or sent from anything else.

A browser on any web page can reach a server on the user's machine or inside
the user's network: through a DNS name that resolves there (rebinding: the
Host header names the attacker's domain) or by posting cross-site (the Origin
header names the attacker's page). So every request must be addressed to one
of the app's names (Host), and a browser request must come from a page served
under one of them (Origin). Non-browser clients send no Origin.

The app's names: WEBSITE_HOSTNAME (set by Azure), MEMORY_ALLOWED_HOSTS (custom
domains; MEMORY_MCP_ALLOWED_HOSTS is its older name and still read), and, when
not deployed, the loopback names localhost, 127.0.0.1 and [::1].

A Host (or an Origin's host) is one of those names, optionally followed by a
port of 1 to 5 digits in 1-65535, and nothing else: no userinfo (``@``), path,
spaces, or text after an IPv6 literal's ``]``. Anything else is refused like a
foreign name, so no later reader (a URL parser, an OAuth metadata URL built
from the Host) ever sees an address the edge did not check.

Names compare as DNS compares them: without regard to ASCII case (RFC 9110
section 4.2.3, RFC 3986 section 3.2.2), so ``LOCALHOST:7071`` is ``localhost``.
A Host is ASCII (an IDN travels in its ``xn--`` form, as browsers send it):
one with any other character is refused, so no Unicode case mapping (the
Kelvin sign lower-cases to ``k``) makes another name match. A configured
name in Unicode is compared in its ASCII form (``memory_core.domain.host_names``:
UTS #46, then IDNA 2008; a name without one is refused when the settings load).
A trailing dot (``localhost.``) is another name to a browser (another
origin), and is refused unless configured.

An Origin is a scheme, ``://`` and such an authority (a final ``/`` is
tolerated), and nothing else: no query, fragment, whitespace (Unicode's too,
as a no-break space) or control character, not even one a URL parser would
drop (``urlsplit`` removes tab, CR and LF anywhere). Only the spaces and tabs
around a header's value (RFC 9110's optional whitespace) are not part of a
Host or an Origin.

``AppNames.admitted`` also answers the canonical form of what it accepted
(an ``Address``: lower case; an Origin without its ``/``), which the edge keeps
(``Call.address``): a reader behind the edge that compares the headers itself
(the MCP SDK's DNS-rebinding check, ``memory_core.mcp.front``) is given those,
so it cannot refuse for case alone what the edge accepted, and the rule is not
run twice on one request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from memory_core.domain.errors import Forbidden, MisdirectedRequest
from memory_core.domain.host_names import host_name

if TYPE_CHECKING:  # pydantic-settings loads with the composition root (cold start, issue #15)
    from memory_core.settings import Settings

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")

# What no Origin holds (a scheme, "://", a name and a port hold none of it), which urlsplit would drop (tab, CR,
# LF) or take as a query or fragment: refused before it parses, so no two spellings of one Origin are accepted.
_NOT_IN_ORIGIN = re.compile(r"[\s\x00-\x20\x7f-\x9f?#]")

# The optional whitespace around a header's value (RFC 9110 section 5.6.3): space and tab, and nothing else
# str.strip() would take (a no-break space, \x1c-\x1f, \x85 ...), which would then never be seen and refused.
_OWS = " \t"

# A name (an IPv6 literal in brackets, or anything without a separator) and an optional port of ASCII digits.
_AUTHORITY = re.compile(r"(\[[0-9a-f:.]+\]|[^\s\[\]:/?#@\\]+)(?::([0-9]{1,5}))?", re.IGNORECASE)


class Address(NamedTuple):
    """The canonical Host and Origin of a request this app answers (``AppNames.admitted``)."""

    host: str
    """``name`` or ``name:port``, lower case."""
    origin: str | None
    """``scheme://name`` or ``scheme://name:port``, lower case; None when the request sent no Origin."""


ADDRESS_SCOPE_KEY = "memory_core.edge.address"
"""Where an ASGI scope built for an app behind the edge (``memory_core.mcp.functions_bridge``) carries the
``Address`` the edge admitted: a key of the scope, which a server fills and no client can set, unlike a header."""


def authority_parts(authority: str) -> tuple[str, int | None] | None:
    """The lower-case host name and the port of a Host header value or a URL's netloc when it is ``name`` or
    ``name:port`` (port 1-65535) and the name is ASCII; None for anything else (userinfo, a bad port, a path, text
    after ``]``, a character outside ASCII)."""
    match = _AUTHORITY.fullmatch(authority)
    if match is None or not match[1].isascii():
        return None
    port = int(match[2]) if match[2] is not None else None
    if port is not None and not 1 <= port <= 65535:
        return None
    return match[1].lower(), port


def authority_name(authority: str) -> str | None:
    """The host name of ``authority_parts``; None where it answers None."""
    parts = authority_parts(authority)
    return parts[0] if parts is not None else None


def _authority(name: str, port: int | None) -> str:
    return name if port is None else f"{name}:{port}"


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for n in names if n))


def is_local(settings: Settings) -> bool:
    """True when not deployed: no WEBSITE_HOSTNAME, or one naming this machine (Core Tools)."""
    website = host_name(settings.website_hostname or "")
    return not website or website in LOOPBACK_NAMES


@dataclass(frozen=True)
class AppNames:
    """The host names this app answers to. ``deployed`` are https-only; loopback names (local) take http too."""

    deployed: tuple[str, ...]
    local: bool

    @classmethod
    def from_settings(cls, settings: Settings) -> AppNames:
        configured = (settings.website_hostname or "", *settings.allowed_hosts)
        return cls(deployed=_unique(host_name(h) for h in configured), local=is_local(settings))

    @cached_property  # read by every request's Host and Origin check
    def names(self) -> tuple[str, ...]:
        """Every accepted host name, deployed names first."""
        return _unique([*self.deployed, *(LOOPBACK_NAMES if self.local else ())])

    def canonical_host(self, host: str) -> str | None:
        """``host`` as ``name`` or ``name:port``, lower case, when it names this app (module docstring); else None."""
        parts = authority_parts(host.strip(_OWS))
        if parts is None or parts[0] not in self.names:
            return None
        return _authority(*parts)

    def canonical_origin(self, origin: str) -> str | None:
        """``origin`` as ``scheme://name`` or ``scheme://name:port``, lower case, when it is a page of this app:
        https on its names, http too on loopback; else None."""
        candidate = origin.strip(_OWS)
        if _NOT_IN_ORIGIN.search(candidate):
            return None
        try:
            # Not lower-cased first: str.lower maps some non-ASCII letters to ASCII ones (module docstring).
            parts = urlsplit(candidate)
        except ValueError:  # "http://[::1", a name NFKC folds into a separator
            return None
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            return None
        authority = authority_parts(parts.netloc)
        if authority is None or authority[0] not in self.names:
            return None
        if parts.scheme != "https" and authority[0] not in LOOPBACK_NAMES:
            return None
        return f"{parts.scheme}://{_authority(*authority)}"

    def accepts_host(self, host: str) -> bool:
        """True when a Host header value names this app, with or without a port (1-65535), and holds nothing else
        (module docstring)."""
        return self.canonical_host(host) is not None

    def accepts_origin(self, origin: str) -> bool:
        """True when a browser Origin is a page of this app: https on its names, http too on loopback."""
        return self.canonical_origin(origin) is not None

    def admitted(self, host: str, origin: str | None) -> Address:
        """The canonical Host and Origin (``canonical_host``, ``canonical_origin``) of a request this app answers.

        Raises ``MisdirectedRequest`` (421) for a foreign or malformed Host, ``Forbidden`` (403, code
        ``origin_not_allowed``) for a foreign or malformed Origin."""
        canonical_host = self.canonical_host(host)
        if canonical_host is None:
            raise MisdirectedRequest(
                "the Host header does not name this app; a deployment behind another name lists it in "
                "MEMORY_ALLOWED_HOSTS"
            )
        if origin is None:
            return Address(canonical_host, None)
        canonical_origin = self.canonical_origin(origin)
        if canonical_origin is None:
            raise Forbidden("requests from other web sites are refused (Origin)", code="origin_not_allowed")
        return Address(canonical_host, canonical_origin)

    def check(self, host: str, origin: str | None) -> None:
        """Refuse a foreign or malformed Host (``MisdirectedRequest``, 421) or Origin (``Forbidden``, 403)."""
        self.admitted(host, origin)
