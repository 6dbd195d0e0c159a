"""The docs name the versions the suite runs against.

A page that says which release of a client or tool is tested (``selenium 4.51.0``, ``mcp 2.3.0``,
``conformance 0.1.16``) goes stale silently when a pin moves. Each such mention in README.md and
docs/ is held to the pins: requirements*.txt, and the package.json of each Node tool the suite or a
benchmark installs. docs/performance.md and CHANGELOG.md are records of their day and keep the
versions they ran.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.test_requirements import FILES, ROOT, read_pins

NODE_TOOLS = ("tests/mcp_node", "tests/cosmos_server", "bench/reference_server")
RECORDS = {"docs/performance.md", "CHANGELOG.md"}
"""Dated measurements and history: the versions they name are the ones of that run or release."""


def pinned_versions() -> dict[str, str]:
    """Each pinned package by the names a page may call it (normalized; an npm package also by its last part)."""
    versions: dict[str, str] = {}
    for name in FILES:
        for package, requirement in read_pins(name).all().items():
            versions[package] = next(iter(requirement.specifier)).version
    for folder in NODE_TOOLS:
        manifest = json.loads((ROOT / folder / "package.json").read_text(encoding="utf-8"))
        for package, version in manifest.get("dependencies", {}).items():
            if package == "node":  # "Node 22" names the runtime a machine has, not this pin
                continue
            versions[package.lower()] = version
            versions.setdefault(package.rsplit("/", 1)[-1].lower(), version)
    return versions


def mentions(text: str, versions: dict[str, str]) -> list[tuple[int, str, str]]:
    """(line, name, version) of every "name 1.2.3", "name==1.2.3" or "name@1.2.3" naming a pinned package."""
    found = []
    for match in re.finditer(r"(?<![\w/.@-])(@?[A-Za-z][\w.\-/]*)(?:==|@| v?)(\d+(?:\.\d+)+)\b", text):
        if key_of(match.group(1)) in versions:
            found.append((text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2)))
    return found


def key_of(name: str) -> str:
    """The key ``pinned_versions`` files ``name`` under: npm names lowercased, Python names normalized."""
    return name.lower() if name.startswith("@") or "/" in name else canonicalize_name(name)


PAGES = sorted(p for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
               if p.relative_to(ROOT).as_posix() not in RECORDS)


def test_the_pins_and_pages_are_found() -> None:
    """The pins hold both kinds of tool, and a mention of each kind is recognised."""
    versions = pinned_versions()
    assert {"mcp", "selenium", "@modelcontextprotocol/conformance", "conformance"} <= set(versions)
    assert mentions("selenium 4.51.0, `mcp==2.3.0` and @vercel/cosmosdb-server@1.0.1", versions) == [
        (1, "selenium", "4.51.0"), (1, "mcp", "2.3.0"), (1, "@vercel/cosmosdb-server", "1.0.1")]
    assert ROOT / "docs" / "console.md" in PAGES


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_a_page_names_each_tool_at_its_pinned_version(page: Path) -> None:
    """Every version a page gives for a pinned package is the pinned one."""
    versions = pinned_versions()
    stale = [f"line {line}: {name} {version} (pinned {versions[key_of(name)]})"
             for line, name, version in mentions(page.read_text(encoding="utf-8"), versions)
             if version != versions[key_of(name)]]
    assert not stale, stale


def test_the_pages_name_some_pinned_versions() -> None:
    """The check is not vacuous: the pages name the tested clients' versions in several places."""
    versions = pinned_versions()
    named = {key_of(name) for page in PAGES for _, name, _ in mentions(page.read_text(encoding="utf-8"), versions)}
    assert {"mcp", "selenium"} <= named, named
