"""Fixtures for the infra tests (see infra_support.py).

Azure's control plane cannot run here, so the scripts in infra/ run against
tests/infra/fake_az.py, put on PATH as ``az``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infra.infra_support import AzureEnv


@pytest.fixture
def azure(tmp_path: Path) -> AzureEnv:
    """A fresh sandbox with an empty fake Azure and the tenant file acme.env (LOCATION=eastus2)."""
    return AzureEnv(tmp_path)


@pytest.fixture(scope="session")
def deployed_twice(tmp_path_factory) -> dict:
    """Tenant acme deployed twice into the same fake Azure; the calls of each run kept apart."""
    azure = AzureEnv(tmp_path_factory.mktemp("deployed-twice"))
    first = azure.deploy()
    first_calls = azure.calls()
    state_after_first = azure.state()
    azure.reset_log()
    second = azure.deploy()
    return {
        "azure": azure,
        "first": first,
        "first_calls": first_calls,
        "state_after_first": state_after_first,
        "second": second,
        "second_calls": azure.calls(),
    }


@pytest.fixture
def deployed(tmp_path: Path, deployed_twice) -> AzureEnv:
    """A fresh sandbox whose fake Azure already holds tenant acme as one deploy leaves it
    (code included); its call log starts empty."""
    azure = AzureEnv(tmp_path)
    azure.save_state(deployed_twice["state_after_first"])
    return azure
