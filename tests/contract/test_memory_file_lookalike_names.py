"""Look-alike names in the memory tool, on every store: a name that differs from one beside it only in case or in
characters that look alike ("Notes.md", "\ufb01le.md", "\uff46ile.md", "n\u043etes.md" with a Cyrillic o, beside
"notes.md", "file.md") is not brought into being, a decomposed name finds the composed file, names a reader tells
apart ("x\u00b2.md" beside "x2.md") are names, and twins stored before the rule stay readable and deletable."""

from __future__ import annotations

import unicodedata
import uuid

import pytest

from memory_core.domain.errors import InvalidInput, NotFound
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.identity import Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.records import Partition, Record
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore

INSTANCE = "files-lookalikes"
CAFE_NFC = unicodedata.normalize("NFC", "café.md")
CAFE_NFD = unicodedata.normalize("NFD", "café.md")
PAYPAL_CYRILLIC = "p\u0430ypal.md"  # U+0430 CYRILLIC SMALL LETTER A

# (the name stored first, its twin) for each kind of twin.
TWINS = {
    "ligature": ("file.md", "\ufb01le.md"),  # U+FB01 LATIN SMALL LIGATURE FI
    "ligature-first": ("\ufb01le.md", "file.md"),
    "fullwidth": ("file.md", "\uff46ile.md"),  # U+FF46 FULLWIDTH LATIN SMALL LETTER F
    "case": ("notes.md", "Notes.md"),
    "case-upper": ("Notes.md", "NOTES.MD"),
    "kelvin-and-case": ("k.md", "\u212a.md"),  # the Kelvin sign, "K" once NFC, and "k" folded
    "sharp-s": ("strasse.md", "STRAßE.md"),
    "accent-case": (CAFE_NFC, unicodedata.normalize("NFD", "CAFÉ.md")),
    "cyrillic-o": ("notes.md", "n\u043etes.md"),
    "greek-omicron": ("notes.md", "n\u03bftes.md"),
    "armenian-oh": ("notes.md", "n\u0585tes.md"),
    "cyrillic-a": ("paypal.md", "p\u0430ypal.md"),
    "whole-script-cyrillic": ("coco.md", "\u0441\u043e\u0441\u043e.md"),
    "cyrillic-capital": ("Bob.md", "\u0412ob.md"),
    "cyrillic-and-case": ("notes.md", "N\u043etes.md"),
    "mathematical-bold": ("notes.md", "\U0001d427otes.md"),
    "cyrillic-capital-and-case": ("tax.md", "\u0422ax.md"),  # drawn as "Tax.md", the case twin of "tax.md"
    "greek-capital-and-case": ("TODO.md", "\u03a4odo.md"),
    "dotless-i-dot-above": ("info.md", "\u0131\u0307nfo.md"),  # drawn as "info.md"
    "arabic-indic-one": ("\u00dcbung 1.md", "\u00dcbung \u0661.md"),
}


def _caller() -> Caller:
    return Caller(upn=f"twins-{uuid.uuid4().hex[:10]}@contoso.com")


def _run(service: MemoryService, caller: Caller, **command: object) -> str:
    return MemoryFiles(service).execute(caller, INSTANCE, None, command).text


def _index(store: MemoryStore, caller: Caller) -> Record:
    record = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert record is not None
    return record


@pytest.mark.parametrize(("first", "twin"), list(TWINS.values()), ids=list(TWINS))
@pytest.mark.parametrize("where", ["", "trip/"])
def test_a_twin_of_a_name_beside_it_is_refused_by_create_and_rename(
        store: MemoryStore, first: str, twin: str, where: str) -> None:
    """A model shown "notes.md" and "Notes.md" (or "file.md" and "\ufb01le.md") reads and edits one for the other.
    create and rename refuse the twin as other refused paths are (400 ``InvalidInput``), naming the file it would be
    taken for, and the index is left as it was."""
    service, caller = MemoryService(store), _caller()
    _run(service, caller, command="create", path=f"/memories/{where}{first}", file_text="the first")
    _run(service, caller, command="create", path="/memories/other.md", file_text="another")
    before = _index(store, caller)

    for command in ({"command": "create", "path": f"/memories/{where}{twin}", "file_text": "the twin"},
                    {"command": "rename", "old_path": "/memories/other.md", "new_path": f"/memories/{where}{twin}"}):
        with pytest.raises(InvalidInput) as refused:
            _run(service, caller, **command)
        assert type(refused.value) is InvalidInput and refused.value.code == "lookalike_path"
        assert refused.value.message == (
            f"The path /memories/{where}{twin} cannot be created: it would stand beside /memories/{where}{first}, whose "
            "name differs from it only in case or in characters that look alike. Please use "
            f"/memories/{where}{first}, or provide a different name.")

    after = _index(store, caller)
    assert (after.etag, after.data) == (before.etag, before.data)


def test_a_directory_on_the_way_that_twins_one_beside_it_is_refused(store: MemoryStore) -> None:
    """"Trip/plan.md" would make a directory "Trip" beside "trip": the first name the command brings into being is
    compared with the names beside it, a directory's as a file's."""
    service, caller = MemoryService(store), _caller()
    _run(service, caller, command="create", path="/memories/trip/plan.md", file_text="the plan")
    _run(service, caller, command="create", path="/memories/notes.md", file_text="notes")

    for command in ({"command": "create", "path": "/memories/TRIP/days/one.md", "file_text": "x"},
                    {"command": "create", "path": "/memories/\u0422rip/one.md", "file_text": "x"},  # Cyrillic Te
                    {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/Trip/notes.md"}):
        with pytest.raises(InvalidInput) as refused:
            _run(service, caller, **command)
        assert refused.value.code == "lookalike_path" and "beside /memories/trip, whose" in refused.value.message
    assert "/memories/notes.md" in _run(service, caller, command="view", path="/memories")


def test_a_twin_of_the_services_own_directories_is_refused_even_while_they_are_not_shown(store: MemoryStore) -> None:
    """/memories/appended shows only while an entry is in it; "Appended/x.md" would still be read as it."""
    service, caller = MemoryService(store), _caller()
    with pytest.raises(InvalidInput) as refused:
        _run(service, caller, command="create", path="/memories/Appended/x.md", file_text="x")
    assert refused.value.code == "lookalike_path" and "beside /memories/appended, whose" in refused.value.message
    _run(service, caller, command="create", path="/memories/appended/x.md", file_text="below the directory: mine")


def test_distinct_names_and_a_rename_that_only_changes_case_are_accepted(store: MemoryStore) -> None:
    """Names that a reader tells apart are names: other letters, other accents, another extension, another
    directory; a superscript, subscript, fraction or circled digit beside the plain one ("x\u00b2.md", "x2.md"); ASCII
    names Unicode lists as confusable but people type apart ("file1.md", "filel.md"), also where both share a letter
    that is not ASCII ("\u00dcbung 1.md", "\u00dcbung I.md"). Renaming "notes.md" to
    "Notes.md" leaves one file, so it is no twin."""
    service, caller = MemoryService(store), _caller()
    names = ["notes.md", "notes.txt", "note.md", "nötes.md", "notes2.md", "trip/Notes.md", CAFE_NFC, "cafe.md",
             "\ufb02ow.md", "file.md", "Привет.md", "привет-2.md", "メモ.md", "x2.md", "x\u00b2.md", "h\u2082o.md",
             "h2o.md", "\u00bd.md", "1\u20442.md", "\u2460.md", "1.md", "file1.md", "filel.md", "bob.md",
             "\u0432ob.md", "\u00dcbung 1.md", "\u00dcbung I.md", "caf\u00e9-v1.md", "caf\u00e9-vl.md",
             "\u0413\u043b\u0430\u0432\u0430 1.md", "\u0413\u043b\u0430\u0432\u0430 I.md"]
    for name in names:
        assert _run(service, caller, command="create", path=f"/memories/{name}", file_text=name).startswith(
            "File created successfully")

    assert _run(service, caller, command="rename", old_path="/memories/notes.md", new_path="/memories/Notes.md") == (
        "Successfully renamed /memories/notes.md to /memories/Notes.md")
    assert _run(service, caller, command="rename", old_path="/memories/trip", new_path="/memories/TRIP").startswith(
        "Successfully renamed")
    listing = _run(service, caller, command="view", path="/memories")
    assert "\t/memories/Notes.md" in listing and "\t/memories/notes.md" not in listing
    assert "\t/memories/TRIP/Notes.md" in listing


def test_a_decomposed_path_names_the_composed_file(store: MemoryStore) -> None:
    """Paths are NFC on input: "cafe\u0301.md" (NFD) is "café.md" (NFC) for every command, never a second file."""
    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _run(service, caller, command="create", path=f"/memories/{CAFE_NFC}", file_text="espresso\n")

    with pytest.raises(Exception) as exists:
        _run(service, caller, command="create", path=f"/memories/{CAFE_NFD}", file_text="a twin")
    assert exists.value.code == "already_exists"  # type: ignore[attr-defined]
    assert "espresso" in _run(service, caller, command="view", path=f"/memories/{CAFE_NFD}")
    _run(service, caller, command="str_replace", path=f"/memories/{CAFE_NFD}", old_str="espresso", new_str="ristretto")
    assert "ristretto" in _run(service, caller, command="view", path=f"/memories/{CAFE_NFC}")
    assert _run(service, caller, command="view", path="/memories").count("caf") == 1

    _run(service, caller, command="delete", path=f"/memories/{CAFE_NFD}")
    with pytest.raises(NotFound):
        _run(service, caller, command="view", path=f"/memories/{CAFE_NFC}")


def test_twins_stored_before_the_rule_stay_readable_editable_and_deletable(store: MemoryStore) -> None:
    """An index that already names "notes.md" and "Notes.md" (or "file.md" and "\ufb01le.md", or "paypal.md" and
    "p\u0430ypal.md" with a Cyrillic a) shows both, and each is read, edited and deleted by its own exact path: the
    rule stops new twins, it does not hide old ones."""
    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _run(service, caller, command="create", path="/memories/notes.md", file_text="lower\n")
    _run(service, caller, command="create", path="/memories/Notes-x.md", file_text="upper\n")
    _run(service, caller, command="create", path="/memories/file.md", file_text="plain\n")
    _run(service, caller, command="create", path="/memories/fi-x.md", file_text="ligature\n")
    _run(service, caller, command="create", path="/memories/paypal.md", file_text="latin\n")
    _run(service, caller, command="create", path="/memories/pay-x.md", file_text="cyrillic\n")
    # Plant the twins as an earlier release stored them: the same slots, under the look-alike names.
    record = _index(store, caller)
    files = dict(record.data["user"]["files"])
    files["Notes.md"] = files.pop("Notes-x.md")
    files["\ufb01le.md"] = files.pop("fi-x.md")
    files[PAYPAL_CYRILLIC] = files.pop("pay-x.md")
    legacy = {**record.data, "user": {**record.data["user"], "files": files}}
    store.put_record(Record(record.partition, INDEX_KIND, INDEX_ID, legacy, record.etag))

    listing = _run(service, caller, command="view", path="/memories")
    for name in ("notes.md", "Notes.md", "file.md", "\ufb01le.md", "paypal.md", PAYPAL_CYRILLIC):
        assert f"\t/memories/{name}" in listing
    assert "upper" in _run(service, caller, command="view", path="/memories/Notes.md")
    assert "ligature" in _run(service, caller, command="view", path="/memories/\ufb01le.md")
    _run(service, caller, command="str_replace", path="/memories/Notes.md", old_str="upper", new_str="UPPER")
    _run(service, caller, command="insert", path="/memories/\ufb01le.md", insert_line=0, insert_text="# fi")
    assert "UPPER" in _run(service, caller, command="view", path="/memories/Notes.md")
    assert "lower" in _run(service, caller, command="view", path="/memories/notes.md")
    _run(service, caller, command="str_replace", path=f"/memories/{PAYPAL_CYRILLIC}", old_str="cyrillic",
         new_str="planted")
    assert "planted" in _run(service, caller, command="view", path=f"/memories/{PAYPAL_CYRILLIC}")
    assert "latin" in _run(service, caller, command="view", path="/memories/paypal.md")
    _run(service, caller, command="delete", path=f"/memories/{PAYPAL_CYRILLIC}")
    assert "latin" in _run(service, caller, command="view", path="/memories/paypal.md")
    # The Latin one may now be renamed away and back: its twin is gone.
    _run(service, caller, command="rename", old_path="/memories/paypal.md", new_path="/memories/pp.md")
    _run(service, caller, command="rename", old_path="/memories/pp.md", new_path="/memories/paypal.md")

    # One twin renamed away and back is a name brought into being beside the other: refused; deleted, it is gone alone.
    _run(service, caller, command="rename", old_path="/memories/\ufb01le.md", new_path="/memories/fi-kept.md")
    with pytest.raises(InvalidInput):
        _run(service, caller, command="rename", old_path="/memories/fi-kept.md", new_path="/memories/\ufb01le.md")
    _run(service, caller, command="delete", path="/memories/Notes.md")
    listing = _run(service, caller, command="view", path="/memories")
    assert "\t/memories/Notes.md" not in listing and "\t/memories/notes.md" in listing
    assert "lower" in _run(service, caller, command="view", path="/memories/notes.md")
    assert "# fi" in _run(service, caller, command="view", path="/memories/fi-kept.md")
