"""The file view of memory under custody: one memory with two views, secrets, audit, races, agent scope.

A real SQLite store and the real secret scanner; the race test interleaves two real
threads at the commit point.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.audit import AuditAction
from memory_core.domain.errors import HiddenText, InvalidInput, NotFound, SecretDetected
from memory_core.domain.file_audits import KIND as FILE_AUDITS
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.file_retirements import KIND as RETIREMENTS
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import ProfileKey, Scope, Share, sha256_hex
from memory_core.domain.records import Partition, Record
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.secrets import SecretScanner

ALEX = Caller(upn="alex@contoso.com")
AGENT = AgentContext("/instances/i/agents/travel", "Travel")
INSTANCE = "inst"


@pytest.fixture(params=[DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    store = SqliteMemoryStore(tmp_path / "files.sqlite3")
    yield MemoryService(store, deletion_mode=request.param, scanner=SecretScanner())
    store.close()


def run(service: MemoryService, agent: AgentContext | None = None, **command: object) -> str:
    return MemoryFiles(service).execute(ALEX, INSTANCE, agent, command).text


def test_a_file_is_an_entry_of_the_users_memory(service: MemoryService) -> None:
    run(service, command="create", path="/memories/prefs.md", file_text="prefers aisle seats\n")
    document = service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown
    assert "prefers aisle seats" in document and "reason: memory file /memories/prefs.md" in document
    assert [hit.entry.content_markdown for hit in service.search(ALEX, INSTANCE, Scope.USER, None, "aisle")] == [
        "prefers aisle seats\n"]


def test_an_append_is_a_file_under_appended(service: MemoryService) -> None:
    view = service.append(ALEX, INSTANCE, Scope.USER, None, "- likes window views")
    listing = run(service, command="view", path="/memories")
    assert f"/memories/appended/{view.entry_id}.md" in listing
    assert "- likes window views" in run(service, command="view", path=f"/memories/appended/{view.entry_id}.md")


def test_a_file_made_at_an_appended_path_while_its_entry_was_held_keeps_the_path_after_a_rejection(
    tmp_path: Path,
) -> None:
    """The model makes appended/<E>.md while E is hidden by a pending forget; the operator rejects the forget. The
    model's file stays at its path (a delete there forgets the model's file, not E), and E shows beside it."""
    store = SqliteMemoryStore(tmp_path / "shadow.sqlite3")
    service = MemoryService(store, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    entry_id = service.append(ALEX, INSTANCE, Scope.USER, None, "- the entry kept").entry_id
    pending = service.forget(ALEX, INSTANCE, str(entry_id))
    assert isinstance(pending, PendingDeletion)
    path = f"/memories/appended/{entry_id}.md"
    run(service, command="create", path=path, file_text="- the model's own file\n")
    service.custody.reject("olivia@contoso.com", INSTANCE, pending.request_id, "keep it")
    assert "- the model's own file" in run(service, command="view", path=path)
    assert "- the entry kept" in run(service, command="view", path=f"/memories/appended/{entry_id}-1.md")
    answer = MemoryFiles(service).execute(ALEX, INSTANCE, None, {"command": "delete", "path": path})
    (request,) = [r for r in service.custody.list(INSTANCE) if r.id in answer.pending_request_ids]
    assert request.entry_id != entry_id
    assert "- the entry kept" in service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown
    store.close()


def test_editing_an_append_keeps_one_version(service: MemoryService) -> None:
    view = service.append(ALEX, INSTANCE, Scope.USER, None, "- likes window views")
    path = f"/memories/appended/{view.entry_id}.md"
    run(service, command="str_replace", path=path, old_str="window views", new_str="window views and legroom")
    document = service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown
    assert document.count("likes window views") == 1 and "legroom" in document


@pytest.mark.parametrize("mode", list(DeletionMode))
@pytest.mark.parametrize("edit", ["insert", "str_replace", "move to agent memory"])
def test_editing_a_team_shared_append_withdraws_its_team_copy(tmp_path: Path, mode: DeletionMode, edit: str) -> None:
    """The memory tool stores a private version and erases the one it supersedes, whose whole text it keeps; that
    version's team copy goes with it, so no copy outlives the file: once the file is forgotten (approved, where
    deletion waits for an operator), teammates read nothing of it."""
    store = SqliteMemoryStore(tmp_path / "team.sqlite3")
    service = MemoryService(store, deletion_mode=mode)
    team = MemoryService(store, default_sharing=SharingPolicy.TEAM)
    bob = Caller(upn="bob@contoso.com")
    view = service.append(ALEX, INSTANCE, Scope.USER, None, "- salary band L7", WriteOptions(share=Share.TEAM))
    assert "salary band" in team.get(bob, INSTANCE, Scope.COMBINED, AGENT).content_markdown
    path = f"/memories/appended/{view.entry_id}.md"
    files = MemoryFiles(service)
    command: dict[str, object] = {
        "insert": {"command": "insert", "path": path, "insert_line": 0, "insert_text": "note:"},
        "str_replace": {"command": "str_replace", "path": path, "old_str": "L7", "new_str": "L7 (2026)"},
        "move to agent memory": {"command": "rename", "old_path": path, "new_path": "/memories/agent/band.md"},
    }[edit]
    files.execute(ALEX, INSTANCE, AGENT, command)
    assert "salary band" not in team.get(bob, INSTANCE, Scope.COMBINED, AGENT).content_markdown
    assert "salary band" in service.get(ALEX, INSTANCE, Scope.COMBINED, AGENT).content_markdown
    (shared,) = store.load([ProfileKey(INSTANCE, ALEX.upn, Scope.USER).shared()])
    assert shared.entries == []
    listing = files.execute(ALEX, INSTANCE, AGENT, {"command": "view", "path": "/memories"}).text
    edited = next(line.split("\t")[1] for line in listing.splitlines() if line.endswith(".md"))
    answer = files.execute(ALEX, INSTANCE, AGENT, {"command": "delete", "path": edited})
    for request_id in answer.pending_request_ids:
        service.custody.approve("operator", INSTANCE, request_id)
    service.custody.sweep()
    assert "salary band" not in service.get(ALEX, INSTANCE, Scope.COMBINED, AGENT).content_markdown
    assert "salary band" not in team.get(bob, INSTANCE, Scope.COMBINED, AGENT).content_markdown
    store.close()


def test_agent_memory_is_mounted_at_memories_agent(service: MemoryService) -> None:
    run(service, AGENT, command="create", path="/memories/agent/trips.md", file_text="Lisbon in May\n")
    assert "Lisbon" in service.get(ALEX, INSTANCE, Scope.AGENT, AGENT).content_markdown
    assert "Lisbon" not in service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown
    other = AgentContext("/instances/i/agents/benefits", "Benefits")
    assert "agent/" not in run(service, other, command="view", path="/memories")
    # Moving a file out of the agent's folder stores its text in user memory; nothing is erased.
    answer = run(service, AGENT, command="rename", old_path="/memories/agent/trips.md", new_path="/memories/trips.md")
    assert answer == "Successfully renamed /memories/agent/trips.md to /memories/trips.md"
    assert "Lisbon" in service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown
    assert "Lisbon" not in service.get(ALEX, INSTANCE, Scope.AGENT, AGENT).content_markdown


def test_the_agent_folder_needs_an_agent(service: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="names no agent"):
        run(service, command="create", path="/memories/agent/x.md", file_text="x")


def test_a_secret_is_refused_and_nothing_is_stored(service: MemoryService) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with pytest.raises(SecretDetected):
        run(service, command="create", path="/memories/keys.md", file_text=f"github token {token}\n")
    with pytest.raises(NotFound):
        run(service, command="view", path="/memories/keys.md")
    run(service, command="create", path="/memories/ok.md", file_text="fine\n")
    with pytest.raises(SecretDetected):
        run(service, command="str_replace", path="/memories/ok.md", old_str="fine", new_str=token)
    assert "fine" in run(service, command="view", path="/memories/ok.md")
    assert token not in service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown


def test_every_change_is_audited_with_content_hashes(service: MemoryService) -> None:
    run(service, command="create", path="/memories/a.md", file_text="zebra\n")
    run(service, command="insert", path="/memories/a.md", insert_line=1, insert_text="okapi")
    run(service, command="rename", old_path="/memories/a.md", new_path="/memories/b.md")
    run(service, command="delete", path="/memories/b.md")
    events = [e for e in service.audit_trail(INSTANCE, ALEX.upn) if e.action is AuditAction.MEMORY_FILE]
    details = [e.detail or "" for e in events]
    assert [d.split(" ")[0] for d in details if not d.startswith("superseded")] == [
        "create", "insert", "rename", "delete"]
    create, insert = (e for e in events if (e.detail or "").startswith(("create", "insert")))
    assert create.content_sha256 == sha256_hex("zebra\n") and insert.content_sha256 == sha256_hex("zebra\nokapi\n")
    assert all("zebra" not in d and "okapi" not in d for d in details)  # hashes and paths, never the content


def test_a_refused_rename_audits_the_directories_it_made(service: MemoryService) -> None:
    # As the reference does, a rename of a missing file makes the destination's parents before it fails: they stay,
    # and like every change they leave an event (a path's hash, no text).
    run(service, command="create", path="/memories/kept/a.md", file_text="zebra\n")
    with pytest.raises(NotFound, match="does not exist"):
        run(service, command="rename", old_path="/memories/missing.md", new_path="/memories/kept/x/y/b.md")
    assert "/memories/kept/x/y/" in run(service, command="view", path="/memories/kept")
    events = [e for e in service.audit_trail(INSTANCE, ALEX.upn) if e.action is AuditAction.MEMORY_FILE]
    refused = [e for e in events if (e.detail or "").startswith("rename")]
    assert [e.detail for e in refused] == [
        f"rename refused, made directory path-sha256:{sha256_hex('/memories/kept/' + d)}" for d in ("x", "x/y")]
    assert all(e.entry_id is None and e.content_sha256 is None for e in refused)
    # Refused with nothing made (its parents exist), it leaves none.
    with pytest.raises(NotFound):
        run(service, command="rename", old_path="/memories/missing.md", new_path="/memories/kept/x/c.md")
    events = [e for e in service.audit_trail(INSTANCE, ALEX.upn) if e.action is AuditAction.MEMORY_FILE]
    assert len(events) == len(refused) + 1


def test_the_file_index_stays_within_its_bound_whatever_the_directories(service: MemoryService) -> None:
    """Directories are not files, but every one is a name in the user's one index record: a rename of a missing file
    to a 1,000-character path makes about 500 of them. The record stays under 1 MiB (an item of Cosmos DB holds 2 MB):
    past it a command is refused and changes nothing, and deleting makes room again."""
    from memory_core.domain.memory_file_commits import MAX_INDEX_BYTES

    deep = "/a" * 495
    made = 0
    with pytest.raises(InvalidInput, match="take at most 1 MiB") as full:
        while made < 100:
            with pytest.raises(NotFound):
                run(service, command="rename", old_path="/memories/gone.md", new_path=f"/memories/d{made}{deep}/x.md")
            made += 1
    assert full.value.code == "file_index_full" and 2 < made < 100
    listing = run(service, command="view", path="/memories")
    assert f"/memories/d{made - 1}/" in listing and f"/memories/d{made}/" not in listing
    with pytest.raises(InvalidInput, match="take at most 1 MiB"):
        run(service, command="create", path=f"/memories/d{made}{deep}/x.md", file_text="x\n")
    index = service.store.get_record(Partition(INSTANCE, ALEX.upn), INDEX_KIND, INDEX_ID)
    assert index is not None and len(json.dumps(index.data)) <= MAX_INDEX_BYTES
    with pytest.raises(NotFound):  # nothing of the refused create was stored
        run(service, command="view", path=f"/memories/d{made}{deep}/x.md")
    run(service, command="delete", path="/memories/d0")
    run(service, command="create", path=f"/memories/d{made}{deep}/x.md", file_text="x\n")


def test_an_index_stored_past_the_bound_still_takes_what_shrinks_it(service: MemoryService) -> None:
    """An index stored before the bound may hold more than 1 MiB of directories: a delete or a rename that does not
    grow it goes through, and a command that grows it is refused."""
    run(service, command="create", path="/memories/a.md", file_text="x\n")
    partition = Partition(INSTANCE, ALEX.upn)
    index = service.store.get_record(partition, INDEX_KIND, INDEX_ID)
    assert index is not None
    index.data["user"]["dirs"] = [f"old-{n:05d}-" + "d" * 200 for n in range(5_000)]  # as stored before: a list
    service.store.put_record(Record(partition, INDEX_KIND, INDEX_ID, index.data, index.etag))
    with pytest.raises(InvalidInput, match="take at most 1 MiB"):
        run(service, command="create", path="/memories/b.md", file_text="\n")
    run(service, command="rename", old_path="/memories/a.md", new_path="/memories/c.md")
    run(service, command="delete", path="/memories/old-00000-" + "d" * 200)
    run(service, command="delete", path="/memories/c.md")
    assert "/memories/c.md" not in run(service, command="view", path="/memories")


@pytest.mark.parametrize("blank", ["\u2003 \t\u3000", "\x1c\x1d\x1e\x1f", " \x85 ", "\u2028", "\x0b\x0c", " " * 257])
def test_a_whitespace_only_file_holds_a_few_ascii_blanks_at_most(service: MemoryService, blank: str) -> None:
    """No person sees a whitespace-only file (it is no entry) and a model reads it: Unicode's other spaces and
    separators, or more than 256 blanks, are how whitespace steganography would write bits there. Refused, nothing
    stored; an empty file and a few blank lines are kept."""
    with pytest.raises(InvalidInput, match="holds at most 256 spaces, tabs and line breaks"):
        run(service, command="create", path="/memories/blank.md", file_text=blank)
    with pytest.raises(NotFound):
        run(service, command="view", path="/memories/blank.md")
    for kept in ("", "\n", " \t\r\n\n", " " * 256):
        run(service, command="create", path=f"/memories/kept-{len(kept)}.md", file_text=kept)
        assert run(service, command="view", path=f"/memories/kept-{len(kept)}.md").startswith("Here's the content")
    run(service, command="create", path="/memories/edited.md", file_text="x\n")
    with pytest.raises(InvalidInput, match="holds at most 256"):  # an edit that leaves only such blanks
        run(service, command="str_replace", path="/memories/edited.md", old_str="x", new_str="\u3000")


def test_a_deletion_follows_the_deletion_mode(service: MemoryService) -> None:
    run(service, command="create", path="/memories/old.md", file_text="old plan\n")
    files = MemoryFiles(service)
    answer = files.execute(ALEX, INSTANCE, None, {"command": "delete", "path": "/memories/old.md"})
    assert "old plan" not in service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown  # hidden at once
    pending = service.custody.list(INSTANCE)
    if answer.pending_request_ids:
        assert "pending operator approval" in answer.text
        assert [r.id for r in pending] == list(answer.pending_request_ids)
        # The operator rejects: the file comes back where it was.
        service.custody.reject("olivia", INSTANCE, answer.pending_request_ids[0], "keep it")
        assert "old plan" in run(service, command="view", path="/memories/appended/" + _only_entry(service) + ".md")
    else:
        assert answer.text == "Successfully deleted /memories/old.md" and pending == []


def _only_entry(service: MemoryService) -> str:
    (entry,) = service.entries(ALEX, INSTANCE, Scope.USER, None)
    return entry.id


def test_a_clear_hides_files_and_its_rejection_restores_them(service: MemoryService) -> None:
    run(service, command="create", path="/memories/keep.md", file_text="keep me\n")
    outcome = service.clear(ALEX, INSTANCE, Scope.USER, None, confirm=True)
    with pytest.raises(NotFound):
        run(service, command="view", path="/memories/keep.md")
    run(service, command="create", path="/memories/other.md", file_text="written meanwhile\n")
    if isinstance(outcome, PendingDeletion):
        service.custody.reject("olivia", INSTANCE, outcome.request_id, "mistake")
        assert "keep me" in run(service, command="view", path="/memories/keep.md")
        assert "written meanwhile" in run(service, command="view", path="/memories/other.md")


def test_a_command_that_loses_a_race_is_reapplied_not_lost(service: MemoryService) -> None:
    """Thread A reads, then waits at its commit while thread B commits; A retries on B's result."""
    run(service, command="create", path="/memories/race.md", file_text="a\nb\n")
    at_commit, b_done = threading.Event(), threading.Event()

    def pause_once() -> None:
        if not at_commit.is_set():
            at_commit.set()
            b_done.wait(10)

    slow = MemoryFiles(service, on_commit=pause_once, writers=None)  # racing B, not waiting for it
    answers: list[str] = []
    thread = threading.Thread(target=lambda: answers.append(slow.execute(
        ALEX, INSTANCE, None, {"command": "str_replace", "path": "/memories/race.md", "old_str": "a",
                               "new_str": "a (edited by A)"}).text))
    thread.start()
    assert at_commit.wait(10)
    run(service, command="insert", path="/memories/race.md", insert_line=2, insert_text="c (inserted by B)")
    b_done.set()
    thread.join(10)
    assert answers and answers[0].startswith("The memory file has been edited.")
    content = run(service, command="view", path="/memories/race.md")
    assert "a (edited by A)" in content and "c (inserted by B)" in content
    withdrawn = [e for e in service.audit_trail(INSTANCE, ALEX.upn) if (e.detail or "").startswith("withdrawn")]
    assert len(withdrawn) == 1
    document = service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown
    assert document.count("c (inserted by B)") == 1


def test_operator_agent_settings_apply(service: MemoryService) -> None:
    """A disabled agent gets nothing; a caller outside the agent's groups gets user memory only."""
    from memory_core.domain.agent_settings import AgentSettings
    from memory_core.domain.errors import Forbidden

    run(service, AGENT, command="create", path="/memories/agent/a.md", file_text="agent fact\n")
    service.agent_settings.put(INSTANCE, AgentSettings(AGENT.object_id, allowed_group_ids=("g-travel",)),
                               actor="operator")
    outsider = Caller(upn="alex@contoso.com", group_ids=("g-other",))
    files = MemoryFiles(service)
    listing = files.execute(outsider, INSTANCE, AGENT, {"command": "view", "path": "/memories"}).text
    assert "agent/" not in listing
    with pytest.raises(Forbidden):
        files.execute(outsider, INSTANCE, AGENT, {"command": "view", "path": "/memories/agent/a.md"})
    member = Caller(upn="alex@contoso.com", group_ids=("g-travel",))
    assert "agent fact" in files.execute(member, INSTANCE, AGENT, {"command": "view", "path": "/memories/agent/a.md"}).text
    service.agent_settings.put(INSTANCE, AgentSettings(AGENT.object_id, enabled=False),
                               actor="operator")
    with pytest.raises(Forbidden):
        files.execute(member, INSTANCE, AGENT, {"command": "view", "path": "/memories"})


def test_a_secret_in_a_file_name_is_refused(service: MemoryService) -> None:
    """Named as the command names it: the model is told which argument to change, not about a "content"."""
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with pytest.raises(SecretDetected, match=r"^path looks like it contains a secret"):
        run(service, command="create", path=f"/memories/{token}.md", file_text="x\n")
    run(service, command="create", path="/memories/plain.md", file_text="x\n")
    with pytest.raises(SecretDetected, match=r"^new_path looks like it contains a secret"):
        run(service, command="rename", old_path="/memories/plain.md", new_path=f"/memories/{token}.md")
    assert token not in run(service, command="view", path="/memories")


def test_a_secret_a_name_becomes_once_stored_is_refused(service: MemoryService) -> None:
    """Names are stored NFC, where the Kelvin sign U+212A is "K": "A\u212aIA..." would be listed as an AWS access key
    id. A rename (no entry, so no reason) and a whitespace-only create (stored in the index) are screened as stored."""
    kelvin = "A\u212aIAZZZZQWERTYUIOPAR"
    run(service, command="create", path="/memories/plain.md", file_text="x\n")
    with pytest.raises(SecretDetected, match=r"^new_path looks like it contains a secret"):
        run(service, command="rename", old_path="/memories/plain.md", new_path=f"/memories/{kelvin}")
    with pytest.raises(SecretDetected, match=r"^path looks like it contains a secret"):
        run(service, command="create", path=f"/memories/{kelvin}", file_text=" \n")
    assert "AKIA" not in run(service, command="view", path="/memories")


def test_a_secret_split_across_a_names_segments_is_refused(service: MemoryService) -> None:
    """"/" ends a detector's token: "AKIAIOSF/ODNN7EXAMPLE.md" stored an AWS access key id as a directory and a file
    name, listed whole. A new name is screened with its segments joined too."""
    with pytest.raises(SecretDetected, match=r"^path looks like it contains a secret"):
        run(service, command="create", path="/memories/AKIAIOSF/ODNN7EXAMPLE.md", file_text="x\n")
    run(service, command="create", path="/memories/plain.md", file_text="x\n")
    with pytest.raises(SecretDetected, match=r"^new_path looks like it contains a secret"):
        run(service, command="rename", old_path="/memories/plain.md", new_path="/memories/AKIA/IOSFODNN7/EXAMPLE")
    listing = run(service, command="view", path="/memories")
    assert "AKIA" not in listing and "ODNN7" not in listing


def test_a_directory_rename_screens_the_paths_of_what_it_moves(service: MemoryService) -> None:
    """A rename brings every moved file's and directory's path into being, not only new_path: "trip" holding
    "ODNN7EXAMPLE.md", renamed to "AKIAIOSF", would store "AKIAIOSF/ODNN7EXAMPLE.md", an AWS access key id that a create
    of that path is refused for. Each resulting path is screened as a create's is; a hit refuses the whole rename
    with create's error (naming new_path), audited, and moves nothing."""
    run(service, command="create", path="/memories/trip/ODNN7EXAMPLE.md", file_text="x\n")
    run(service, command="create", path="/memories/trip/plain.md", file_text="y\n")
    run(service, command="create", path="/memories/walk/ODNN7EXAMPLE/gone.md", file_text="z\n")
    run(service, command="delete", path="/memories/walk/ODNN7EXAMPLE/gone.md")  # leaves the directory, empty
    before = run(service, command="view", path="/memories")
    for old in ("/memories/trip", "/memories/walk"):
        with pytest.raises(SecretDetected, match=r"^new_path looks like it contains a secret"):
            run(service, command="rename", old_path=old, new_path="/memories/AKIAIOSF")
        with pytest.raises(SecretDetected, match=r"^new_path looks like it contains a secret"):
            run(service, command="rename", old_path=old, new_path="/memories/agent/AKIAIOSF", agent=AGENT)
    assert run(service, command="view", path="/memories") == before
    rejected = [event.detail for event in service.audit_trail(INSTANCE, ALEX.upn)
                if event.action.value == "write_rejected"]
    assert len(rejected) == 4 and all(detail.startswith("secret_detected in new_path") for detail in rejected)
    assert not [event for event in service.audit_trail(INSTANCE, ALEX.upn)
                if event.action.value == "memory_file" and (event.detail or "").startswith("rename")]
    run(service, command="rename", old_path="/memories/trip", new_path="/memories/AKIA")  # no key id: moved
    assert "\t/memories/AKIA/ODNN7EXAMPLE.md" in run(service, command="view", path="/memories")


def test_hidden_text_in_a_file_name_is_refused_naming_the_argument(service: MemoryService) -> None:
    """A tag character in a new file's name, an override in a new name: refused as hidden text, naming the
    command's argument, in the answer and in the audited rejection; nothing is created or renamed."""
    with pytest.raises(HiddenText, match=r"^path holds invisible Unicode tag characters \(U\+E006F\)"):
        run(service, command="create", path="/memories/a" + chr(0xE006F) + ".md", file_text="x\n")
    run(service, command="create", path="/memories/plain.md", file_text="x\n")
    with pytest.raises(HiddenText, match=r"^new_path holds a bidirectional override \(U\+202E\)"):
        run(service, command="rename", old_path="/memories/plain.md", new_path="/memories/b\u202e.md")
    assert run(service, command="view", path="/memories").endswith("\n4K\t/memories\n2B\t/memories/plain.md")
    rejected = [event.detail for event in service.audit_trail(INSTANCE, ALEX.upn)
                if event.action.value == "write_rejected"]
    assert rejected == ["hidden_text in path: U+E006F", "hidden_text in new_path: U+202E"]


def test_an_invisible_character_in_a_new_name_is_refused_and_an_old_such_name_can_be_cleaned_up(
        service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    """create and rename refuse "a\u200b.md" and store nothing; a name stored before the rule (made here by
    lifting the rules of names and of hidden text, as an earlier release stored it) can still be read, renamed to a
    visible name and deleted."""
    from memory_core.domain import memory_files, new_entries
    from memory_core.domain.memory_paths import parse_path

    run(service, command="create", path="/memories/a.md", file_text="visible\n")
    for command in ({"command": "create", "path": "/memories/a\u200b.md", "file_text": "hidden twin\n"},
                    {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b\u2066.md"}):
        with pytest.raises(InvalidInput, match=r"invisible formatting characters \(U\+20"):
            run(service, **command)
    # A name is screened as content first: an override, which shows a name backwards, is hidden text there.
    with pytest.raises(HiddenText, match=r"^new_path holds a bidirectional override \(U\+202E\)"):
        run(service, command="rename", old_path="/memories/a.md", new_path="/memories/b\u202e.md")
    assert run(service, command="view", path="/memories").endswith("\n4K\t/memories\n8B\t/memories/a.md")
    assert "hidden twin" not in service.get(ALEX, INSTANCE, Scope.USER, None).content_markdown

    monkeypatch.setattr(memory_files, "parse_new_path", parse_path)
    monkeypatch.setattr(new_entries, "hidden_in", lambda content, beside, name="content": None)  # names its path
    run(service, command="create", path="/memories/old\u202e.md", file_text="stored long ago\n")
    monkeypatch.undo()
    assert "stored long ago" in run(service, command="view", path="/memories/old\u202e.md")
    run(service, command="rename", old_path="/memories/old\u202e.md", new_path="/memories/old.md")
    assert "\u202e" not in run(service, command="view", path="/memories")
    run(service, command="delete", path="/memories/old.md")
    assert "old.md" not in run(service, command="view", path="/memories")


def test_the_audit_trail_keeps_no_file_names(service: MemoryService) -> None:
    run(service, command="create", path="/memories/diagnosis-zebra.md", file_text="x\n")
    run(service, command="delete", path="/memories/diagnosis-zebra.md")
    events = service.audit_trail(INSTANCE, ALEX.upn)
    assert all("zebra" not in (e.detail or "") for e in events)
    assert any(f"path-sha256:{sha256_hex('/memories/diagnosis-zebra.md')}" in (e.detail or "") for e in events)


class _DyingStore:
    """Delegates to a real store until ``die_at`` names a call; from then on every write fails,
    as if the process had died there (nothing after it reaches the store)."""

    WRITES = frozenset({"append", "put_record", "create_record", "delete_entries", "save_profile", "delete_record", "append_with_records", "erase_expired_records"})

    def __init__(self, store: SqliteMemoryStore, die_at: str, after: int = 0) -> None:
        self._store, self._die_at, self._left, self.dead = store, die_at, after, False

    def __getattr__(self, name: str) -> object:
        real = getattr(self._store, name)
        if name not in self.WRITES:
            return real

        def write(*args: object, **kwargs: object) -> object:
            if not self.dead and name == self._die_at and not (
                name == "put_record" and args and getattr(args[0], "kind", "") in ("audit", RETIREMENTS, FILE_AUDITS)
            ):
                if self._left == 0:
                    self.dead = True
                else:
                    self._left -= 1
            if self.dead:
                raise RuntimeError(f"crashed at {name}")
            return real(*args, **kwargs)

        return write


@pytest.mark.parametrize("die_at", ["put_record", "delete_entries"])
def test_a_crash_between_writes_loses_nothing(tmp_path: Path, die_at: str) -> None:
    """A crash at the index write (put_record; the command's journals before it are written) or before the
    old version goes (delete_entries): afterwards the file reads as one of its two versions and no text is lost; a
    version no file names shows under /memories/appended/, as docs/memory-tool.md says, until the sweep withdraws an
    unpublished one (tests/contract/test_memory_file_withdrawals.py) or retires an old one
    (tests/contract/test_memory_file_retirements.py)."""
    real = SqliteMemoryStore(tmp_path / "crash.sqlite3")
    healthy = MemoryService(real, deletion_mode=DeletionMode.IMMEDIATE, scanner=SecretScanner())
    run(healthy, command="create", path="/memories/plan.md", file_text="first line\n")
    dying = _DyingStore(real, die_at)
    crashing = MemoryService(dying, deletion_mode=DeletionMode.IMMEDIATE, scanner=SecretScanner())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="crashed"):
        run(crashing, command="insert", path="/memories/plan.md", insert_line=1, insert_text="second line")
    after = MemoryService(real, deletion_mode=DeletionMode.IMMEDIATE, scanner=SecretScanner())
    shown = run(after, command="view", path="/memories/plan.md")
    document = after.get(ALEX, INSTANCE, Scope.USER, None).content_markdown
    assert "first line" in shown and "first line" in document
    listing = run(after, command="view", path="/memories")
    if die_at == "put_record":
        assert "second line" not in shown and "/memories/appended/" in listing  # the unpublished version
    else:
        assert "second line" in shown and "/memories/appended/" in listing  # the old version, not yet retired
    assert "second line" in document
    real.close()
