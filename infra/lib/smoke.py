#!/usr/bin/env python3
"""Proof of life for a deployed memory-core app; run by infra/smoke.sh (standard library only).

Checks, each reported with its latency:

1. the OpenAPI document (``GET /api/openapi.json``);
2. an authenticated append, read and clear round trip on a throwaway instance id
   (``smoke-<random>``); under operator approval the clear is approved and swept with an
   operator key, so the throwaway memory does not stay behind;
3. MCP at ``/api/mcp``: ``server/discover``, ``tools/list`` and an authenticated
   ``tools/call get_memory`` in the 2026-07-28 protocol era (one self-describing request
   each), then ``initialize`` and ``tools/list`` in the 2025-06-18 era older clients speak.

Credentials come from a 0600 JSON file (``api_key``, ``operator_key`` or ``bearer``), never
from the command line, and sent only to an https base URL (http only to this machine); no redirect is
followed (a 3xx fails the check, naming its Location). Exit status: 0 when every check passed, 1 when one
failed, 2 when the base URL is refused.

Usage: smoke.py --base-url URL (--credentials FILE | --public-only) [--timeout SECONDS] [--upn UPN]
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

MODERN = "2026-07-28"
LEGACY = "2025-06-18"
EXPECTED_TOOLS = {"get_memory", "append_memory", "clear_memory"}


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


class CheckFailed(Exception):
    pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: urllib would send every header (the API key, the operator key) on to the
    Location, whatever its host or scheme. A 3xx reaches ``Smoke.request`` as an HTTPError."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def base_url_problem(base_url: str) -> str | None:
    """Why the smoke test must not send credentials to ``base_url``, or None: https, or http to this machine."""
    parts = urllib.parse.urlsplit(base_url)
    if not parts.hostname:
        return f"--base-url {base_url!r} is not a URL"
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS):
        return None
    return (f"--base-url {base_url!r}: the smoke test sends the tenant's keys, so it calls https URLs only "
            "(http only on this machine: localhost, 127.0.0.1, ::1)")


class Smoke:
    def __init__(self, base_url: str, credentials: dict, timeout: float, upn: str) -> None:
        self.api = base_url.rstrip("/") + "/api"
        self.credentials = credentials
        self.timeout = timeout
        self.upn = upn
        self.instance = "smoke-" + secrets.token_hex(6)
        self.failures = 0

    # ------------------------------------------------------------------ HTTP
    def _auth(self, operator: bool = False) -> dict[str, str]:
        headers = {"X-USER-IDENTITY": json.dumps({"upn": self.upn, "name": "memory-core smoke test"})}
        if operator and self.credentials.get("operator_key"):
            headers["X-API-KEY"] = self.credentials["operator_key"]
        elif self.credentials.get("api_key"):
            headers["X-API-KEY"] = self.credentials["api_key"]
        elif self.credentials.get("bearer"):
            headers["Authorization"] = "Bearer " + self.credentials["bearer"]
        return headers

    def request(self, method: str, path: str, body=None, headers: dict | None = None) -> tuple[int, dict, bytes]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        sent = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            sent["Content-Type"] = "application/json"
        req = urllib.request.Request(self.api + path, data=data, method=method, headers=sent)
        try:
            with _OPENER.open(req, timeout=self.timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            if 300 <= err.code < 400:
                location = (err.headers or {}).get("Location", "no Location")
                raise CheckFailed(f"{method} {path}: redirected (HTTP {err.code}) to {location}; the smoke test "
                                  "follows no redirect, so the keys go nowhere else: call the app's own URL") from None
            return err.code, dict(err.headers or {}), err.read()
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise CheckFailed(f"{method} {path}: {getattr(err, 'reason', err)}") from None

    def json_of(self, status: int, body: bytes, what: str, ok=(200,)) -> dict:
        if status not in ok:
            raise CheckFailed(f"{what}: HTTP {status} {body[:300].decode('utf-8', 'replace')}")
        try:
            return json.loads(body)
        except ValueError:
            raise CheckFailed(f"{what}: the answer is not JSON: {body[:200]!r}") from None

    def mcp(self, method: str, params: dict, era: str, session: str | None = None) -> tuple[dict, dict]:
        headers = {**self._auth(), "X-INSTANCE-ID": self.instance, "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": era}
        if era == MODERN:
            # 2026-07-28: every request describes itself (no initialize, no session).
            headers["MCP-Method"] = method
            if "name" in params:  # name-bearing methods (tools/call) repeat the name in a header
                headers["MCP-Name"] = params["name"]
            params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                          "io.modelcontextprotocol/clientInfo": {"name": "memory-core-smoke",
                                                                                 "version": "1"},
                                          "io.modelcontextprotocol/clientCapabilities": {}}}
        if session:
            headers["Mcp-Session-Id"] = session
        status, resp_headers, body = self.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": method,
                                                                    "params": params}, headers)
        if status != 200:
            raise CheckFailed(f"MCP {method} ({era}): HTTP {status} {body[:300].decode('utf-8', 'replace')}")
        text = body.decode("utf-8", "replace")
        if "text/event-stream" in {k.lower(): v for k, v in resp_headers.items()}.get("content-type", ""):
            data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
            text = data[-1] if data else ""
        try:
            message = json.loads(text)
        except ValueError:
            raise CheckFailed(f"MCP {method} ({era}): the answer is not JSON-RPC: {text[:200]!r}") from None
        if "error" in message:
            raise CheckFailed(f"MCP {method} ({era}): {message['error']}")
        lowered = {k.lower(): v for k, v in resp_headers.items()}
        return message.get("result") or {}, lowered

    # ------------------------------------------------------------------ checks
    def check(self, name: str, fn) -> None:
        started = time.perf_counter()
        try:
            detail = fn()
        except CheckFailed as err:
            self.failures += 1
            print(f"FAIL  {1000 * (time.perf_counter() - started):7.0f} ms  {name}: {err}", flush=True)
            return
        print(f"ok    {1000 * (time.perf_counter() - started):7.0f} ms  {name}{': ' + detail if detail else ''}",
              flush=True)

    def openapi(self) -> str:
        status, _, body = self.request("GET", "/openapi.json")
        doc = self.json_of(status, body, "GET /api/openapi.json")
        if not str(doc.get("openapi", "")).startswith("3.") or not doc.get("paths"):
            raise CheckFailed("GET /api/openapi.json is not an OpenAPI 3 document with paths")
        return f"OpenAPI {doc['openapi']}, {len(doc['paths'])} paths"

    def append(self) -> str:
        self.nonce = "smoke-" + secrets.token_hex(8)
        body = {"scope": "user", "content_markdown": f"- {self.nonce}", "reason": "infra/smoke.sh"}
        status, _, raw = self.request("POST", f"/instances/{self.instance}/memory/append", body, self._auth())
        self.json_of(status, raw, "append", ok=(200, 201))
        return f"instance {self.instance}"

    def read(self, expect_nonce: bool = True) -> str:
        status, _, raw = self.request("GET", f"/instances/{self.instance}/memory?scope=user", headers=self._auth())
        doc = self.json_of(status, raw, "read")
        present = self.nonce in json.dumps(doc)
        if present != expect_nonce:
            raise CheckFailed("the appended memory is missing" if expect_nonce else "the memory is still there")
        return ""

    def clear(self) -> str:
        status, _, raw = self.request("POST", f"/instances/{self.instance}/memory/clear",
                                      {"scope": "user", "confirm": True}, self._auth())
        doc = self.json_of(status, raw, "clear", ok=(200, 202))
        if status == 200:
            return "cleared at once (immediate deletion mode)"
        if not self.credentials.get("operator_key"):
            return "pending operator approval (no operator key to approve it)"
        op = self._auth(operator=True)
        request_id = doc.get("request_id")
        status, _, raw = self.request("POST", f"/instances/{self.instance}/operator/deletions/{request_id}/approve",
                                      {}, op)
        self.json_of(status, raw, "approve the deletion")
        status, _, raw = self.request("POST", f"/instances/{self.instance}/operator/sweep", {}, op)
        self.json_of(status, raw, "sweep")
        return "approved and swept with the operator key"

    def discover(self) -> str:
        result, _ = self.mcp("server/discover", {}, MODERN)
        if "tools" not in (result.get("capabilities") or {}):
            raise CheckFailed(f"server/discover lists no tools capability: {result}")
        versions = result.get("supportedVersions") or result.get("supported_versions") or []
        return f"protocol {MODERN}" + (f", versions {', '.join(versions)}" if versions else "")

    def tools(self, era: str, session: str | None = None) -> str:
        result, _ = self.mcp("tools/list", {}, era, session)
        names = {t.get("name") for t in result.get("tools") or []}
        if not names >= EXPECTED_TOOLS:
            raise CheckFailed(f"tools/list ({era}) lacks {sorted(EXPECTED_TOOLS - names)}; it lists {sorted(names)}")
        return ", ".join(sorted(names))

    def call_get_memory(self) -> str:
        # discover and tools/list may be open to anyone; a tool call proves the MCP credentials.
        result, _ = self.mcp("tools/call", {"name": "get_memory", "arguments": {"scope": "user"}}, MODERN)
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content") or [])
            raise CheckFailed(f"tools/call get_memory answered an error: {text[:300]}")
        return "authenticated tool call"

    def initialize(self) -> str:
        result, headers = self.mcp("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                                  "clientInfo": {"name": "memory-core-smoke", "version": "1"}}, LEGACY)
        self.session = headers.get("mcp-session-id")
        return f"protocol {result.get('protocolVersion')}, server {(result.get('serverInfo') or {}).get('name')}"

    def run(self, public_only: bool = False) -> int:
        print(f"smoke test of {self.api} (throwaway instance {self.instance})", flush=True)
        self.nonce = ""
        self.session = None
        self.check("OpenAPI document", self.openapi)
        if public_only:
            print("note: authenticated checks skipped: the app's auth modes give the smoke test no credential "
                  "(platform and easyauth callers hold tokens only the platform issues)", flush=True)
            print("smoke test passed (public checks only)" if not self.failures
                  else f"smoke test FAILED: {self.failures} check(s)", flush=True)
            return 1 if self.failures else 0
        self.check("append (authenticated)", self.append)
        self.check("read back", self.read)
        self.check("clear", self.clear)
        self.check("read after clear", lambda: self.read(expect_nonce=False))
        self.check(f"MCP server/discover ({MODERN})", self.discover)
        self.check(f"MCP tools/list ({MODERN})", lambda: self.tools(MODERN))
        self.check(f"MCP tools/call get_memory ({MODERN})", self.call_get_memory)
        self.check(f"MCP initialize ({LEGACY})", self.initialize)
        self.check(f"MCP tools/list ({LEGACY})", lambda: self.tools(LEGACY, self.session))
        print("smoke test passed" if not self.failures else f"smoke test FAILED: {self.failures} check(s)", flush=True)
        return 1 if self.failures else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--credentials", help="JSON file: api_key, operator_key or bearer")
    parser.add_argument("--public-only", action="store_true",
                        help="no credential: only the checks anyone may make (the OpenAPI document)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (a cold start is slow)")
    parser.add_argument("--upn", default="memory-smoke@smoke.invalid")
    args = parser.parse_args(argv)
    problem = base_url_problem(args.base_url)
    if problem:
        print(f"smoke test refused: {problem}", file=sys.stderr)
        return 2
    if not args.public_only and not args.credentials:
        parser.error("--credentials is required unless --public-only")
    credentials = {}
    if args.credentials:
        with open(args.credentials, encoding="utf-8") as fh:
            credentials = json.load(fh)
    return Smoke(args.base_url, credentials, args.timeout, args.upn).run(public_only=args.public_only)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
