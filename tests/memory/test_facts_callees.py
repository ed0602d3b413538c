"""``matmul_like`` of a kernel whose dot loop sits in a ``__device__`` function it calls: known only with the file
(the model), and then the tiling steps are applicable (a regression: llm.c-style ``trimul_global`` calls its
register-tiled product through a template argument, and no tiling step was ranked for it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory import Ranker, load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source.api import parse_text

PANEL = Path(__file__).resolve().parents[1] / "fixtures" / "panel"


@pytest.mark.parametrize(("name", "kernel"), [("callee_tiles.cu", "scores"), ("template_callee.cu", "scores_t")])
def test_a_callee_dot_loop_makes_the_kernel_matmul_like_with_the_file(name: str, kernel: str) -> None:
    model = parse_text((PANEL / name).read_text(encoding="utf-8"), "cuda", str(PANEL / name))
    k = model.kernel(kernel)
    alone = compute_facts(k.features, k.language, None, k)
    with_file = compute_facts(k.features, k.language, None, k, model)
    assert alone["matmul_like"] is False  # the kernel's own body has no dot loop
    assert with_file["matmul_like"] is True and with_file["reduction_like"] is False
    ranker = Ranker(load_knowledge())
    assert "smem_tiling" not in {s.id for s in ranker.applicable(k.features, k.language, None, k)}
    assert "smem_tiling" in {s.id for s in ranker.applicable(k.features, k.language, None, k, model)}
    ranked = ranker.rank({}, [], k.features, k.language, None, top=64, kernel=k, model=model)
    assert "smem_tiling" in [r.strategy for r in ranked]


def test_a_kernel_without_callees_keeps_its_own_facts() -> None:
    model = parse_text((PANEL / "nt_tiles.cu").read_text(encoding="utf-8"), "cuda")
    k = model.kernel("nt_tiles")
    assert compute_facts(k.features, k.language, None, k, model)["matmul_like"] == \
        compute_facts(k.features, k.language, None, k)["matmul_like"] is True
