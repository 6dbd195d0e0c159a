"""The web console's HTTP functions: the page, its assets and its public configuration.

Routes (function_app.py):

- ``GET /api/console``: the page (``index.html``), never stored (``no-store``: a page kept in the back/forward
  cache showed a person's memory again after they signed out);
- ``GET /api/console/config.json``: the sign-in mode and the public values sign-in needs;
- ``GET /api/console/v/{version}/{file}``: the assets. The version is a hash of every asset,
  so an asset under the current version is immutable and cached for a year; an asset asked
  for under another version (a page loaded before a deployment) is served fresh, uncached.

Every answer carries the same security headers: a Content-Security-Policy with no inline
script, no eval and no framing, ``nosniff`` and ``no-referrer``. The routes declare them
(``EndpointSpec.headers``) and the edge adds them to every answer, its refusals (421, 403, 413,
415, 500) and OPTIONS included; the local host adds them to the 405 and 413 it answers before a
function runs. The console holds no secret,
so these routes take no credential; every call the page makes goes to the API, which
authenticates it as any other caller.
"""

from __future__ import annotations

import hashlib
import html
import json
import threading
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import azure.functions as func

from memory_core.edge import Access, Call, EndpointSpec, endpoint

if TYPE_CHECKING:  # pydantic-settings loads with the composition root, not with the routes (cold start)
    from memory_core.settings import Settings

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
_IMMUTABLE = "public, max-age=31536000, immutable"
_NO_CACHE = "no-cache"
_NO_STORE = "no-store"
_PAGE = "index.html"
_MICROSOFT_AUTHORITY_HOST = "https://login.microsoftonline.com"


@dataclass(frozen=True)
class Bundle:
    """Every asset's bytes, read once per process, and the version that names them."""

    files: dict[str, bytes]
    version: str

    def etag(self, name: str) -> str:
        return '"' + hashlib.sha256(self.files[name]).hexdigest()[:32] + '"'


_lock = threading.Lock()
_bundle: Bundle | None = None


def bundle() -> Bundle:
    """The console's assets (package data under memory_core/console/assets), read on first use."""
    global _bundle
    if _bundle is None:
        with _lock:
            if _bundle is None:
                _bundle = _read_bundle()
    return _bundle


def _read_bundle() -> Bundle:
    root = resources.files("memory_core.console") / "assets"
    files: dict[str, bytes] = {}

    def walk(folder: resources.abc.Traversable, prefix: str) -> None:
        for item in sorted(folder.iterdir(), key=lambda t: t.name):
            if item.is_dir():
                walk(item, f"{prefix}{item.name}/")
            elif _suffix(item.name) in _TYPES:
                files[prefix + item.name] = item.read_bytes()

    walk(root, "")
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return Bundle(files, digest.hexdigest()[:16])


def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot >= 0 else ""


def security_headers(settings: Settings | None) -> dict[str, str]:
    """The headers every console answer carries. Sign-in in mode entra may talk to the authority.

    Without settings (a runtime that cannot be built), the strictest: no authority is named."""
    authority = _entra_authority_origin(settings)
    connect = "'self'" + (f" {authority}" if authority else "")
    frame = authority or "'none'"
    policy = "; ".join([
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        f"connect-src {connect}",
        f"frame-src {frame}",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ])
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    }


def _entra_enabled(settings: Settings) -> bool:
    return "entra" in settings.memory_auth_mode and bool(settings.memory_console_client_id)


def _entra_authority_origin(settings: Settings | None) -> str | None:
    if settings is None or not _entra_enabled(settings):
        return None
    parts = urlsplit(settings.memory_entra_authority_host)
    return f"{parts.scheme}://{parts.netloc}"


def public_config(settings: Settings, version: str) -> dict[str, object]:
    """What the page needs to sign in and to explain itself. Public values only, never a key."""
    entra: dict[str, object] | None = None
    if _entra_enabled(settings):
        host = settings.memory_entra_authority_host.rstrip("/")
        entra = {
            "client_id": settings.memory_console_client_id,
            "authority": f"{host}/{settings.memory_entra_tenant_id}",
            # MSAL knows Microsoft's own host; any other it would look up at Microsoft's instance discovery, which
            # the CSP does not let the page reach: the configured host is named to MSAL as trusted instead.
            "known_authorities": [] if host.lower() == _MICROSOFT_AUTHORITY_HOST else [urlsplit(host).netloc],
            "scopes": [settings.memory_console_api_scope] if settings.memory_console_api_scope else [],
            "msal": f"v/{version}/vendor/msal-browser.min.js",
        }
    return {
        "auth_modes": list(settings.memory_auth_mode),
        "instance_id": settings.memory_default_instance_id,
        "deletion_mode": settings.memory_deletion_mode,
        "operator_role": settings.memory_operator_role,
        "max_write_bytes": settings.memory_max_write_bytes,
        "entra": entra,
        "version": version,
    }


def _answer(body: bytes, content_type: str, cache: str, settings: Settings, status: int = 200,
            etag: str | None = None) -> func.HttpResponse:
    # The security headers are the edge's to add (EndpointSpec.headers), to this answer and to every refusal.
    headers = {"Content-Type": content_type, "Cache-Control": cache}
    if etag:
        headers["ETag"] = etag
    # Both the header and mimetype: the Functions worker reads either, depending on its version.
    return func.HttpResponse(body, status_code=status, headers=headers, mimetype=content_type.split(";")[0],
                             charset="utf-8")


def _not_found(settings: Settings) -> func.HttpResponse:
    body = json.dumps({"error": {"code": "not_found", "message": "no such console asset"}}).encode()
    return _answer(body, "application/json", _NO_STORE, settings, 404)


def _base_path(req: func.HttpRequest) -> str:
    """The page's own path up to and including ``console`` (the Functions route prefix may vary)."""
    path = urlsplit(req.url).path
    index = path.lower().rfind("/console")
    return path[: index + len("/console")] if index >= 0 else "/api/console"


def _page(req: func.HttpRequest, settings: Settings) -> func.HttpResponse:
    b = bundle()
    base = html.escape(_base_path(req), quote=True)
    text = b.files[_PAGE].decode("utf-8").replace("{{assets}}", f"{base}/v/{b.version}").replace("{{base}}", base)
    # no-store, not no-cache: a stored page may be shown again from the back/forward cache after a sign-out.
    return _answer(text.encode("utf-8"), _TYPES[".html"], _NO_STORE, settings)


_CONSOLE = "console"


@endpoint(EndpointSpec(summary="The web console", tag=_CONSOLE, access=Access.PUBLIC, content_type="text/html",
                       errors=(), in_openapi=False, methods=("GET",), headers=security_headers))
def console_page(call: Call) -> func.HttpResponse:
    """GET /api/console: the page."""
    return _page(call.request, call.runtime.settings)


@endpoint(EndpointSpec(summary="The web console's configuration and assets", tag=_CONSOLE, access=Access.PUBLIC,
                       errors=(404,), in_openapi=False, methods=("GET",), headers=security_headers))
def console_asset(call: Call) -> func.HttpResponse:
    """GET /api/console/{*path}: config.json, a versioned asset, or the page for a trailing slash."""
    settings = call.runtime.settings
    req = call.request
    path = call.route_param("path")
    if path in ("", "index.html"):
        return _page(req, settings)
    b = bundle()
    if path == "config.json":
        body = json.dumps(public_config(settings, b.version)).encode()
        return _answer(body, "application/json", _NO_STORE, settings)
    parts = path.split("/", 2)
    if len(parts) != 3 or parts[0] != "v" or parts[2] == _PAGE or parts[2] not in b.files:
        return _not_found(settings)
    name = parts[2]
    etag = b.etag(name)
    cache = _IMMUTABLE if parts[1] == b.version else _NO_CACHE
    if etag in (req.headers.get("If-None-Match") or ""):
        return _answer(b"", _TYPES[_suffix(name)], cache, settings, 304, etag)
    return _answer(b.files[name], _TYPES[_suffix(name)], cache, settings, etag=etag)
