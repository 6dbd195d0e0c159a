"""The memory tool's commands over a namespace, where the reference backend's answers are not the whole story.

Answers are compared with the reference text for text in tests/memory_tool/test_differential.py; here, what the
reference does not promise: how their cost grows.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import pytest

from memory_core.domain import memory_paths
from memory_core.domain.errors import InvalidInput
from memory_core.domain.memory_files import MAX_LISTING_CHARS, FileNode, Namespace, create, rename, str_replace, view


@pytest.mark.alone
def test_a_repeated_old_str_is_answered_in_time_linear_in_the_file() -> None:
    """Every occurrence's line is listed, as the reference lists them, in one pass: old_str "" in 512 KiB (every
    character an occurrence) took about 35 s when each line was counted from the start of the file."""
    content = "ab\n" * (512 * 1024 // 3)
    namespace = Namespace({"big.md": FileNode(content)})
    started = time.perf_counter()
    with pytest.raises(InvalidInput) as raised:
        str_replace(namespace, "/memories/big.md", "", "x")
    elapsed = time.perf_counter() - started
    listed = str(raised.value).split("in lines: ")[1].split(". Please")[0].split(", ")
    assert len(listed) == len(content) + 1
    assert listed[:7] == ["1", "1", "1", "2", "2", "2", "3"] and listed[-1] == str(content.count("\n") + 1)
    assert elapsed < 2.0, f"{elapsed:.2f} s"


def _big_memory(appended: int) -> Namespace:
    ns = Namespace(dirs={"appended", "projects"})
    ns.files["projects/zeta.md"] = FileNode("- the model's own file\n", "z")
    for n in range(appended):
        ns.files[f"appended/{n:032x}.md"] = FileNode(f"- fact {n}\n", f"{n:032x}")
    return ns


def test_a_listing_too_long_for_a_model_is_cut_keeping_the_models_own_files_and_counting_the_rest() -> None:
    """20,000 appended entries listed whole are over a million characters: past a model's context, on the command
    it runs first. The listing stops at MAX_LISTING_CHARS and says how many it left out."""
    listing = view(_big_memory(20_000), "/memories").answer
    lines = listing.split("\n")
    assert len(listing) <= MAX_LISTING_CHARS
    assert "\t/memories/projects/zeta.md" in listing and "4K\t/memories/appended/" in lines
    listed = sum(1 for line in lines if line.split("\t")[-1].startswith("/memories/appended/0"))
    left = int(lines[-1].split(" more ")[0].lstrip("(").replace(",", ""))
    assert listed > 100 and listed + left == 20_000
    assert lines[-1].endswith("view one of those directories, or a file by its path.)")


def test_a_listing_that_fits_is_the_reference_listing_whole() -> None:
    listing = view(_big_memory(100), "/memories").answer
    assert listing.count("/memories/appended/0") == 100 and "not listed" not in listing


class _CountedFiles(dict[str, FileNode]):
    """A namespace's files that count how many texts were read (``files[path]``)."""

    reads = 0

    def __getitem__(self, rel: str) -> FileNode:
        self.reads += 1
        return super().__getitem__(rel)


def _texts_read_by_listing(appended: int) -> int:
    ns = _big_memory(appended)
    ns.files = _CountedFiles(ns.files)
    view(ns, "/memories")
    assert isinstance(ns.files, _CountedFiles)
    return ns.files.reads


def test_a_cut_listing_reads_only_the_files_it_shows() -> None:
    """A file's size in the listing is its text's length: a listing of a large memory sized every appended entry, then
    showed a few hundred (at 60,000 appended entries, 0.4 s of a view). The texts it reads stay what it shows."""
    small, large, larger = (_texts_read_by_listing(n) for n in (20, 2_000, 20_000))
    assert small == 21  # 20 appended files and the model's own, all shown
    assert large == larger < 400, (large, larger)


def test_the_look_alike_check_folds_only_the_names_of_the_directory_a_name_is_made_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A create beside 2,000 files compares the new name with the names beside it, not with every path: folding a name
    (NFKC, case, NFKC) is the check's cost, paid for the directory's few names and the service's own directories."""
    compared: list[str] = []
    lookalike_of = memory_paths.lookalike_of

    def counted(name: str, siblings: Iterable[str]) -> str | None:
        siblings = list(siblings)
        compared.extend([name, *siblings])
        return lookalike_of(name, siblings)

    monkeypatch.setattr(memory_paths, "lookalike_of", counted)
    ns = _big_memory(2_000)
    for n in range(2_000):
        ns.files[f"projects/n{n}.md"] = FileNode(f"note {n}\n", f"p{n}")
    ns.files["trip/plan.md"] = FileNode("the plan\n", "t")
    ns.dirs.add("trip")

    create(ns, "/memories/trip/days.md", "x")
    assert sorted(compared) == ["days.md", "plan.md"]

    compared.clear()
    create(ns, "/memories/trip/new/deeper/days.md", "x")  # below the first new name, nothing stands beside it
    assert sorted(compared) == ["new", "plan.md"]

    compared.clear()
    with pytest.raises(InvalidInput, match=r"beside /memories/trip/plan\.md, whose"):
        rename(ns, "/memories/projects/n1.md", "/memories/trip/PLAN.md")
    assert sorted(compared) == ["PLAN.md", "plan.md"]

    compared.clear()
    create(ns, "/memories/new.md", "x")  # the root: its names, and the service's directories
    assert sorted(compared) == ["agent", "appended", "new.md", "projects", "trip"]


class _WalkedFiles(dict[str, FileNode]):
    """A namespace's files that count the walks over every path (``iter(files)``)."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.walks += 1
        return super().__iter__()


def test_a_new_name_outside_appended_is_checked_without_walking_the_appended_entries() -> None:
    """At 60,000 appended entries a walk over every path cost about 20 ms a create (2 cores, load 19), 30 times the rest
    of the command's namespace work. A namespace made from an index knows the paths it names (``indexed``); the
    appended entries lie only under appended/, so a name made anywhere else is compared with no walk over them."""
    ns = _big_memory(60_000)
    ns.files["trip/plan.md"] = FileNode("the plan\n", "t")
    ns.dirs.add("trip")
    ns.indexed = ("projects/zeta.md", "trip/plan.md")
    ns.files = walked = _WalkedFiles(ns.files)

    create(ns, "/memories/trip/days.md", "x")
    with pytest.raises(InvalidInput, match=r"beside /memories/trip/plan\.md, whose"):
        create(ns, "/memories/trip/Plan.md", "x")
    with pytest.raises(InvalidInput, match=r"beside /memories/projects, whose"):
        rename(ns, "/memories/trip/plan.md", "/memories/PROJECTS")
    assert walked.walks == 0

    entry = f"{10:032x}.md"  # made in appended/, the directory of the entries: walked, once
    with pytest.raises(InvalidInput, match=f"beside /memories/appended/{entry}, whose"):
        create(ns, f"/memories/appended/{entry.upper()}", "x")
    assert walked.walks == 1
