"""Fixtures for the optimize-loop tests: a private compile cache and memory store, and example copies.

Every run is forced into static mode (``static=True``) so that the tests mean the same thing on a machine
with a GPU: Triton candidates are checked under the interpreter, CUDA candidates are compile-only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.optimize.report_checks import copy_example


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the whole session (static profiles are cached by source hash)."""
    return tmp_path_factory.mktemp("htam-cache")


@pytest.fixture(autouse=True)
def _private_env(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTAM_CACHE_DIR in tmp; HTAM_MEMORY in tmp so that no test can touch the user's store."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("HTAM_MEMORY", str(tmp_path / "default-memory.sqlite3"))


@pytest.fixture
def vadd(tmp_path: Path) -> Path:
    """A copy of examples/vector_add.py (with its htam.toml) under tmp_path/src."""
    return copy_example(tmp_path / "src")
