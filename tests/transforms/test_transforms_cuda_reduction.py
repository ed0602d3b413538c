"""cuda.sequential_addressing: the interleaved shared-memory tree becomes sequential addressing (Harris 2007,
kernels 1-3); the result parses (re-checked by ``cand``) and compiles; every unsafe shape is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

TID = "cuda.sequential_addressing"
RV = "reduction_variants.cu"
REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "bench" / "suite" / "reduce_sum_smem.cu"

SEQUENTIAL = """    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
"""
INTERLEAVED = """    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
"""


def _nvcc(text: str, tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    assert_compiles(text, tmp=tmp_path, name="cand.cu")


def test_suite_kernel_gets_exactly_the_sequential_loop():
    model = load(str(SUITE))
    assert INTERLEAVED in model.text
    res = registry.propose(TID, model, model.kernel("block_sum_interleaved"))
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert c.new_text == model.text.replace(INTERLEAVED, SEQUENTIAL)
    assert c.changes_numerics and c.reorders_only and "order" in c.description
    assert c.params == {"loops": [{"line": 19, "bound": "blockDim.x", "combine": "+", "form": "interleaved"}],
                        "block": [256]}
    assert c.strategy == TID and c.transform_id == TID


def test_corpus_copy_transforms_and_compiles(cand, tmp_path):
    (c,) = cand(TID, "reduce_sum_smem.cu", "block_sum_interleaved")
    assert SEQUENTIAL in c.new_text and INTERLEAVED not in c.new_text
    _nvcc(c.new_text, tmp_path)


def test_constant_bound_fmaxf_mask_guard_keeps_names(cand, tmp_path):
    (c,) = cand(TID, RV, "tree_max")
    assert "for (int stride = THREADS / 2; stride > 0; stride >>= 1) {\n        if (t < stride)\n" in c.new_text
    assert "smax[t] = fmaxf(smax[t], smax[t + stride]);" in c.new_text
    assert not c.changes_numerics
    assert c.params["loops"][0]["bound"] == 256 and c.params["loops"][0]["combine"] == "fmaxf"
    _nvcc(c.new_text, tmp_path)


def test_strided_index_form_becomes_sequential(cand, tmp_path):
    (c,) = cand(TID, RV, "tree_strided")
    assert "int index" not in c.new_text.split("tree_strided")[1].split("tree_minus")[0]
    assert (
        "for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n        if (tid < s) {\n"
        "            sdata[tid] = sdata[tid] + sdata[tid + s];\n        }\n        __syncthreads();\n    }"
    ) in c.new_text
    assert c.params["loops"][0]["form"] == "strided"
    assert not c.changes_numerics  # int additions are exact in any order
    _nvcc(c.new_text, tmp_path)


@pytest.mark.parametrize(
    "kernel,needle",
    [
        ("tree_odd_block", "192 threads per block, not a power of two"),
        ("tree_minus", "uses -=, which is not associative"),
        ("tree_global_tid", "not threadIdx.x"),
        ("tree_sequential", "already uses sequential addressing"),
        ("serial_sum", "serial_sum has no shared-memory tree reduction"),
        ("tree_reads_partial", "sdata[THREADS / 2]"),
        ("tree_precedence_bug", "parses as `a & (b == 0)`"),
    ],
)
def test_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, RV, kernel)


def test_a_tree_over_blockdim_needs_no_launch(cand, tmp_path):
    """The interleaved tree over blockDim.x reads past the block for any block size that is not a power of two,
    so it is defined only where sequential addressing equals it: a kernel launched elsewhere gets the step."""
    (c,) = cand(TID, RV, "tree_unlaunched")
    body = c.new_text.split("tree_unlaunched")[1].split("__global__")[0]
    assert "for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1)" in body and "tid < s" in body
    assert c.params["block"] == "runtime"
    _nvcc(c.new_text, tmp_path)


def test_a_block_known_only_at_run_time_gets_the_step():
    res = _propose(BLOCK="n_threads()")
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert "s > 0; s >>= 1)" in c.new_text and c.params["block"] == "runtime"


def test_a_constant_tree_without_a_launch_is_refused():
    res = _propose(BLOCK="n_threads()", HEADER="unsigned int s = 1; s < T; s *= 2")
    assert isinstance(res, NotApplicable) and "not a compile-time constant" in res.reason, res


def test_no_loop_in_the_body_is_refused(refuse):
    assert "saxpy_i64 has no shared-memory tree reduction" in refuse(TID, "elementwise_variants.cu", "saxpy_i64")


def test_the_sequential_result_is_not_transformed_again():
    model = load(str(SUITE))
    (c,) = registry.propose(TID, model, model.kernel("block_sum_interleaved"))
    again = parse_text(c.new_text, "cuda", str(SUITE))
    res = registry.propose(TID, again, again.kernel("block_sum_interleaved"))
    assert isinstance(res, NotApplicable) and "already uses sequential addressing" in res.reason


def test_suggest_lists_the_strategy_with_its_transform(tmp_path):
    env = dict(os.environ, HTAM_MEMORY=str(tmp_path / "m.sqlite3"), HTAM_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run(
        [sys.executable, "-m", "htam_core.cli.main", "suggest", str(SUITE), "--kernel", "block_sum_interleaved",
         "--static", "--top", "40", "--json"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )
    assert p.returncode == 0, p.stderr
    steps = {s["strategy"]: s for s in json.loads(p.stdout)}
    assert steps["sequential_addressing"]["transform"] == TID


TEMPLATE = """#define T 256
__global__ void k(float *out)
{
    __shared__ float sdata[T];
    unsigned int tid = TIDINIT;
    sdata[tid] = 1.0f;
    __syncthreads();
    for (HEADER) {
        if (GUARD) {
            COMBINE
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
void host(float *out) { k<<<4, BLOCK>>>(out); }
"""
BASE = {"TIDINIT": "threadIdx.x", "HEADER": "unsigned int s = 1; s < blockDim.x; s *= 2",
        "GUARD": "tid % (2 * s) == 0", "COMBINE": "sdata[tid] += sdata[tid + s];", "BLOCK": "T"}


def _propose(**over: str):
    text = TEMPLATE
    for key, value in {**BASE, **over}.items():
        text = text.replace(key, value)
    model = parse_text(text, "cuda")
    return registry.propose(TID, model, model.kernel("k"))


@pytest.mark.parametrize(
    "over",
    [
        {},
        {"HEADER": "unsigned int s = 1; s < T; s = s * 2"},
        {"HEADER": "int s = 1; s < blockDim.x; s <<= 1"},
        {"GUARD": "(tid % (2*s)) == 0"},
        {"GUARD": "!(tid % (2 * s))"},
        {"GUARD": "0 == tid % (s * 2)"},
        {"GUARD": "(tid & (2 * s - 1)) == 0"},
        {"COMBINE": "sdata[tid] = sdata[tid] + sdata[tid + s];"},
        {"COMBINE": "sdata[tid] = sdata[s + tid] + sdata[tid];"},
        {"COMBINE": "sdata[tid] = fminf(sdata[tid], sdata[tid + s]);"},
        {"COMBINE": "sdata[tid] = max(sdata[tid + s], sdata[tid]);"},
        {"TIDINIT": "(unsigned int)threadIdx.x"},
        {"BLOCK": "dim3(128)"},
    ],
)
def test_accepted_forms(over):
    res = _propose(**over)
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert "s > 0; s >>= 1)" in c.new_text and "if (tid < s) {" in c.new_text
    combine = {**BASE, **over}["COMBINE"]
    assert combine in c.new_text


@pytest.mark.parametrize(
    "over,needle",
    [
        ({"COMBINE": "sdata[tid] *= sdata[tid + s];"}, "uses *="),
        ({"COMBINE": "sdata[tid] = sdata[tid] - sdata[tid + s];"}, "uses -, which is not associative"),
        ({"COMBINE": "sdata[tid] = fdividef(sdata[tid], sdata[tid + s]);"}, "uses fdividef"),
        ({"COMBINE": "sdata[tid] += sdata[tid + 1];"}, "is not `sdata[tid] += sdata[tid + s]`"),
        ({"BLOCK": "dim3(16, 16)"}, "multi-dimensional block"),
        ({"BLOCK": "128", "HEADER": "unsigned int s = 1; s < T; s *= 2"}, "runs to 256 but the launch"),
        ({"HEADER": "unsigned int s = 2; s < blockDim.x; s *= 2"}, "not at 1"),
        ({"HEADER": "unsigned int s = 1; s < blockDim.x; s += 1"}, "does not double s"),
        ({"HEADER": "unsigned int s = 1; s <= blockDim.x; s *= 2"}, "is not `s < blockDim.x`"),
        ({"TIDINIT": "threadIdx.x; tid += 0"}, "tid is modified"),
        ({"TIDINIT": "threadIdx.y"}, "not threadIdx.x"),
        ({"GUARD": "tid % (2 * s) == 1"}, "is not `tid % (2 * s) == 0`"),
    ],
)
def test_refused_forms(over, needle):
    res = _propose(**over)
    assert isinstance(res, NotApplicable)
    assert needle in res.reason, res.reason
