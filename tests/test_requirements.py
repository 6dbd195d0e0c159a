"""The requirements files lock every package they install, at the version the suite ran against.

Azure's remote build installs requirements.txt afresh at each deploy (docs/deploy.md, "Code package").
A package reached only through another one's dependencies, if left unpinned, resolves to whatever is
newest that day: a version no test has seen. So each file pins its whole tree. Its first part names
what the project uses; below the line ``LOCKED`` the dependencies of those, which must each be needed.

The tree is read from the installed packages' own metadata (``importlib.metadata``), with their markers
evaluated here: Linux, CPython 3.11, as the Function app runs (``APP_PYTHON_VERSION``). A package that
only another platform needs (``colorama`` on Windows, for click) is not locked. Offline: nothing is
downloaded; ``scripts/test`` has installed requirements-dev.txt, which includes every other file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCKED = "# Locked:"
"""The line in each file after which only the dependencies of the packages above it are pinned."""

# Each file as pip installs it: requirements-dev.txt includes the three others.
INSTALLED_TOGETHER = {
    "requirements.txt": ("requirements.txt",),
    "requirements-agent-framework.txt": ("requirements.txt", "requirements-agent-framework.txt"),
    "requirements-anthropic.txt": ("requirements.txt", "requirements-anthropic.txt"),
    "requirements-dev.txt": ("requirements-dev.txt",),
}
FILES = tuple(INSTALLED_TOGETHER)


@dataclass
class Pins:
    """The pins of one or more files: what the project names, and what is locked below ``LOCKED``."""

    named: dict[NormalizedName, Requirement] = field(default_factory=dict)
    locked: dict[NormalizedName, Requirement] = field(default_factory=dict)

    def all(self) -> dict[NormalizedName, Requirement]:
        return {**self.locked, **self.named}


def read_pins(name: str, pins: Pins | None = None) -> Pins:
    """The pins of ``name`` and of the files it includes with ``-r``."""
    pins = pins if pins is not None else Pins()
    below_lock = False
    for raw in (ROOT / name).read_text(encoding="utf-8").splitlines():
        if raw.startswith(LOCKED):
            below_lock = True
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            read_pins(line[3:].strip(), pins)
        elif line:
            requirement = Requirement(line)
            (pins.locked if below_lock else pins.named)[canonicalize_name(requirement.name)] = requirement
    return pins


def tree(roots: dict[NormalizedName, Requirement]) -> dict[NormalizedName, NormalizedName | None]:
    """Every package installing ``roots`` reaches here, each with the package that first needed it
    (None for a root)."""
    needed_by: dict[NormalizedName, NormalizedName | None] = {}
    walked: set[tuple[NormalizedName, frozenset[str]]] = set()
    pending: list[tuple[Requirement, NormalizedName | None]] = [(r, None) for r in roots.values()]
    while pending:
        requirement, parent = pending.pop()
        name = canonicalize_name(requirement.name)
        needed_by.setdefault(name, parent)
        extras = frozenset(requirement.extras)
        if (name, extras) in walked:
            continue
        walked.add((name, extras))
        for spec in metadata.distribution(name).requires or []:
            dependency = Requirement(spec)
            environments = [{"extra": extra} for extra in extras or {""}]
            if dependency.marker is None or any(dependency.marker.evaluate(env) for env in environments):
                pending.append((dependency, name))
    return needed_by


def _pins_of(name: str) -> Pins:
    pins = Pins()
    for included in INSTALLED_TOGETHER[name]:
        read_pins(included, pins)
    return pins


@pytest.mark.parametrize("name", FILES)
def test_every_requirement_is_pinned_to_one_version(name: str) -> None:
    loose = [str(r) for r in read_pins(name).all().values()
             if len(r.specifier) != 1 or next(iter(r.specifier)).operator != "=="]
    assert loose == [], f"{name}: pin these with ==: {loose}"


@pytest.mark.parametrize("name", FILES)
def test_every_package_installed_is_locked(name: str) -> None:
    """Installing the file reaches no package it leaves unpinned: the failure lists the lines to add."""
    pins = _pins_of(name)
    needed_by = tree(pins.named)
    missing = sorted(set(needed_by) - set(pins.all()))
    lines = [f"{package}=={metadata.version(package)}  # for {needed_by[package]}" for package in missing]
    assert lines == [], f"{name} leaves these unpinned; add them below its '{LOCKED}' line:\n" + "\n".join(lines)


def _pinned(requirement: Requirement) -> str:
    """The version ``requirement`` pins with ``==`` (its only specifier)."""
    return next(iter(requirement.specifier)).version


def _installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "nothing"


@pytest.mark.parametrize("name", FILES)
def test_each_pin_is_the_version_the_suite_runs_against(name: str) -> None:
    stale = [f"{package}: pinned {_pinned(r)}, installed {_installed(package)}"
             for package, r in _pins_of(name).all().items() if _pinned(r) != _installed(package)]
    assert stale == [], f"{name}: run scripts/test, which installs the pins, or correct them: {stale}"


@pytest.mark.parametrize("name", FILES)
def test_each_locked_package_is_still_needed(name: str) -> None:
    """A package locked below the line that nothing named above it needs any more is a stale pin."""
    pins = _pins_of(name)
    needed = tree(pins.named)
    unneeded = sorted(set(read_pins(name).locked) - set(needed))
    assert unneeded == [], f"{name}: nothing needs these now; remove them: {unneeded}"


def test_the_walk_follows_extras_and_markers() -> None:
    """PyJWT's ``crypto`` extra brings cryptography; click's ``colorama`` is for Windows only."""
    with_extra = tree({canonicalize_name("PyJWT"): Requirement("PyJWT[crypto]")})
    assert with_extra[canonicalize_name("cryptography")] == "pyjwt"
    assert "cryptography" not in tree({canonicalize_name("PyJWT"): Requirement("PyJWT")})
    assert "colorama" not in tree({canonicalize_name("click"): Requirement("click")})
