"""GET .../memory?maxChars over HTTP: the newest memory of a 10,000-entry memory, an exact omission report,
and the reads a budget must not change (no budget, export)."""

from __future__ import annotations

from datetime import datetime

import pytest

from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.rendering import format_time
from tests.support.local_server import RunningServer
from tests.support.seeding import CORRECTION, make_entries, memory_with_correction, seeded_server

UPN = "alex@contoso.com"
AGENT = "/instances/i/providers/FoundationaLLM.Agent/agents/benefits-assistant"


def test_the_newest_correction_of_10000_entries_reaches_the_reader(
    server: RunningServer, instance_id: str, request: pytest.FixtureRequest
) -> None:
    """A 4,000-character combined read of 10,000 user entries answers the newest one (a correction), not the
    oldest, and states exactly how many older entries were left out, their dates, and how to reach them."""
    user = memory_with_correction(ProfileKey(instance_id, UPN, Scope.USER))
    agent = make_entries(ProfileKey(instance_id, UPN, Scope.AGENT, AGENT), 3, agent_name="Benefits Assistant")
    with seeded_server(server, request, user, agent), server.client(UPN) as http:
        response = http.get(f"/instances/{instance_id}/memory",
                            params={"scope": "combined", "agentObjectId": AGENT, "maxChars": "4000"})
    assert response.status_code == 200, response.text
    body = response.json()
    content = body["content_markdown"]
    assert CORRECTION in content and "Bergen." not in content.replace(CORRECTION, "")
    assert len(content) <= 4000 and body["budget"]["chars"] == len(content)
    user_report, agent_report = body["budget"]["scopes"]
    shown = content.split("# Agent memory")[0].count("## Appended ")
    assert user_report == {
        "scope": "user", "shown_entries": shown, "omitted_entries": 10_000 - shown,
        "omitted_from": user[0].created_on.isoformat().replace("+00:00", "Z"),
        "omitted_to": user[-shown - 1].created_on.isoformat().replace("+00:00", "Z"),
        "cut_entry_id": None,
    }
    assert agent_report["shown_entries"] == 3 and agent_report["omitted_entries"] == 0
    assert body["budget"]["omitted_entries"] == 10_000 - shown
    notice = body["notice"]
    assert f"{10_000 - shown} older entries were left out" in notice
    assert format_time(user[0].created_on) in notice and format_time(user[-shown - 1].created_on) in notice
    assert "memory/search" in notice and "memory/entries" in notice


def test_without_a_budget_the_read_is_unchanged_and_export_is_complete(
    server: RunningServer, instance_id: str
) -> None:
    """No maxChars: the whole document and no budget report. Export ignores maxChars and answers everything."""
    with server.client(UPN) as http:
        for n in range(30):
            http.post(f"/instances/{instance_id}/memory/append",
                      json={"scope": "user", "content_markdown": f"- fact {n}"}).raise_for_status()
        plain = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
        exported = http.get(f"/instances/{instance_id}/memory/export", params={"scope": "user", "maxChars": "10"})
        budgeted = http.get(f"/instances/{instance_id}/memory", params={"scope": "user", "maxChars": "10"}).json()
    assert plain["budget"] is None and plain["notice"] is None and plain["content_markdown"].count("- fact ") == 30
    assert exported.status_code == 200 and exported.text == plain["content_markdown"]
    assert budgeted["content_markdown"] == "" and budgeted["budget"]["omitted_entries"] == 30


@pytest.mark.parametrize("value", ["-1", "abc", "1.5", "10000001", ""])
def test_an_unusable_budget_is_a_400(server: RunningServer, instance_id: str, value: str) -> None:
    with server.client(UPN) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user", "maxChars": value})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert "maxChars" in response.json()["error"]["message"]


def test_budget_zero_answers_only_the_report(server: RunningServer, instance_id: str) -> None:
    with server.client(UPN) as http:
        first = http.post(f"/instances/{instance_id}/memory/append",
                          json={"scope": "user", "content_markdown": "- Ünïcödé 🎉"}).json()
        body = http.get(f"/instances/{instance_id}/memory", params={"scope": "user", "maxChars": "0"}).json()
    assert body["content_markdown"] == "" and body["budget"]["omitted_entries"] == 1
    assert datetime.fromisoformat(body["budget"]["omitted_from"]) == datetime.fromisoformat(first["updated_on"])
