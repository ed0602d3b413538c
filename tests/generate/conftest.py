"""Fixtures for the generator tests: a fake API key in the environment and a loopback endpoint."""

from __future__ import annotations

import pytest

#: A recognizable fake key; tests assert it never appears in logs, errors or reports.
FAKE_KEY = "sk-loopback-SECRET-0123456789abcdef"


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """Set HTAM_TEST_LLM_KEY to the fake key and return it."""
    monkeypatch.setenv("HTAM_TEST_LLM_KEY", FAKE_KEY)
    return FAKE_KEY
