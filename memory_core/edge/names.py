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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memory_core.domain.errors import Forbidden, MisdirectedRequest

if TYPE_CHECKING:  # pydantic-settings loads with the composition root (cold start, issue #15)
    from memory_core.settings import Settings

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


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
        """True when a Host header value (with or without a port) names this app."""
        return bool(host.strip()) and host_name(host) in self.names

    def accepts_origin(self, origin: str) -> bool:
        """True when a browser Origin is a page of this app: https on its names, http too on loopback."""
        parts = urlsplit(origin.strip().lower())
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            return False
        name = host_name(parts.netloc)
        if name not in self.names:
            return False
        return parts.scheme == "https" or name in LOOPBACK_NAMES

    def check(self, host: str, origin: str | None) -> None:
        """Refuse a foreign Host (``MisdirectedRequest``, 421) or Origin (``Forbidden``, 403)."""
        if not self.accepts_host(host):
            raise MisdirectedRequest(
                "the Host header does not name this app; a deployment behind another name lists it in "
                "MEMORY_ALLOWED_HOSTS"
            )
        if origin is not None and not self.accepts_origin(origin):
            raise Forbidden("requests from other web sites are refused (Origin)", code="origin_not_allowed")
