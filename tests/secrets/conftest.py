"""Fixtures for the secret scanner tests: one scanner, the two corpora."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.secrets import SecretScanner
from tests.secrets.corpus.fake_secrets import FAKE_SECRETS, FakeSecret

CORPUS_DIR = Path(__file__).parent / "corpus"


def load_ordinary_memory() -> list[str]:
    """The ordinary-memory corpus: one write per line; blank lines and "# " comments skipped."""
    lines = (CORPUS_DIR / "ordinary_memory.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("# ")]


@pytest.fixture(scope="session")
def scanner() -> SecretScanner:
    """One scanner for the whole session, as the service builds one per process."""
    return SecretScanner()


@pytest.fixture(scope="session")
def ordinary_memory() -> list[str]:
    return load_ordinary_memory()


@pytest.fixture(scope="session")
def fake_secrets() -> list[FakeSecret]:
    return FAKE_SECRETS
