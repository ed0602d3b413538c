"""Fixtures for the transform tests (helpers live in ``transform_helpers.py``)."""

from __future__ import annotations

import pytest
from transform_helpers import candidates, refusal


@pytest.fixture
def cand():
    """``cand(transform_id, file, kernel)`` -> candidates (asserting they validate)."""
    return candidates


@pytest.fixture
def refuse():
    """``refuse(transform_id, file, kernel)`` -> reason (asserting the transform refuses)."""
    return refusal
