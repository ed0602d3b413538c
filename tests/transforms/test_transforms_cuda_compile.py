"""Every CUDA candidate compiles with ``nvcc -arch=sm_90 -c`` (first and last candidate of each transform
on each kernel of the compilable fixtures), and transforms compose. Skipped without nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import fixture_path

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed"),
]

FILES = [
    "elementwise_variants.cu", "matmul_variants.cu", "transpose_variants.cu",
    "sgemm_naive.cu", "transpose_naive.cu", "reduce_sum_smem.cu", "softmax_row_per_thread.cu",
    "bias_gelu_templates.cu", "rowwise_variants.cu", "matmul_register_variants.cu", "softmax_variants.cu",
    "matmul_batched_variants.cu", "coarsen_variants.cu", "vector_loop_variants.cu", "row_register_variants.cu", "vector_loop_typed.cu", "row_flatten_variants.cu",
    "column_sum_variants.cu", "early_return_variants.cu", "ldg_loop_variants.cu", "fixed_extent_variants.cu",
    "online_softmax_variants.cu", "elementwise_typed.cu", "stencil2d_window.cu", "bias_grad_variants.cu",
]


def _cases() -> list:
    out = []
    for f in FILES:
        model = load(str(fixture_path(f)))
        for k in model.kernels:
            for t in registry.for_language("cuda"):
                res = registry.propose(t.id, model, k)
                if isinstance(res, NotApplicable):
                    continue
                # the first candidate; also the last where candidates differ in structure, not only numbers
                wide = t.id in ("cuda.smem_tiling_matmul", "cuda.transpose_smem_tile", "cuda.block_size",
                               "cuda.register_tile_matmul")
                picks = {0, len(res) - 1} if wide else {0}
                for i in sorted(picks):
                    out.append(pytest.param(f, k.name, t.id, i, id=f"{f}:{k.name}:{t.id}:{i}"))
    return out


def _nvcc(text: str, tmp_path: Path) -> None:
    assert_compiles(text, tmp=tmp_path, name="cand.cu")


@pytest.mark.parametrize("file,kernel,tid,index", _cases())
def test_candidate_compiles(file, kernel, tid, index, tmp_path):
    model = load(str(fixture_path(file)))
    res = registry.propose(tid, model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable)
    _nvcc(res[index].new_text, tmp_path)


def test_transforms_compose_and_compile(tmp_path):
    """restrict_const -> launch_bounds -> unroll -> fast_math on one kernel, re-parsing in between (``cuda.ldg``
    is refused after restrict_const: the const __restrict__ input already takes the read-only path)."""
    text = fixture_path("elementwise_variants.cu").read_text()
    applied = []
    for tid in ("cuda.restrict_const", "cuda.launch_bounds", "cuda.unroll", "cuda.fast_math",
                "cuda.grid_stride"):
        model = parse_text(text, "cuda")
        if applied == ["cuda.restrict_const"]:
            assert "read-only path" in registry.propose("cuda.ldg", model, model.kernel("sigmoid_poly")).reason
        res = registry.propose(tid, model, model.kernel("sigmoid_poly"))
        assert not isinstance(res, NotApplicable), (tid, res)
        text = res[0].new_text
        applied.append(tid)
    assert "__ldg" not in text and "__launch_bounds__(128)" in text and "htam_sm_grid" in text
    _nvcc(text, tmp_path)
