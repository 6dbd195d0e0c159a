"""A continuation whose position holds a lone surrogate (``"\\ud800"`` in the token's JSON), on every paged listing,
over real sockets against ``serve``, on each store.

Before: ``paging.decode_token`` answered such a position, and the store then raised ``UnicodeEncodeError`` binding it:
500. Now each listing answers 400 ``invalid_continuation``. Each token names its listing rightly: the same token with
a plain position is taken (200), so the 400 is the surrogate's.
"""

from __future__ import annotations

import httpx
import pytest

from memory_core.domain import hidden_text_scan, orphan_holds
from memory_core.domain.custody_sweep import SWEEP_LISTING
from memory_core.domain.paging import encode_token
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer

SURROGATE = "\ud800"
ENTRY_TIME = "2026-01-02T03:04:05.000000+00:00"
AGENT_HASH = "0" * 32

#: (method, route under the instance, query, listing, plain position): every paged listing of the API.
LISTINGS = [
    ("GET", "/memory/entries", {"scope": "user"}, "entries:user", ["0", ENTRY_TIME, "a"]),
    ("GET", "/memory/audit", {}, "audit:oldest", ["a"]),
    ("GET", "/memory/deletions", {}, "own-deletions:all", ["a"]),
    ("GET", "/memory/agents", {}, "memory-agents", [AGENT_HASH]),
    ("GET", "/operator/deletions", {}, "deletions:all", ["a"]),
    ("GET", "/operator/audit", {"upn": "alex@contoso.com"}, "audit:oldest", ["a"]),
    ("GET", "/operator/agents", {}, "agent-settings", ["a"]),
    ("GET", "/operator/agent-settings/audit", {}, "audit:oldest", ["a"]),
    ("GET", "/operator/legacy-imports/audit", {}, "audit:oldest", ["a"]),
    ("GET", "/operator/hidden-text", {}, hidden_text_scan.LISTING, ["a"]),
    ("GET", "/operator/orphan-holds", {}, orphan_holds.LISTING, ["a"]),
    ("POST", "/operator/sweep", {}, SWEEP_LISTING, [ENTRY_TIME, "a"]),
]


def _surrogate_in(position: list[str]) -> list[str]:
    """``position`` with a lone surrogate in its last part (where a position names an id or an owner)."""
    return [*position[:-1], position[-1] + SURROGATE]


@pytest.mark.parametrize(("method", "route", "query", "listing", "position"), LISTINGS,
                         ids=[f"{m} {r}" for m, r, *_ in LISTINGS])
def test_a_continuation_holding_a_lone_surrogate_is_400_on_every_paged_listing(
    server: RunningServer, instance_id: str, method: str, route: str, query: dict[str, str], listing: str,
    position: list[str],
) -> None:
    operator = route.startswith("/operator")
    with server.client(None if operator else "alex@contoso.com", key=OPERATOR_KEY if operator else USER_KEY) as http:

        def send(at: list[str]) -> httpx.Response:
            return http.request(method, f"/instances/{instance_id}{route}",
                                params={**query, "continuation": encode_token(listing, at)})

        plain, surrogate = send(position), send(_surrogate_in(position))
    assert plain.status_code == 200, plain.text
    assert (surrogate.status_code, surrogate.json()["error"]["code"]) == (400, "invalid_continuation"), surrogate.text
