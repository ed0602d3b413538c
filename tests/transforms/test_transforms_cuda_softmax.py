"""``cuda.online_softmax`` (merge the max and sum-of-exp passes) and its composition with ``cuda.warp_per_row``.

Equivalence is checked numerically: the thread-per-row kernels before and after the merge run on the CPU
(``cpu_emulation``) and must agree to float rounding, also on rows that start with ``-inf`` (masked entries).
The warp forms use shuffles, so they are checked by construction: both orders of the two steps give the same
kernel, and it compiles with nvcc (test_transforms_cuda_compile.py compiles every candidate of these fixtures).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_rows
from transform_helpers import fixture_path

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

TID = "cuda.online_softmax"
VARIANTS = "softmax_variants.cu"
CORPUS = "softmax_row_per_thread.cu"
needs_cxx = pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")


def _chain(file: str, kernel: str, ids: list[str]) -> str:
    path = fixture_path(file)
    text = path.read_text()
    for tid in ids:
        model = parse_text(text, "cuda", str(path))
        res = registry.propose(tid, model, model.kernel(kernel))
        assert not isinstance(res, NotApplicable), (tid, res.reason)
        text = res[0].new_text
    return text


def test_online_merges_the_corpus_softmax(cand):
    (c,) = cand(TID, CORPUS, "softmax_row_per_thread")
    assert c.params == {"max": "m", "sum": "denom", "warp": False} and c.changes_numerics and not c.reorders_only
    body = c.new_text.split("softmax_row_per_thread(")[1].split("void softmax_forward")[0]
    assert body.count("for (int j = 0; j < cols; ++j)") == 2  # three passes became two
    assert "denom = (m == htam_mn ? denom : denom * expf(m - htam_mn)) + " in body


@needs_cxx
@pytest.mark.parametrize(("file", "kernel", "neg_inf"), [
    (CORPUS, "softmax_row_per_thread", 0), (VARIANTS, "softmax_if_double", 0), (VARIANTS, "softmax_if_double", 5),
    (CORPUS, "softmax_row_per_thread", 3),
])
def test_online_gives_the_same_softmax_on_the_cpu(file, kernel, neg_inf, tmp_path):
    start = fixture_path(file).read_text()
    merged = _chain(file, kernel, [TID])
    before = run_rows(start, kernel, 37, 300, 8, tmp_path, neg_inf_cols=neg_inf)
    after = run_rows(merged, kernel, 37, 300, 8, tmp_path, neg_inf_cols=neg_inf)
    assert len(before) == len(after) == 37 * 300
    assert all(abs(a - b) <= 1e-6 + 1e-5 * abs(b) for a, b in zip(after, before, strict=True))
    assert any(v > 0 for v in after) and not any(v != v for v in after)  # no NaN from the -inf entries


@pytest.mark.parametrize(("file", "kernel"), [(CORPUS, "softmax_row_per_thread"), (VARIANTS, "softmax_if_double")])
def test_online_and_warp_per_row_compose_in_either_order(file, kernel):
    a = _chain(file, kernel, ["cuda.warp_per_row", TID])
    b = _chain(file, kernel, [TID, "cuda.warp_per_row"])
    assert a == b
    assert "const int htam_lane = threadIdx.x & 31;" in a and "htam_os = __shfl_xor_sync(0xffffffffu" in a
    assert a.count("+= 32)") == 2  # two passes, each strided over the warp's lanes


def test_warp_per_row_takes_an_if_max_and_a_double_sum(cand):
    (c,) = cand("cuda.warp_per_row", VARIANTS, "softmax_if_double")
    assert "if (htam_v > mx) mx = htam_v;" in c.new_text
    assert "sum += __shfl_xor_sync(0xffffffffu, sum, htam_o);" in c.new_text


@pytest.mark.parametrize(("file", "kernel", "needle"), [
    (VARIANTS, "softmax_store_then_sum", "is not `sum += expf(x - mx)`"),
    (VARIANTS, "softmax_scaled", "the sum loop exponentiates scale * x[c], not the x[c]"),
    ("elementwise_variants.cu", "saxpy_i64", "no loop of the kernel computes a running max"),
    ("sgemm_naive.cu", "sgemm_naive", "no loop of the kernel computes a running max"),
])
def test_online_refusals(refuse, file, kernel, needle):
    assert needle in refuse(TID, file, kernel)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_composed_warp_kernels_compile(tmp_path: Path):
    for file, kernel in [(CORPUS, "softmax_row_per_thread"), (VARIANTS, "softmax_if_double")]:
        assert_compiles(_chain(file, kernel, ["cuda.warp_per_row", TID]), tmp=tmp_path, name=f"{kernel}.cu")
