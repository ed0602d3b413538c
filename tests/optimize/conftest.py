"""Fixtures for the optimize-loop tests: a private compile cache and memory store, and example copies.

Every run is forced into static mode (``static=True``) so that the tests mean the same thing on a machine
with a GPU: Triton candidates are checked under the interpreter, CUDA candidates are compile-only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.optimize.report_checks import copy_example


@pytest.fixture(autouse=True)
def _private_env(private_htam_env: None) -> None:
    """Every test here runs with the cache and memory in temp dirs (tests/conftest.py)."""


@pytest.fixture
def vadd(tmp_path: Path) -> Path:
    """A copy of examples/vector_add.py (with its htam.toml) under tmp_path/src."""
    return copy_example(tmp_path / "src")
