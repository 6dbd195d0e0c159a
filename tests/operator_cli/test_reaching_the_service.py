"""How the operator command line reaches the service and says when it cannot: a key the service refuses, a URL
that is no URL, a service that does not answer in time."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys

import pytest

from memory_core import operator_cli
from tests.support.local_server import OPERATOR_KEY, PROJECT_ROOT, RunningServer
from tests.support.operator_command import run_operator


def test_a_user_key_is_refused(server: RunningServer, instance_id: str) -> None:
    """A user key exits with the forbidden code (3)."""
    result = run_operator(server, "--instance", instance_id, "list", key="test-user-key")
    assert result.returncode == 3


def test_a_url_that_is_no_url_is_one_line_and_exit_2(server: RunningServer, instance_id: str) -> None:
    """--url without its scheme, or not a URL at all, exits 2 with one line naming --url (it ended in a traceback);
    a URL ending in /api, as the README writes the service's, is the service's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    for url in (server.base_url.removeprefix("http://"), "http://[::1"):
        result = subprocess.run([sys.executable, "-m", "memory_core", "operator", "--url", url, "--key", OPERATOR_KEY,
                                 "--instance", instance_id, "list"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and "--url" in result.stderr, url
    with_api = subprocess.run([sys.executable, "-m", "memory_core", "operator", "--url", f"{server.base_url}/api/",
                               "--key", OPERATOR_KEY, "--instance", instance_id, "list"], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
    assert with_api.returncode == 0 and with_api.stdout == "0 request(s)\n", with_api.stderr


def test_a_service_that_does_not_answer_in_time_is_named_as_such(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A socket that accepts and never answers (the service still working on a long request): one line saying no
    answer came within the wait and that the request may still be running, exit 6 (it said "cannot reach ...: "
    with nothing after the colon, beside a logged warning). The wait is shortened to 0.5 s in process."""
    silent = socket.create_server(("127.0.0.1", 0))
    try:
        monkeypatch.setattr(operator_cli, "TIMEOUT_SECONDS", 0.5)
        parser = argparse.ArgumentParser()
        operator_cli.add_parser(parser.add_subparsers(dest="command"))
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        code = operator_cli.run(parser.parse_args(["operator", "--url", url, "--key", "k", "--instance", "i", "list"]))
    finally:
        silent.close()
    err = capsys.readouterr().err
    assert code == 6
    assert err.splitlines() == [f"memory-core operator: {url} gave no answer within 0.5 s; the request may still be "
                                "running there"]
