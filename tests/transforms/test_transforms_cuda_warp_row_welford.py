"""cuda.warp_per_row on Welford's recurrence: each lane keeps its own (count, mean, M2) over the elements lane,
lane + 32, ..., and five shuffle-xor steps merge them by Chan, Golub and LeVeque's formula, so every lane ends with
the row's mean and M2. The textbook pair's naive kernel is rewritten and compiles; a CPU emulation of the lanes and
the butterfly (float32, as the kernel computes) matches the one thread's recurrence for rows of any length."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import assert_nvcc_compiles, only_candidate

from htam_core.source import load
from htam_core.transforms import registry

NAIVE = (Path(__file__).resolve().parents[2] / "bench" / "results" / "textbook-trial12-static-2026-12-07" / "pairs"
         / "welford_llmc" / "naive.cu")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

COUNTER = """__global__ void stats(const float *x, float *mean, float *var, int rows, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float *p = x + (size_t)r * C;
        float m = 0.0f, m2 = 0.0f, s = 0.0f;
        int n = 0;
        for (int i = 0; i < C; ++i) {
            float v = p[i];
            n++;
            float delta = v - m;
            m = m + delta / n;
            float delta2 = v - m;
            m2 += delta * delta2;
            s += v;
        }
        mean[r] = m;
        var[r] = m2 / n + s * 0.0f;
    }
}
void launch(const float *x, float *mean, float *var, int rows, int C) {
    stats<<<(rows + 255) / 256, 256>>>(x, mean, var, rows, C);
}
"""


IMPLICIT = """__global__ void stats(const float *x, float *mean, float *var, int rows, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *p = x + (size_t)r * C;
    float m = 0.0f, m2 = 0.0f;
    for (int i = 0; i < C; i++) {
        float v = p[i];
        float d = v - m;
        m += d / (float)(i + 1);
        m2 += d * (v - m);
    }
    mean[r] = m;
    var[r] = m2 / (float)C;
}
void launch(const float *x, float *mean, float *var, int rows, int C) {
    stats<<<(rows + 255) / 256, 256>>>(x, mean, var, rows, C);
}
"""


def _naive_candidate():
    model = load(str(NAIVE))
    res = registry.propose("cuda.warp_per_row", model, model.kernel("welford_stats_kernel"))
    assert isinstance(res, list), res.reason
    (c,) = res
    return c


def test_the_textbook_naive_kernel_is_split_over_the_lanes():
    c = _naive_candidate()
    t = c.new_text
    assert "for (int i = htam_lane; i < C; i += 32)" in t
    assert "m += d / (float)((i / 32 + 1));" in t  # the lane's own count
    assert "int htam_wn = (C) > htam_lane ? ((C) - htam_lane + 32 - 1) / 32 : 0;" in t
    assert t.count("__shfl_xor_sync") == 3  # mean, M2 and count, in one butterfly
    assert "m = htam_ma + htam_d * htam_nb / htam_n;" in t
    assert "m2 = htam_qa + htam_qb + htam_d * htam_d * htam_na * htam_nb / htam_n;" in t
    assert "if (htam_lane == 0) { mean[idx] = m; }" in t
    assert "welford_stats_kernel<<<(grid_size) * 32, block_size>>>" in t
    assert c.params["reduced"] == [{"name": "m, m2", "op": "welford (count, mean, M2)"}]
    assert c.changes_numerics


@needs_nvcc
def test_the_textbook_candidate_compiles(tmp_path):
    assert_nvcc_compiles(_naive_candidate().new_text, tmp_path)


def test_an_explicit_counter_is_merged_and_written_back_beside_a_sum():
    c = only_candidate("cuda.warp_per_row", COUNTER, "stats")
    t = c.new_text
    assert "int htam_wn = n;" in t and "n = htam_wn;" in t
    assert "m = m + delta / n;" in t  # each lane's counter already counts its own elements
    assert "s += __shfl_xor_sync(0xffffffffu, s, htam_o);" in t
    assert {r["name"] for r in c.params["reduced"]} == {"s", "m, m2, n"}


@needs_nvcc
def test_the_explicit_counter_candidate_compiles(tmp_path):
    assert_nvcc_compiles(only_candidate("cuda.warp_per_row", COUNTER, "stats").new_text, tmp_path)


@pytest.mark.parametrize("edit,needle", [
    ("float m = 0.0f, m2 = 0.0f, s = 0.0f;", "float m = 0.0f, m2 = 1.0f, s = 0.0f;"),
    ("int n = 0;", "int n = 1;"),
])
def test_a_start_other_than_zero_is_refused(edit, needle):
    from htam_core.source import parse_text
    model = parse_text(COUNTER.replace(edit, needle), "cuda")
    res = registry.propose("cuda.warp_per_row", model, model.kernel("stats"))
    assert not isinstance(res, list) and "does not start at 0" in res.reason


def test_the_block_per_row_step_says_it_cannot_merge_welford():
    model = load(str(NAIVE))
    res = registry.propose("cuda.block_per_row", model, model.kernel("welford_stats_kernel"))
    assert not isinstance(res, list) and "Welford" in res.reason


@pytest.mark.gpu
@pytest.mark.parametrize("text", [IMPLICIT, COUNTER], ids=["implicit", "counter"])
@pytest.mark.parametrize("cols", [1, 5, 31, 33, 775])
def test_equivalence_on_gpu(text, cols, tmp_path):
    """The warp's merged mean and variance equal the one thread's, for rows shorter than a warp and not a multiple
    of 32 (float32 arithmetic in another order)."""
    torch = torch_cuda()
    rows = 1003
    x = torch.randn(rows, cols, device="cuda", generator=torch.Generator(device="cuda").manual_seed(cols)) * 3 + 5
    outs = []
    for i, t in enumerate([text, only_candidate("cuda.warp_per_row", text, "stats").new_text]):
        mean, var = torch.full((rows,), 7.0, device="cuda"), torch.full((rows,), 7.0, device="cuda")
        call_host(t, "const float *x, float *mean, float *var, int rows, int C", "launch(x, mean, var, rows, C)",
                  [x, mean, var, rows, cols], tmp_path, f"w{i}")
        outs.append((mean, var))
    for a, b in zip(outs[1], outs[0], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(outs[0][0], x.double().mean(1).float(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(outs[0][1], x.double().var(1, unbiased=False).float(), rtol=1e-3, atol=1e-3)


def test_the_implicit_count_kernel_is_made():
    t = only_candidate("cuda.warp_per_row", IMPLICIT, "stats").new_text
    assert "m += d / (float)((i / 32 + 1));" in t and "stats<<<((rows + 255) / 256) * 32, 256>>>" in t


# ---------------------------------------------------------------- CPU emulation of the candidate's arithmetic

F = np.float32


def _serial(x: np.ndarray) -> tuple[np.float32, np.float32]:
    """The one thread's loop: ``d = v - m; m += d / (i + 1); m2 += d * (v - m)`` in float32."""
    m, m2 = F(0), F(0)
    for i, v in enumerate(x):
        d = F(v - m)
        m = F(m + F(d / F(i + 1)))
        m2 = F(m2 + F(d * F(v - m)))
    return m, m2


def _warp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidate: lane ``l`` runs the recurrence over ``l, l + 32, ...`` with the count ``i / 32 + 1``; its
    count after the loop is ``C > l ? (C - l + 31) / 32 : 0``; then the xor butterfly merges (lower, upper) pairs
    by Chan's formula, an empty side taken as the other side. Returns every lane's mean, M2 and count."""
    c = len(x)
    m, q = np.zeros(32, F), np.zeros(32, F)
    for lane in range(32):
        for i in range(lane, c, 32):
            v = F(x[i])
            d = F(v - m[lane])
            m[lane] = F(m[lane] + F(d / F(i // 32 + 1)))
            q[lane] = F(q[lane] + F(d * F(v - m[lane])))
    n = np.array([(c - lane + 31) // 32 if c > lane else 0 for lane in range(32)], np.int64)
    o = 16
    while o:
        nm, nq, nn = m.copy(), q.copy(), n.copy()
        for lane in range(32):
            lo, hi = sorted((lane, lane ^ o))
            na, nb = F(n[lo]), F(n[hi])
            if nb == 0:
                nm[lane], nq[lane] = m[lo], q[lo]
            elif na == 0:
                nm[lane], nq[lane] = m[hi], q[hi]
            else:
                tot, d = F(na + nb), F(m[hi] - m[lo])
                nm[lane] = F(m[lo] + F(F(d * nb) / tot))
                nq[lane] = F(F(q[lo] + q[hi]) + F(F(F(F(d * d) * na) * nb) / tot))
            nn[lane] = n[lane] + n[lane ^ o]
        m, q, n, o = nm, nq, nn, o // 2
    return m, q, n


@pytest.mark.parametrize("c", [1, 2, 7, 31, 33, 100, 775])
def test_the_lane_merge_equals_the_one_threads_recurrence(c):
    rng = np.random.default_rng(c)
    x = (rng.standard_normal(c) * 3 + 5).astype(F)
    m, q, n = _warp(x)
    sm, sq = _serial(x)
    assert (n == c).all()
    assert len(set(m.tolist())) == 1 and len(set(q.tolist())) == 1  # every lane holds the same bits
    ref_m, ref_q = float(np.mean(x.astype(np.float64))), float(np.sum((x.astype(np.float64) - x.mean()) ** 2))
    assert m[0] == pytest.approx(float(sm), rel=1e-5, abs=1e-6)
    assert q[0] == pytest.approx(float(sq), rel=1e-4, abs=1e-4)
    assert m[0] == pytest.approx(ref_m, rel=1e-5, abs=1e-6) and q[0] == pytest.approx(ref_q, rel=1e-4, abs=1e-4)
