"""Shared pytest configuration: tests marked ``gpu`` skip cleanly when no CUDA device is present."""

from __future__ import annotations

import functools

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every test marked ``@pytest.mark.gpu`` when ``torch.cuda.is_available()`` is false."""
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None]
    if not gpu_items or _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is false)")
    for it in gpu_items:
        it.add_marker(skip)
