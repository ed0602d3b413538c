"""Shared-memory tree reductions whose guard holds several combines (a min and a max, a sum and a sum of
squares), or whose combine is a comparison and a choice (``a[t] = a[t + s] > a[t] ? a[t + s] : a[t]``).

``cuda.sequential_addressing`` rewrites every combine of the guard, ``cuda.warp_shuffle_finish`` finishes every
array with its own shuffle chain (a selection keeps its own comparison), and ``cuda.coarsen_reduction`` refuses a
tree of several arrays in one line. Every rewrite compiles with nvcc (sm_90) and runs on the CPU
(:func:`cpu_emulation.run_block_main`) on blocks of 64, 128 and 256 threads and sizes that are not multiples of
the block, against the original kernel and against per-block values computed here (the inputs are multiples of a
half, so every summation order gives the same sums).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import SM_GRID_PRELUDE, compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text, fixture_path

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, NotApplicable

SEQ, WARP, COARSEN = "cuda.sequential_addressing", "cuda.warp_shuffle_finish", "cuda.coarsen_reduction"
FILE = "tree_combines.cu"
BLOCKS = (64, 128, 256)
SIZES = (77, 1000, 4099)
#: kernel -> how the emulation calls it (the outputs ``a`` and ``b``), its per-block folds of the elements
KERNELS = {
    "minmax_two": ("minmax_two(x.data(), a.data(), b.data(), n)", (min, max)),
    "mean_var": ("mean_var(x.data(), a.data(), b.data(), n)", (sum, lambda vs: sum(v * v for v in vs))),
    "tern_max": ("tern_max(x.data(), a.data(), n)", (max,)),
    "tsum_max": ("tsum_max<float>(x.data(), a.data(), b.data(), n)", (sum, max)),
    "minmax_cg": ("minmax_cg(x.data(), a.data(), b.data(), n)", (min, max)),
}
TERNARY = "sdata[tid] = sdata[tid + s] > sdata[tid] ? sdata[tid + s] : sdata[tid];"
#: other spellings of the block max of ``tern_max``
MAX_SPELLINGS = (
    "sdata[tid] = (sdata[tid] < sdata[tid + s]) ? sdata[tid + s] : sdata[tid];",
    "sdata[tid] = sdata[tid] >= sdata[tid + s] ? sdata[tid] : sdata[tid + s];",
    "if (sdata[tid + s] > sdata[tid]) sdata[tid] = sdata[tid + s];",
)


def _propose(text: str, tid: str, kernel: str) -> list[Candidate] | NotApplicable:
    model = parse_text(text, "cuda", "tree_combines.cu")
    return registry.propose(tid, model, model.kernel(kernel))


def _made(text: str, tid: str, kernel: str) -> str:
    res = _propose(text, tid, kernel)
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    return c.new_text


def _variants(text: str, kernel: str) -> dict[str, str]:
    """The rewrites of ``kernel``: sequential addressing, the warp finish, and the warp finish after it."""
    seq = _made(text, SEQ, kernel)
    return {"seq": seq, "warp": _made(text, WARP, kernel), "seq+warp": _made(seq, WARP, kernel)}


def _kernel_body(text: str, kernel: str) -> str:
    start = text.index(f" {kernel}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_every_combine_gets_sequential_addressing(kernel):
    text = fixture_path(FILE).read_text()
    res = _propose(text, SEQ, kernel)
    assert not isinstance(res, NotApplicable), res.reason
    body = _kernel_body(res[0].new_text, kernel)
    assert "% (2 * s)" not in body and "& (2 * s - 1)" not in body and "index" not in body
    assert "s = blockDim.x / 2; s > 0; s >>= 1" in body


@pytest.mark.parametrize("kernel", ["minmax_two", "mean_var", "tsum_max", "minmax_cg"])
def test_the_warp_finish_keeps_one_shuffle_chain_per_array(kernel):
    text = fixture_path(FILE).read_text()
    res = _propose(text, WARP, kernel)
    assert not isinstance(res, NotApplicable), res.reason
    arrays = res[0].params["arrays"]
    body = _kernel_body(res[0].new_text, kernel)
    assert len(arrays) == 2 and "arrays " + ", ".join(arrays) in res[0].description
    for a in arrays:
        assert body.count(f"__shfl_down_sync(0xffffffffu, htam_v_{a}, htam_o)") == 1
        assert f"{a}[0] = htam_v_{a};" in body


def test_a_selection_keeps_its_comparison_in_the_shuffles():
    text = fixture_path(FILE).read_text()
    body = _kernel_body(_made(text, WARP, "tern_max"), "tern_max")
    assert "float htam_w = __shfl_down_sync(0xffffffffu, htam_v, htam_o);" in body
    assert "htam_v = htam_w > htam_v ? htam_w : htam_v;" in body
    assert "fmaxf" not in body
    mixed = _kernel_body(_made(text, WARP, "minmax_cg"), "minmax_cg")
    assert "htam_v_lo = htam_w_lo < htam_v_lo ? htam_w_lo : htam_v_lo;" in mixed
    assert "htam_v_hi = max(htam_v_hi, __shfl_down_sync(0xffffffffu, htam_v_hi, htam_o));" in mixed


@pytest.mark.parametrize("spelling", MAX_SPELLINGS)
def test_other_spellings_of_a_selection_are_read_as_a_max(spelling):
    text = fixture_path(FILE).read_text().replace(TERNARY, spelling)
    for tid in (SEQ, WARP):
        res = _propose(text, tid, "tern_max")
        assert not isinstance(res, NotApplicable), res.reason
        assert res[0].params["loops"][0]["combine"] == "max" if tid == SEQ else res[0].params["combine"] == "max"


@pytest.mark.parametrize(("line", "needle"), [
    ("sdata[tid] = sdata[tid + s] > 0.0f ? sdata[tid + s] : sdata[tid];", "is not `sdata[tid] += sdata[tid + s]`"),
    ("sdata[tid] = sdata[tid + s] > sdata[tid] ? sdata[tid] : sdata[tid + 1];", "is not `sdata[tid] += sdata"),
])
def test_a_choice_that_is_not_a_max_is_refused(line, needle):
    text = fixture_path(FILE).read_text().replace(TERNARY, line)
    for tid in (SEQ, WARP):
        res = _propose(text, tid, "tern_max")
        assert isinstance(res, NotApplicable) and needle in res.reason


def test_overlapping_views_and_a_repeated_array_are_refused():
    text = fixture_path(FILE).read_text()
    for tid in (SEQ, WARP):
        res = _propose(text.replace("*smax = smem + blockDim.x;", "*smax = smem + 16;"), tid, "minmax_two")
        assert isinstance(res, NotApplicable) and "smin and smax may share shared-memory entries" in res.reason
        twice = text.replace("smax[tid] = fmaxf(smax[tid], smax[tid + s]);", "smin[tid] = fminf(smin[tid], smin[tid + s]);")
        res = _propose(twice, tid, "minmax_two")
        assert isinstance(res, NotApplicable) and "combines smin twice in one step" in res.reason
    # two views a whole block apart, written with the address of an element, are apart
    assert not isinstance(_propose(text, SEQ, "minmax_cg"), NotApplicable)


@pytest.mark.parametrize("kernel", ["minmax_two", "mean_var", "tsum_max", "minmax_cg"])
def test_the_add_during_load_refuses_several_arrays_in_one_line(kernel):
    res = _propose(fixture_path(FILE).read_text(), COARSEN, kernel)
    assert isinstance(res, NotApplicable)
    assert "together; the add during load accumulates one value per thread" in res.reason
    assert "\n" not in res.reason


def test_the_trial_pair_takes_both_steps():
    text = fixture_path("minmax_reduce_trial.cu").read_text()
    for tid in (SEQ, WARP):
        res = _propose(text, tid, "minmax_reduce")
        assert not isinstance(res, NotApplicable), res.reason
    assert "cg::sync(cta);" in _kernel_body(_made(text, WARP, "minmax_reduce"), "minmax_reduce")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(tmp_path: Path):
    text = fixture_path(FILE).read_text()
    files = [_made(text, tid, k) for k in KERNELS for tid in (SEQ, WARP)]
    files += [_made(text.replace(TERNARY, sp), WARP, "tern_max") for sp in MAX_SPELLINGS]
    for i, t in enumerate(files):
        assert_nvcc_compiles(t, tmp_path, f"c{i}.cu")


_PRELUDE = """
#include <algorithm>
#include <cfloat>
#include <cmath>
using std::max;
using std::min;
namespace cg {  // the cooperative-groups calls the kernels keep
struct thread_block { unsigned thread_rank() const { return threadIdx.x; } };
inline thread_block this_thread_block() { return {}; }
inline void sync(thread_block) { __syncthreads(); }
}
template <class T> struct DynShared { operator T *() { static unsigned char b[1 << 16]; return (T *)b; } };
"""

_MAIN = """
int main() {
    for (int threads : {BLOCKS}) for (int n : {SIZES}) {
        const int blocks = (n + threads - 1) / threads;
        std::vector<float> x(n), a(blocks), b(blocks);
        for (int k = 0; k < n; ++k) x[k] = 0.5f * (float)((k * 37) % 41) - 10.0f;
        htam_launch(blocks, threads, 1, [&] { CALL; });
        for (int j = 0; j < blocks; ++j) std::printf("%.9g %.9g\\n", a[j], b[j]);
    }
    return 0;
}
"""


def _expected(kernel: str) -> list[float]:
    folds = KERNELS[kernel][1]
    out: list[float] = []
    for threads in BLOCKS:
        for n in SIZES:
            xs = [0.5 * ((k * 37) % 41) - 10.0 for k in range(n)]
            for j in range(0, n, threads):
                vals = [f(xs[j:j + threads]) for f in folds]
                out += [float(v) for v in vals] + [0.0] * (2 - len(vals))
    return out


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_rewrites_reduce_the_same_on_the_cpu(kernel, tmp_path: Path):
    text = fixture_path(FILE).read_text()
    main = (_MAIN.replace("BLOCKS", ", ".join(map(str, BLOCKS))).replace("SIZES", ", ".join(map(str, SIZES)))
            .replace("CALL", KERNELS[kernel][0]))
    want = _expected(kernel)
    assert run_block_main(text, kernel, main, tmp_path, prelude=_PRELUDE) == want
    for name, t in _variants(text, kernel).items():
        assert run_block_main(t, kernel, main, tmp_path, prelude=_PRELUDE) == want, name


_TOTAL_MAIN = """
int main() {
    for (int n : {SIZES}) {
        std::vector<int> x(n), total(1, INT_MIN);
        for (int k = 0; k < n; ++k) x[k] = (k * 7919) % 10007 - 5000;
        htam_launch(GRID, 256, 1, [&] { imax_total(x.data(), total.data(), n); });
        std::printf("%d\\n", total[0]);
    }
    return 0;
}
"""


def test_the_add_during_load_chooses_with_the_trees_comparison(tmp_path: Path):
    text = fixture_path(FILE).read_text()
    res = _propose(text, COARSEN, "imax_total")
    assert not isinstance(res, NotApplicable), res.reason
    assert [c.params["combine"] for c in res] == ["max", "max"] and res[0].params["form"] == "tree"
    body = _kernel_body(res[0].new_text, "imax_total")
    assert "htam_v = htam_v > x[htam_j] ? htam_v : x[htam_j];" in body and "max(" not in body
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    made = res[0].new_text
    (grid,) = [d.text for d in facts_of_text(made, "imax_total").launches[0].grid]
    main = _TOTAL_MAIN.replace("SIZES", ", ".join(map(str, SIZES))).replace("GRID", grid)
    got = run_block_main(made, "imax_total", main, tmp_path, prelude="#include <climits>\n" + SM_GRID_PRELUDE)
    assert got == [float(max((k * 7919) % 10007 - 5000 for k in range(n))) for n in SIZES]
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(made, tmp_path, "coarsen.cu")


def test_an_int_selection_tree_takes_the_warp_finish_exactly():
    res = _propose(fixture_path(FILE).read_text(), WARP, "imax_total")
    assert not isinstance(res, NotApplicable), res.reason
    assert not res[0].changes_numerics and res[0].params["combine"] == "max"
    assert "htam_v = htam_v > htam_w ? htam_v : htam_w;" in res[0].new_text


_THREE = """
__global__ void stats3(const float *x, float *bsum, int *bcount, float *bmax, int n) {
    __shared__ float ssum[128];
    __shared__ int scount[128];
    __shared__ float smax[128];
    int tid = threadIdx.x;
    int i = blockIdx.x * 128 + tid;
    ssum[tid] = i < n ? x[i] : 0.0f;
    scount[tid] = i < n && x[i] > 0.0f;
    smax[tid] = i < n ? x[i] : -1e30f;
    __syncthreads();
    for (int s = 1; s < 128; s += s) {
        if (!(tid % (s * 2))) {
            ssum[tid] = ssum[tid] + ssum[tid + s];
            scount[tid] += scount[tid + s];
            if (smax[tid + s] > smax[tid]) smax[tid] = smax[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) { bsum[blockIdx.x] = ssum[0]; bcount[blockIdx.x] = scount[0]; bmax[blockIdx.x] = smax[0]; }
}
void run_stats3(const float *x, float *s, int *c, float *m, int n) { stats3<<<(n + 127) / 128, 128>>>(x, s, c, m, n); }
"""


def test_three_arrays_of_two_types_in_one_guard(tmp_path: Path):
    seq = _made(_THREE, SEQ, "stats3")
    assert "if (tid < s) {" in seq and "s = 128 / 2; s > 0; s >>= 1" in seq
    res = _propose(_THREE, WARP, "stats3")
    assert not isinstance(res, NotApplicable), res.reason
    body = res[0].new_text
    assert res[0].params["arrays"] == ["ssum", "scount", "smax"] and res[0].params["combine"] == "+/+/max"
    assert "int htam_v_scount = scount[tid] + scount[tid + 32];" in body
    assert "float htam_w_smax = __shfl_down_sync(0xffffffffu, htam_v_smax, htam_o);" in body
    assert "htam_v_smax = htam_w_smax > htam_v_smax ? htam_w_smax : htam_v_smax;" in body
    assert "if (tid == 0) { ssum[0] = htam_v_ssum; scount[0] = htam_v_scount; smax[0] = htam_v_smax; }" in body
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(body, tmp_path, "three.cu")
        assert_nvcc_compiles(seq, tmp_path, "three_seq.cu")


_THREE_MAIN = """
int main() {
    for (int n : {SIZES}) {
        const int blocks = (n + 127) / 128;
        std::vector<float> x(n), s(blocks), m(blocks);
        std::vector<int> c(blocks);
        for (int k = 0; k < n; ++k) x[k] = 0.5f * (float)((k * 37) % 41) - 10.0f;
        htam_launch(blocks, 128, 1, [&] { stats3(x.data(), s.data(), c.data(), m.data(), n); });
        for (int j = 0; j < blocks; ++j) std::printf("%.9g %d %.9g\\n", s[j], c[j], m[j]);
    }
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
def test_three_arrays_reduce_the_same_on_the_cpu(tmp_path: Path):
    main = _THREE_MAIN.replace("SIZES", ", ".join(map(str, SIZES)))
    want: list[float] = []
    for n in SIZES:
        xs = [0.5 * ((k * 37) % 41) - 10.0 for k in range(n)]
        for j in range(0, n, 128):
            part = xs[j:j + 128]
            want += [sum(part), float(sum(1 for v in part if v > 0)), max(part)]
    seq = _made(_THREE, SEQ, "stats3")
    for text in (_THREE, seq, _made(_THREE, WARP, "stats3"), _made(seq, WARP, "stats3")):
        assert run_block_main(text, "stats3", main, tmp_path) == want
