"""The secret screen covers everything a write stores, not its content alone.

A read shows an entry's reason, agent name and session id in its heading, and a
listing every field, so a secret in any of them would be kept and shown like one in
the content. On the real SQLite store with the real scanner.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.composition import ScannerOnFirstScan
from memory_core.domain.errors import HiddenText, InvalidInput, SecretDetected
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope, Share
from memory_core.domain.new_entries import stored_beside
from memory_core.domain.service import MemoryService, WriteOptions
from memory_core.domain.views import ImportMode
from tests.secrets.corpus.fake_secrets import FAKE_SECRETS
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com", name="Alex", user_name="alex")
CARD = "4111 1111 1111 1111"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
PEM_LINES = next(s.text for s in FAKE_SECRETS if "PRIVATE KEY" in s.text).split("\n")[1:]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store = SqliteMemoryStore(tmp_path / "m.sqlite3")
    yield MemoryService(store, clock=TickingClock(datetime(2026, 12, 5, tzinfo=UTC)), scanner=ScannerOnFirstScan())
    store.close()


def _refused(service: MemoryService, options: WriteOptions, content: str = "- likes green tea") -> SecretDetected:
    with pytest.raises(SecretDetected) as refused:
        service.append(ALEX, "i", Scope.USER, None, content, options)
    return refused.value


@pytest.mark.parametrize(
    ("field", "options", "secret"),
    [
        ("reason", WriteOptions(reason=f"user said: my card is {CARD}", operation_id="op-1"), CARD),
        ("agent_name", WriteOptions(agent_name=f"bot token={GITHUB_TOKEN}", reason="from the chat"), GITHUB_TOKEN),
        ("session_id", WriteOptions(session_id=GITHUB_TOKEN, reason="from the chat"), GITHUB_TOKEN),
        ("operation_id", WriteOptions(operation_id=GITHUB_TOKEN, session_id="s-1"), GITHUB_TOKEN),
        ("tags", WriteOptions(tags=("travel", GITHUB_TOKEN), agent_name="Benefits Assistant"), GITHUB_TOKEN),
    ],
    ids=["reason", "agent_name", "session_id", "operation_id", "tags"],
)
def test_a_secret_beside_the_content_is_refused_and_named(
    service: MemoryService, field: str, options: WriteOptions, secret: str
) -> None:
    """The write is refused naming that field alone (another, ordinary, beside it); nothing is stored; the
    audit names the field, never the secret."""
    refused = _refused(service, options)
    assert str(refused).startswith(f"{field} looks like it contains a secret")
    assert secret[:8] not in str(refused)
    assert service.entries(ALEX, "i", Scope.USER, None) == []
    (event,) = service.audit_trail("i", ALEX.upn)
    assert event.action.value == "write_rejected" and event.detail is not None
    assert event.detail.startswith(f"secret_detected in {field}: ")
    assert secret[:8] not in str(event.to_data())


@pytest.mark.parametrize("write", ["append", "legacy import"])
def test_the_calling_agents_own_name_is_screened_like_the_writes(service: MemoryService, write: str) -> None:
    """An agent scope's entry keeps the calling agent's name when the write names none (the memory tool's
    agentName, a legacy import's agent_name): a secret there is refused naming agent_name, nothing stored."""
    agent = AgentContext("/agents/helpdesk", f"Helpdesk {GITHUB_TOKEN}")
    with pytest.raises(SecretDetected) as refused:
        if write == "append":
            service.append(ALEX, "i", Scope.AGENT, agent, "- prefers email", WriteOptions(reason="from the chat"))
        else:
            service.import_legacy("operator-key", "i", Scope.AGENT, agent, "- prefers email")
    assert str(refused.value).startswith("agent_name looks like it contains a secret")
    assert service.entries(ALEX, "i", Scope.AGENT, agent) == []
    assert service.get(ALEX, "i", Scope.AGENT, agent).content_markdown == ""
    service.append(ALEX, "i", Scope.AGENT, AgentContext("/agents/helpdesk", "Helpdesk"), "- prefers email")
    assert service.entries(ALEX, "i", Scope.AGENT, agent)[0].agent_name == "Helpdesk"


def test_a_secret_in_the_content_is_named_as_before(service: MemoryService) -> None:
    refused = _refused(service, WriteOptions(reason="from the chat"), content=f"- card {CARD}")
    assert str(refused).startswith("content looks like it contains a secret")
    (event,) = service.audit_trail("i", ALEX.upn)
    assert event.detail == "secret_detected: Payment Card Number"


def test_a_secret_split_over_two_fields_names_every_field(service: MemoryService) -> None:
    """A key block whose header is the reason and whose key is the agent name: neither alone holds a secret."""
    options = WriteOptions(reason=PEM_LINES[0], agent_name="\n".join(PEM_LINES[1:]), session_id="s-1")
    refused = _refused(service, options)
    assert str(refused).startswith("reason, agent_name, session_id looks like it contains a secret (detectors: Private Key)")


def test_ordinary_provenance_is_stored(service: MemoryService) -> None:
    """What clients really send beside content passes: a memory file's reason, ids, an agent's name, tags."""
    options = WriteOptions(reason="memory file /memories/notes/2026-trip.md", agent_name="Benefits Assistant",
                           session_id="7f3a9c2e-41b2-4d7e-9a51-0c6f2b8e1d44", operation_id="op-000123",
                           tags=("travel", "preference", "2026"))
    service.append(ALEX, "i", Scope.USER, None, "- prefers aisle seats", options)
    (entry,) = service.entries(ALEX, "i", Scope.USER, None)
    assert entry.reason == options.reason and entry.session_id == options.session_id


def test_stored_beside_lists_every_non_empty_field() -> None:
    options = WriteOptions(reason="r", agent_name=None, session_id="", operation_id="o", tags=("a", "b"))
    assert stored_beside(options) == [("reason", "r"), ("operation_id", "o"), ("tags", "a\nb")]


def test_a_secret_in_the_content_and_the_agent_id_keeps_the_id_out_of_the_refusals_event(
    service: MemoryService,
) -> None:
    """The refusal's event names where the secret was and keeps no field that held one: the agent id among them,
    even when the content held one too (the content is scanned first)."""
    agent = AgentContext(f"agent-{GITHUB_TOKEN}", "Travel")
    with pytest.raises(SecretDetected) as refused:
        service.append(ALEX, "inst", Scope.AGENT, agent, f"- my token {GITHUB_TOKEN}", WriteOptions(session_id="s1"))
    assert refused.value.message.startswith("content, agent_object_id looks like it contains a secret")
    (event,) = service.audit_trail("inst", ALEX.upn)
    assert event.agent_object_id is None and event.session_id == "s1" and GITHUB_TOKEN not in str(event)


@pytest.mark.parametrize("write", ["append", "import"])
def test_only_a_legacy_import_may_store_an_entry_marked_legacy(service: MemoryService, write: str) -> None:
    """A user's own write asking for ``Share.LEGACY`` is refused before anything is stored (whatever the entry
    point); an operator's legacy import, which stores with no owner, still marks its entry legacy."""
    options = WriteOptions(share=Share.LEGACY)
    with pytest.raises(InvalidInput) as refused:
        if write == "append":
            service.append(ALEX, "i", Scope.USER, None, "- claims to be legacy", options)
        else:
            service.import_markdown(ALEX, "i", Scope.USER, None, "- claims to be legacy", ImportMode.APPEND, options)
    assert refused.value.code == "invalid_share"
    assert service.entries(ALEX, "i", Scope.USER, None) == []
    assert service.import_legacy("operator-key", "i", Scope.USER, None, "- from before").share is Share.LEGACY


_LABEL_CASES = [
    ("Helper", ("wo\u200brk",), "invalid_tag"),
    ("Helper", ("mem_type:procedural", "work\u2060"), "invalid_tag"),
    ("Hel\u200bper", (), "invalid_agent_name"),
    ("Helper\u200e", (), "invalid_agent_name"),
]


# The memory tool and a legacy import take no tags: only the agent's name cases apply to them.
@pytest.mark.parametrize(("write", "agent_name", "tags", "code"), [
    (write, *case) for write in ("append", "import", "memory tool", "legacy import") for case in _LABEL_CASES
    if not (write in ("memory tool", "legacy import") and case[1])
])
def test_a_lone_character_that_draws_nothing_in_a_tag_or_an_agents_name_is_refused(
    service: MemoryService, write: str, agent_name: str, tags: tuple[str, ...], code: str
) -> None:
    """"wo\u200brk" reads as "work" and would match other entries; "Hel\u200bper" reads as another agent's name.
    Every way a write names them (its own fields, the calling agent's name, the memory tool's) answers 400
    with the code, and nothing is stored."""
    agent = AgentContext("/agents/helper", agent_name)
    options = WriteOptions(tags=tags)
    writes = {
        "append": lambda: service.append(ALEX, "i", Scope.AGENT, agent, "- likes tea", options),
        "import": lambda: service.import_markdown(ALEX, "i", Scope.AGENT, agent, "- likes tea", ImportMode.APPEND,
                                                  options),
        "memory tool": lambda: MemoryFiles(service).execute(ALEX, "i", agent, {
            "command": "create", "path": "/memories/agent/tea.md", "file_text": "likes tea"}),
        "legacy import": lambda: service.import_legacy("operator", "i", Scope.AGENT, agent, "- likes tea"),
    }
    with pytest.raises(InvalidInput) as refused:
        writes[write]()
    assert refused.value.code == code and "draws nothing" in refused.value.message
    assert service.entries(ALEX, "i", Scope.AGENT, agent) == []


def test_a_run_in_a_tag_is_still_hidden_text_and_one_allowed_in_content_stays(service: MemoryService) -> None:
    """The screens come first: two zero-width characters in a tag are hidden text (422, audited); content keeps a
    lone joiner or non-joiner."""
    with pytest.raises(HiddenText):
        service.append(ALEX, "i", Scope.USER, None, "- likes tea", WriteOptions(tags=("wo\u200b\u200brk",)))
    stored = service.append(ALEX, "i", Scope.USER, None, "- \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
                            WriteOptions(tags=("work",)))
    assert stored.entry_id
