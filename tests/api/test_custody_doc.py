"""docs/custody.md matches the code: every test it cites exists, and no other module erases memory."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "custody.md"
# The only modules allowed to call the store's erasing operations (the doc's last paragraph).
# custody_sweep.py is the sweep (its erase, unhold and retention steps; a rejection lifts holds through it, and so does
# an operator's release of holds whose request is gone, orphan_holds.py, which erases nothing itself), moved out
# of custody.py, which files and decides requests and erases nothing itself; seals.py is the sweep's seal step (only
# the sweep calls it); entry_removals.py is the service's forget and version drop, moved out of service.py;
# team_copies.py is ``withdraw``, the team copies' marks and then the copies, which erasures.py, entry_removals.py and
# seals.py each spelled out before. dismissals.py erases one record only: a stored deletion request this release
# cannot read, If-Match the etag it was read at while still unreadable (an operator's dismissal), and its own journal
# record (written before that erasure, so the sweep audits one a crash stopped after it, and marked in the erasure's
# own unit, delete_record_and_put) or one of an earlier version of the same record (stopped before its erasure: none
# of them erased it), never memory or holds. agent_settings.py erases one record only: an agent's settings (an
# operator's DELETE of them, If-Match the version its event describes, with that event: delete_record_and_put),
# configuration, never memory, holds or requests.
ERASERS = {"memory_core/domain/dismissals.py", "memory_core/domain/agent_settings.py",
           "memory_core/domain/entry_removals.py", "memory_core/domain/custody_sweep.py",
           "memory_core/domain/seals.py", "memory_core/domain/erasures.py", "memory_core/domain/file_retirements.py",
           "memory_core/domain/file_audits.py", "memory_core/domain/team_copies.py"}
ERASING_CALLS = {"delete_entries", "delete_profile", "delete_record", "delete_record_and_put", "erase_expired_records"}


def _cited_tests() -> list[tuple[str, str | None]]:
    cited: list[tuple[str, str | None]] = []
    current = ""
    for ref in re.findall(r"`((?:tests/[\w/]+\.py)?(?:::\w+)?)`", DOC.read_text()):
        path, _, name = ref.partition("::")
        current = path or current
        cited.append((current, name or None))
    return cited


def test_every_test_the_custody_page_cites_exists() -> None:
    """Each `tests/...py::name` (or a bare `::name` after one) names a real test function."""
    cited = _cited_tests()
    assert len(cited) > 20
    for path, name in cited:
        source = ROOT / path
        assert source.is_file(), path
        if name is not None:
            functions = (ast.FunctionDef, ast.AsyncFunctionDef)
            names = {n.name for n in ast.walk(ast.parse(source.read_text())) if isinstance(n, functions)}
            assert name in names, f"{path}::{name}"


def test_only_the_documented_modules_erase_memory() -> None:
    """A new caller of delete_entries/delete_profile/delete_record is a new side door: document it first."""
    callers = set()
    for module in (ROOT / "memory_core").rglob("*.py"):
        if "adapters" in module.parts:
            continue  # the stores implement the operations
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ERASING_CALLS:
                callers.add(module.relative_to(ROOT).as_posix())
    assert callers == ERASERS
