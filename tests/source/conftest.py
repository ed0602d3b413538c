"""Shared helpers for the source-model tests."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


@pytest.fixture
def corpus() -> Path:
    """Folder of the copied dev corpus (files + manifest.json)."""
    return CORPUS
