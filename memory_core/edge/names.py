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
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memory_core.domain.errors import Forbidden, MisdirectedRequest

if TYPE_CHECKING:  # pydantic-settings loads with the composition root (cold start, issue #15)
    from memory_core.settings import Settings

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")

# A name (an IPv6 literal in brackets, or anything without a separator) and an optional port of ASCII digits.
_AUTHORITY = re.compile(r"(\[[0-9a-f:.]+\]|[^\s\[\]:/?#@\\]+)(?::([0-9]{1,5}))?", re.IGNORECASE)


def host_name(entry: str) -> str:
    """``entry`` without scheme, path or port, lower case ("https://Api.X.com:443/" -> "api.x.com")."""
    name = entry.strip().lower()
    for scheme in ("https://", "http://"):
        if name.startswith(scheme):
            name = name[len(scheme) :]
    name = name.split("/", 1)[0]
    if name.startswith("["):
        return name[: name.find("]") + 1] if "]" in name else name
    return name.rsplit(":", 1)[0] if ":" in name else name


def authority_name(authority: str) -> str | None:
    """The lower-case host name of a Host header value or a URL's netloc when it is ``name`` or ``name:port``
    (port 1-65535); None for anything else (userinfo, a bad port, a path, text after ``]``)."""
    match = _AUTHORITY.fullmatch(authority)
    if match is None or (match[2] is not None and not 1 <= int(match[2]) <= 65535):
        return None
    return match[1].lower()


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

    @property
    def names(self) -> tuple[str, ...]:
        """Every accepted host name, deployed names first."""
        return _unique([*self.deployed, *(LOOPBACK_NAMES if self.local else ())])

    def accepts_host(self, host: str) -> bool:
        """True when a Host header value names this app, with or without a port (1-65535), and holds nothing else
        (module docstring)."""
        return authority_name(host.strip()) in self.names

    def accepts_origin(self, origin: str) -> bool:
        """True when a browser Origin is a page of this app: https on its names, http too on loopback."""
        try:
            parts = urlsplit(origin.strip().lower())
        except ValueError:  # "http://[::1", a name NFKC folds into a separator
            return False
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            return False
        name = authority_name(parts.netloc)
        if name is None or name not in self.names:
            return False
        return parts.scheme == "https" or name in LOOPBACK_NAMES

    def check(self, host: str, origin: str | None) -> None:
        """Refuse a foreign or malformed Host (``MisdirectedRequest``, 421) or Origin (``Forbidden``, 403)."""
        if not self.accepts_host(host):
            raise MisdirectedRequest(
                "the Host header does not name this app; a deployment behind another name lists it in "
                "MEMORY_ALLOWED_HOSTS"
            )
        if origin is not None and not self.accepts_origin(origin):
            raise Forbidden("requests from other web sites are refused (Origin)", code="origin_not_allowed")
