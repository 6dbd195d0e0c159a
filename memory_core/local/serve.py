"""``python -m memory_core serve``: run function_app.py locally on uvicorn."""

from __future__ import annotations

import importlib
import ipaddress
import json
import logging
import socket
import sys
from pathlib import Path

import azure.functions as func
import uvicorn

from memory_core.composition import declare_listen_address, reset_runtime, runtime
from memory_core.domain.errors import ConfigurationError, Unavailable
from memory_core.local.host import FunctionHost
from memory_core.local.protocol import BoundedHttpToolsProtocol
from memory_core.local.settings_file import apply_to_environment, read_local_settings
from memory_core.local.timers import timer_functions

log = logging.getLogger("memory_core.local")

SHUTDOWN_GRACE_SECONDS = 3
"""On SIGTERM/SIGINT, requests still open after this long are cancelled, so serve exits within about 5 s."""


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and names that resolve only to them."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses)


def bound_listener(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port``, bound before anything is printed; port 0 picks a free one.

    Binding here, not in uvicorn, lets ``serve`` print the port it really holds, so a
    caller that asked for port 0 (tests, scripts) reads it from the first line instead
    of guessing a free port that another process may take first. Raises OSError
    (address in use, no such address).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on connections accepted from a
    # listener of that protocol, and without it a small answer waits for the client's delayed ACK
    # (about 40 ms a request on Linux).
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(2048)
    except OSError:
        listener.close()
        raise
    listener.set_inheritable(True)
    return listener


def route_prefix(app_dir: Path) -> str:
    try:
        host = json.loads((app_dir / "host.json").read_text(encoding="utf-8"))
        return str(host.get("extensions", {}).get("http", {}).get("routePrefix", "api"))
    except (OSError, ValueError):
        return "api"


def load_function_app(app_dir: Path) -> func.FunctionApp:
    if str(app_dir) not in sys.path:
        sys.path.insert(0, str(app_dir))
    module = importlib.import_module("function_app")
    app = getattr(module, "app", None)
    if not isinstance(app, func.FunctionApp):
        raise ConfigurationError(f"{app_dir / 'function_app.py'} defines no FunctionApp named app")
    return app


def serve(host: str, port: int, app_dir: Path) -> int:
    """Serve until interrupted. Returns the process exit code."""
    local = read_local_settings(app_dir)
    apply_to_environment(local)
    declare_listen_address(host)  # MEMORY_AUTH_MODE=local is accepted only on loopback
    try:
        rt = runtime()
    except (ConfigurationError, Unavailable) as e:  # Unavailable: a store that cannot be opened, such as a bad path
        print(f"memory-core: {e}", file=sys.stderr)
        return 2
    user_keys = set(rt.settings.memory_api_keys)
    operator_keys = set(rt.settings.memory_operator_keys)
    only_sample_keys = (user_keys | operator_keys) <= local.sample_keys
    if not is_loopback(host) and only_sample_keys:
        print(
            f"memory-core: refusing to listen on {host}: only the sample keys from "
            "local.settings.sample.json are configured. Set MEMORY_API_KEYS and "
            "MEMORY_OPERATOR_KEYS to keys of your own first.",
            file=sys.stderr,
        )
        return 2
    app = load_function_app(app_dir)
    prefix = route_prefix(app_dir)
    try:
        timers = timer_functions(app)
    except ConfigurationError as e:
        print(f"memory-core: {e}", file=sys.stderr)
        return 2
    host_app = FunctionHost(app, route_prefix=prefix, timers=timers)
    try:
        listener = bound_listener(host, port)
    except OSError as e:
        print(f"memory-core: cannot listen on {host}:{port}: {e.strerror or e}", file=sys.stderr)
        return 2
    port = int(listener.getsockname()[1])
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}/{prefix}"
    print(f"memory-core serving function_app.py on {base}/ (store: {rt.settings.memory_store})")
    print(f"  settings from: {local.path or 'environment only'}")
    if rt.settings.memory_store == "sqlite" and rt.settings.memory_sqlite_path:  # relative to this folder by default
        print(f"  SQLite file: {Path(rt.settings.memory_sqlite_path).resolve()}")
    print(f"  web console: {base}/console")
    for route in host_app.routes:
        print(f"  {'|'.join(sorted(route.methods)):<16} {route.template}")
    for timer in timers:
        print(f"  timer {timer.name} on '{timer.schedule}'")
    if rt.settings.memory_api_keys and only_sample_keys:
        print(f"  sample user key (X-API-KEY): {rt.settings.memory_api_keys[0]}")
        identity = '{"upn": "alex@contoso.com", "name": "Alex"}'
        print(
            f"  try: curl -H 'X-API-KEY: {rt.settings.memory_api_keys[0]}' "
            f"-H 'X-USER-IDENTITY: {identity}' '{base}/instances/local/memory?scope=user'"
        )
    sys.stdout.flush()
    config = uvicorn.Config(
        # httptools, the C parser (docs/performance.md), with a bound on each request's head
        host_app, host=host, port=port, log_level="warning", lifespan="on", http=BoundedHttpToolsProtocol,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        listener.close()
        reset_runtime()
    return 0
