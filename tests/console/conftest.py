"""Fixtures for the console tests: one local server and one headless Chromium per session.

Each test works in an instance of its own (set in the page's session storage), so tests
share the server and the browser yet never see each other's memory.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import chromium, find, wait_idle
from tests.support.console_session import open_afresh
from tests.support.local_server import OPERATOR_KEY, RunningServer, running_server


@pytest.fixture(scope="session")
def console_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``serve`` on the embedded store in mode local (the person needs no sign-in) with keys too."""
    env = {"MEMORY_AUTH_MODE": "local,key", "MEMORY_DELETION_MODE": "operator_approval"}
    with running_server(tmp_path_factory.mktemp("console-server"), env) as server:
        yield server


@pytest.fixture(scope="session")
def download_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="console-downloads-") as folder:
        yield Path(folder)


@pytest.fixture(scope="session")
def browser(download_dir: Path) -> Iterator[WebDriver]:
    with chromium(str(download_dir)) as driver:
        yield driver


@pytest.fixture
def instance() -> str:
    return f"console-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def local_api(console_server: RunningServer, instance: str) -> Iterator[httpx.Client]:
    """The API as the local user (mode local: no credential), rooted at the test's instance."""
    with httpx.Client(base_url=f"{console_server.api}/instances/{instance}", timeout=30) as client:
        yield client


@pytest.fixture
def operator_api(console_server: RunningServer, instance: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{console_server.api}/instances/{instance}",
                      headers={"X-API-KEY": OPERATOR_KEY}, timeout=30) as client:
        yield client


def open_console(driver: WebDriver, server: RunningServer, instance: str, *, operator_key: str | None = None) -> None:
    """Load the console on ``instance`` with an empty session (and the operator key if given)."""
    open_afresh(driver, f"{server.api}/console", instance=instance, operator_key=operator_key)
    find(driver, "#scope-title")
    wait_idle(driver)


def screenshot_dir() -> Path:
    """Where screenshots go: CONSOLE_SCREENSHOT_DIR (docs/img to refresh the docs) or a temporary folder."""
    folder = Path(os.environ.get("CONSOLE_SCREENSHOT_DIR") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    return folder
