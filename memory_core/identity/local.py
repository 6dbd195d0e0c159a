"""Local mode: one local user, no headers, and only on a loopback listen address.

Only ``python -m memory_core serve`` knows the address it listens on; it
declares it with ``declare_listen_address`` before the runtime is built. Under
any other host (the Functions host, Core Tools) nothing is declared, so local
mode is refused at start.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Mapping

from memory_core.domain.identity import Caller
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode

LOCAL_UPN = "local@localhost"
LOCAL_CALLER = Caller(upn=LOCAL_UPN, name="Local user", user_name=LOCAL_UPN)

_lock = threading.Lock()
_listen_address: str | None = None


def declare_listen_address(host: str | None) -> None:
    """Record the address this process serves HTTP on (the local server calls this at start)."""
    global _listen_address
    with _lock:
        _listen_address = host


def listen_address() -> str | None:
    with _lock:
        return _listen_address


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
