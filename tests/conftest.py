"""Shared pytest configuration: tests marked ``gpu`` skip cleanly when no CUDA device is present."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest


@functools.cache
def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver means no GPU for the tests
        return False


#: The quick tier (``HTAM_TEST_TIER=fast``, ``make test-fast``) leaves out the test ids listed here (measured
#: slow; ``tests/slow_tier.py`` regenerates the list).
SLOW_TIER = Path(__file__).resolve().parent / "slow_tier.txt"


def _slow_tier_ids() -> set[str]:
    try:
        lines = SLOW_TIER.read_text(encoding="utf-8").splitlines()
    except OSError:
        return set()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the quick tier, deselect the measured-slow tests; skip every test marked ``@pytest.mark.gpu`` when
    ``torch.cuda.is_available()`` is false."""
    if os.environ.get("HTAM_TEST_TIER") == "fast":
        slow = _slow_tier_ids()
        dropped = [it for it in items if it.nodeid in slow]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [it for it in items if it.nodeid not in slow]
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None]
    if not gpu_items or _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is false)")
    for it in gpu_items:
        it.add_marker(skip)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the whole session (static profiles are cached by source hash)."""
    return tmp_path_factory.mktemp("htam-cache")


@pytest.fixture
def private_htam_env(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTAM_CACHE_DIR and HTAM_MEMORY in temp dirs, so that no test can touch the user's cache or memory."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("HTAM_MEMORY", str(tmp_path / "default-memory.sqlite3"))

#: Test files of the corpus under tests/fixtures/ (the zero-config files' own pytest tests) are data, run by the
#: harness inference in a child process; the project's own test run does not collect them.
collect_ignore_glob = ["fixtures/*/test_*.py"]


# processes started by session-scoped fixtures (the LSP server) inherit it too
os.environ.setdefault("HTAM_INFER", "0")


@pytest.fixture(autouse=True)
def _no_harness_inference_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Harness inference (running a file's ``__main__`` block in a child process) is off in tests that do not
    ask for it: many corpus files have a ``__main__`` block, and those tests check the other discovery steps.
    Tests of the inference set ``HTAM_INFER=1`` themselves."""
    monkeypatch.setenv("HTAM_INFER", "0")
