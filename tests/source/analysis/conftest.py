"""Helpers for the analysis-layer tests: the corpus, and facts of one corpus kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source.analysis import KernelFacts, analyze
from htam_core.source.api import load, parse_text

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"


def facts_of(file: str, kernel: str) -> KernelFacts:
    """The facts of ``kernel`` in corpus file ``file``."""
    model = load(CORPUS / file)
    return analyze(model, model.kernel(kernel))


def facts_of_text(text: str, kernel: str, language: str = "cuda") -> KernelFacts:
    """The facts of ``kernel`` in an in-memory ``text``."""
    model = parse_text(text, language)  # type: ignore[arg-type]
    return analyze(model, model.kernel(kernel))


@pytest.fixture
def facts():
    """``facts(file, kernel)`` for corpus kernels."""
    return facts_of
