"""``python -m memory_core operator ...``: list, approve and reject deletions over HTTP.

It talks to a running service (local or deployed) with an operator key, so an
operator needs no access to the store. Exit codes follow the one error table
(memory_core.edge.errors.EXIT_CODES).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import httpx

from memory_core.edge.errors import exit_code_for


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("operator", help="operator actions on a running service (operator key)")
    parser.add_argument("--url", default=None, help="service base URL (default $MEMORY_URL or http://127.0.0.1:7071)")
    parser.add_argument("--key", default=None, help="operator key (default $MEMORY_OPERATOR_KEY)")
    parser.add_argument("--instance", required=True, help="instance id")
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list deletion requests")
    listing.add_argument("--status", choices=["pending", "approved", "rejected", "executed"])
    approve = actions.add_parser("approve", help="approve a pending deletion request")
    approve.add_argument("request_id")
    reject = actions.add_parser("reject", help="reject a pending deletion request")
    reject.add_argument("request_id")
    reject.add_argument("--reason", required=True)
    purge = actions.add_parser("purge", help="request erasure of all of one user's memory")
    purge.add_argument("upn")
    actions.add_parser("sweep", help="execute approved requests now")
    audit = actions.add_parser("audit", help="read one user's audit trail")
    audit.add_argument("upn")


def run(args: argparse.Namespace) -> int:
    base = (args.url or os.environ.get("MEMORY_URL") or "http://127.0.0.1:7071").rstrip("/")
    key = args.key or os.environ.get("MEMORY_OPERATOR_KEY")
    if not key:
        print("memory-core operator: give --key or set MEMORY_OPERATOR_KEY", file=sys.stderr)
        return 2
    root = f"{base}/api/instances/{args.instance}/operator"
    calls: dict[str, tuple[str, str, dict[str, Any]]] = {
        "list": ("GET", "/deletions", {"params": {"status": args.status} if getattr(args, "status", None) else {}}),
        "approve": ("POST", f"/deletions/{getattr(args, 'request_id', '')}/approve", {}),
        "reject": ("POST", f"/deletions/{getattr(args, 'request_id', '')}/reject",
                   {"json": {"reason": getattr(args, "reason", "")}}),
        "purge": ("POST", "/purges", {"json": {"upn": getattr(args, "upn", "")}}),
        "sweep": ("POST", "/sweep", {}),
        "audit": ("GET", "/audit", {"params": {"upn": getattr(args, "upn", "")}}),
    }
    method, path, options = calls[args.action]
    try:
        response = httpx.request(method, root + path, headers={"X-API-KEY": key}, timeout=60, **options)
    except httpx.HTTPError as e:
        print(f"memory-core operator: cannot reach {base}: {e}", file=sys.stderr)
        return exit_code_for(503)
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    if response.status_code >= 400:
        message = body.get("error", {}).get("message", response.text[:200]) if isinstance(body, dict) else response.text
        print(f"memory-core operator: {response.status_code}: {message}", file=sys.stderr)
        return exit_code_for(response.status_code)
    if args.action == "list":
        rows = body.get("requests", [])
        for r in rows:
            target = r.get("entry_id") or r.get("scope") or "all"
            print(f"{r['id']}  {r['status']:<9} {r['kind']:<6} {r['upn']}  {target}  requested {r['requested_on']}")
        print(f"{len(rows)} request(s)")
    else:
        print(json.dumps(body, indent=2))
    return 0
