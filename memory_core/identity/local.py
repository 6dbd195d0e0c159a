"""Local mode: one local user, no headers, and only on a loopback listen address or over stdio.

Only ``python -m memory_core serve`` knows the address it listens on; it
declares it to the composition root (``composition.declare_listen_address``)
before the runtime is built, which hands it to ``build_authenticator``.
``python -m memory_core mcp`` declares that it serves over its own stdin and
stdout (``composition.declare_stdio``), where no socket listens at all. Under
any other host (the Functions host, Core Tools) nothing is declared, so local
mode is refused at start.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping

from memory_core.domain.identity import Caller
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode

LOCAL_UPN = "local@localhost"
LOCAL_CALLER = Caller(upn=LOCAL_UPN, name="Local user", user_name=LOCAL_UPN)

def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and names that resolve only to them."""
    name = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses)


class LocalPath:
    """The one local user, whenever no other credential is presented (mode local)."""

    mode = AuthMode.LOCAL

    def presented(self, headers: Mapping[str, str]) -> bool:
        return True

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        return Authentication(LOCAL_CALLER, AuthMode.LOCAL)
