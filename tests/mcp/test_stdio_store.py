"""Where ``python -m memory_core mcp`` keeps memory when MEMORY_SQLITE_PATH is unset: the user's own data folder.

A client starts the process in a folder of its own choosing (Claude Desktop on macOS: ``/``, read-only; Claude Code:
each project), so the default is absolute and per user (``settings.sqlite_path``): ``$XDG_DATA_HOME/memory-core/
memory.db``, else ``~/.local/share/memory-core/memory.db`` (Windows: ``%LOCALAPPDATA%\\memory-core\\memory.db``),
its folder made owner-only. The processes here are the real command, started by the official client's
``stdio_client`` with HOME (and XDG_DATA_HOME) pointing into a temporary folder; the path used is said on stderr.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memory_core.settings import SERVE_SQLITE_PATH, settings_from, sqlite_path
from tests.support.local_server import PROJECT_ROOT
from tests.support.stdio_server import TIME_LIMIT

pytestmark = pytest.mark.anyio

USER_FILE = Path(".local", "share", "memory-core", "memory.db")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _env(home: Path, **values: str) -> dict[str, str]:
    """The environment a client passes (the SDK adds PATH and the like; HOME is replaced here): mode local, no
    MEMORY_SQLITE_PATH."""
    return {"PYTHONPATH": str(PROJECT_ROOT), "HOME": str(home), "MEMORY_AUTH_MODE": "local",
            "MEMORY_DEFAULT_INSTANCE_ID": "personal", "PYTHONUNBUFFERED": "1", **values}


async def _session(env: dict[str, str], cwd: Path, errlog: Path, fact: str | None = None) -> str:
    """One client session started in ``cwd``: appends ``fact`` if given, answers the user's memory; stderr to
    ``errlog``."""
    parameters = StdioServerParameters(command=sys.executable, args=["-m", "memory_core", "mcp"], env=env, cwd=cwd)
    with errlog.open("a", encoding="utf-8") as log:
        async with asyncio.timeout(TIME_LIMIT):
            async with stdio_client(parameters, errlog=log) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                if fact:
                    await client.call_tool("append_memory", {"scope": "user", "memory": fact})
                result = await client.call_tool("get_memory", {"scope": "user"})
    return result.content[0].text  # type: ignore[union-attr]


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder this process cannot write in, as Claude Desktop's ``/``. Permissions do not bind root, so as root it
    is ``/proc``, where nobody can create a file."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.geteuid() == 0:
        folder = Path("/proc")
    with pytest.raises(OSError):
        (folder / ".data").mkdir()
    return folder


async def test_two_working_folders_share_the_users_one_memory(tmp_path: Path) -> None:
    """Started in two project folders, the server keeps one memory in ~/.local/share/memory-core/memory.db (folder
    0700), says so on stderr, and writes nothing in either project."""
    home, errlog = tmp_path / "home", tmp_path / "stderr.txt"
    projects = [tmp_path / "project-a", tmp_path / "project-b"]
    for project in projects:
        project.mkdir()
    env = _env(home)
    await _session(env, projects[0], errlog, "- prefers tea")
    assert "- prefers tea" in await _session(env, projects[1], errlog)
    store = home / USER_FILE
    assert store.is_file()
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert not any(any(project.iterdir()) for project in projects)
    assert errlog.read_text(encoding="utf-8").count(f"memory-core mcp: memory in {store} ") == 2


async def test_a_read_only_working_folder_serves(tmp_path: Path) -> None:
    """Claude Desktop on macOS starts servers in ``/``, read-only: the server serves there (before, it exited 2: its
    store was ``.data/memory.sqlite3`` under that folder)."""
    home, errlog = tmp_path / "home", tmp_path / "stderr.txt"
    assert "- likes jazz" in await _session(_env(home), _read_only_folder(tmp_path), errlog, "- likes jazz")
    assert (home / USER_FILE).is_file()


async def test_xdg_data_home_places_the_store_and_memory_sqlite_path_overrides_it(tmp_path: Path) -> None:
    """An absolute XDG_DATA_HOME holds ``memory-core/memory.db``; MEMORY_SQLITE_PATH, when set, is used instead."""
    home, data, errlog = tmp_path / "home", tmp_path / "xdg-data", tmp_path / "stderr.txt"
    (project := tmp_path / "project").mkdir()
    await _session(_env(home, XDG_DATA_HOME=str(data)), project, errlog, "- from xdg")
    assert (data / "memory-core" / "memory.db").is_file() and not (home / USER_FILE).exists()
    chosen = tmp_path / "chosen" / "m.sqlite3"
    text = await _session(_env(home, XDG_DATA_HOME=str(data), MEMORY_SQLITE_PATH=str(chosen)), project, errlog)
    assert "- from xdg" not in text and chosen.is_file()
    assert f"memory-core mcp: memory in {chosen} " in errlog.read_text(encoding="utf-8")


async def test_a_store_the_working_folder_held_before_is_pointed_at(tmp_path: Path) -> None:
    """A project holding ``.data/memory.sqlite3`` (where this command kept memory before) is named on stderr with the
    setting that goes on with it; it is not read."""
    home, errlog = tmp_path / "home", tmp_path / "stderr.txt"
    (project := tmp_path / "project").mkdir()
    earlier = project / SERVE_SQLITE_PATH
    await _session(_env(home, MEMORY_SQLITE_PATH=str(earlier)), project, errlog, "- kept in the project")
    assert "- kept in the project" not in await _session(_env(home), project, errlog)
    assert f"set MEMORY_SQLITE_PATH={earlier} to go on with it" in errlog.read_text(encoding="utf-8")


# -- the rule itself (settings.sqlite_path) ----------------------------------------------------------------------


@pytest.fixture
def platform_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("MEMORY_SQLITE_PATH", "XDG_DATA_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_serve_keeps_its_working_folder_default(platform_env: Path) -> None:
    assert sqlite_path(settings_from(), stdio=False) == SERVE_SQLITE_PATH == ".data/memory.sqlite3"


def test_a_relative_xdg_data_home_is_ignored(platform_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG specification: a relative path in these variables is invalid and ignored."""
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    assert sqlite_path(settings_from(), stdio=True) == str(platform_env / USER_FILE)


def test_windows_uses_localappdata(platform_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALAPPDATA", str(platform_env / "AppData" / "Local"))
    monkeypatch.setenv("XDG_DATA_HOME", str(platform_env / "not-on-windows"))
    expected = platform_env / "AppData" / "Local" / "memory-core" / "memory.db"
    assert sqlite_path(settings_from(), stdio=True, windows=True) == str(expected)


def test_memory_sqlite_path_wins_for_both_commands(platform_env: Path) -> None:
    settings = settings_from({"MEMORY_SQLITE_PATH": "/srv/m.sqlite3"})
    assert sqlite_path(settings, stdio=True) == sqlite_path(settings, stdio=False) == "/srv/m.sqlite3"
