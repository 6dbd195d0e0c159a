"""``POST .../operator/sweep?limit=N&continuation=...``: the sweep a step at a time, on both stores.

Azure's front end ends any HTTP request at 230 s, so a caller with many approved requests sweeps in steps: each
answer says what it executed and left, how many approved requests it did not reach (``remaining``), and where the
next step goes on (``continuation``, set exactly when something remains). Without a limit the answer is the whole
sweep, as before the bound.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from memory_core.domain.paging import encode_token
from tests.support.later_release import put_unreadable_request_beside
from tests.support.local_server import OPERATOR_KEY, RunningServer


def _operator(server: RunningServer, instance: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.api}/instances/{instance}/operator", headers={"X-API-KEY": OPERATOR_KEY},
                        timeout=60)


def _approved_purges(op: httpx.Client, count: int) -> list[str]:
    """``count`` approved purges (one a user), in the order they were approved."""
    ids = []
    for _ in range(count):
        filed = op.post("/purges", json={"upn": f"steps-{uuid.uuid4().hex[:8]}@contoso.com"})
        assert filed.status_code == 202, filed.text
        request_id = filed.json()["request_id"]
        op.post(f"/deletions/{request_id}/approve").raise_for_status()
        ids.append(request_id)
    return ids


def test_a_limited_sweep_executes_at_most_its_limit_and_says_how_many_remain(
    server: RunningServer, instance_id: str,
) -> None:
    """Three approved purges, ?limit=2: the first answer executes the first two approved and says 1 remains with a
    continuation; the next, given it, executes the third and answers remaining 0 and no continuation."""
    with _operator(server, instance_id) as op:
        approved = _approved_purges(op, 3)
        first = op.post("/sweep", params={"limit": 2})
        assert first.status_code == 200, first.text
        second = op.post("/sweep", params={"limit": 2, "continuation": first.json()["continuation"]})
        statuses = {r["id"]: r["status"] for r in op.get("/deletions").json()["requests"]}
    one, two = first.json(), second.json()
    assert [r["id"] for r in one["executed"]] == approved[:2] and one["left"] == []
    assert one["remaining"] == 1 and isinstance(one["continuation"], str)
    assert [r["id"] for r in two["executed"]] == approved[2:]
    assert (two["remaining"], two["continuation"], two["left"]) == (0, None, [])
    assert statuses == dict.fromkeys(approved, "executed")


def test_a_sweep_without_a_limit_executes_everything_as_before(server: RunningServer, instance_id: str) -> None:
    """No limit: one answer executes every approved request; remaining 0, continuation null (old clients read
    executed and left only, and lose nothing)."""
    with _operator(server, instance_id) as op:
        approved = _approved_purges(op, 3)
        body = op.post("/sweep").json()
    assert [r["id"] for r in body["executed"]] == approved
    assert (body["left"], body["remaining"], body["continuation"]) == ([], 0, None)


def test_a_limit_that_reaches_every_request_answers_no_continuation(server: RunningServer, instance_id: str) -> None:
    """A limit exactly the number approved: nothing remains, so no continuation (no empty step after it)."""
    with _operator(server, instance_id) as op:
        approved = _approved_purges(op, 2)
        body = op.post("/sweep", params={"limit": 2}).json()
    assert [r["id"] for r in body["executed"]] == approved
    assert (body["remaining"], body["continuation"]) == (0, None)


def test_an_unreadable_request_is_named_by_a_walks_first_step_only(server: RunningServer, instance_id: str) -> None:
    """An approved request this release cannot read has no place in the order: the first step names it under
    ``left`` (reason unreadable), the next ones do not, and it never counts as remaining."""
    put_unreadable_request_beside(server, instance_id)
    with _operator(server, instance_id) as op:
        approved = _approved_purges(op, 2)
        first = op.post("/sweep", params={"limit": 1}).json()
        second = op.post("/sweep", params={"limit": 1, "continuation": first["continuation"]}).json()
    assert [left["request_id"] for left in first["left"]] == ["from-a-later-release"]
    assert [r["id"] for r in first["executed"]] == approved[:1] and first["remaining"] == 1
    assert second["left"] == [] and [r["id"] for r in second["executed"]] == approved[1:]
    assert (second["remaining"], second["continuation"]) == (0, None)


@pytest.mark.parametrize(("params", "code"), [
    ({"limit": "0"}, "validation_error"),
    ({"limit": "-1"}, "validation_error"),
    ({"limit": "1001"}, "validation_error"),
    ({"limit": "ten"}, "validation_error"),
    ({"limit": "2.5"}, "validation_error"),
    ({"limit": "1", "continuation": "x" * 5000}, "validation_error"),
    ({"limit": "1", "continuation": "not-a-token"}, "invalid_continuation"),
    ({"limit": "1", "continuation": encode_token("deletions", ["a"])}, "invalid_continuation"),
], ids=["zero", "negative", "too-many", "not-a-number", "fraction", "long-token", "garbage-token",
        "another-listings-token"])
def test_bad_bounds_are_refused_with_400_and_nothing_is_executed(
    server: RunningServer, instance_id: str, params: dict[str, str], code: str,
) -> None:
    """A limit outside 1-1000, or not a whole number, and a continuation no step made: 400 with the error's code,
    and the approved request is still approved."""
    with _operator(server, instance_id) as op:
        (request_id,) = _approved_purges(op, 1)
        refused = op.post("/sweep", params=params)
        status = op.get("/deletions").json()["requests"][0]
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == code
    assert (status["id"], status["status"]) == (request_id, "approved")


def test_the_openapi_documents_the_bound_and_the_answer(server: RunningServer) -> None:
    """The sweep's operation lists limit (1-1000) and continuation as optional query parameters, and its answer's
    schema has remaining and continuation."""
    spec = httpx.get(f"{server.api}/openapi.json", timeout=30).json()
    (path,) = [p for p in spec["paths"] if p.endswith("/operator/sweep")]
    operation = spec["paths"][path]["post"]
    parameters = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
    assert set(parameters) == {"limit", "continuation"}
    assert not parameters["limit"]["required"] and not parameters["continuation"]["required"]
    assert '"minimum": 1' in str(parameters["limit"]).replace("'", '"')
    assert '"maximum": 1000' in str(parameters["limit"]).replace("'", '"')
    assert {"400", "200"} <= set(operation["responses"])
    schema = spec["components"]["schemas"]["SweepResponse"]
    assert {"executed", "left", "remaining", "continuation"} <= set(schema["properties"])
