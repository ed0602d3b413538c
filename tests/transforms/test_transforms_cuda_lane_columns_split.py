"""``cuda.lane_columns`` on a bias gradient with few columns and many rows (one block per column, a shared tree):
the rows are also split over ``gridDim.y`` row groups, and each block adds its 32 columns' partial sums to the
output with ``atomicAdd``, where the output is accumulated (``+=``); a plain store is refused with its reason.

Kernels in ``bias_grad_variants.cu`` (written for these tests; the shape of llm.c's first bias-gradient kernel:
OC = 768 columns, B*T = 8192 rows, 512 threads). The rewrite is compiled with nvcc for sm_90 and run on the CPU
(:func:`cpu_emulation.run_block_main`: every CUDA thread a host thread, ``atomicAdd`` under a lock) over 2-D grids
of several row-group counts, against column sums computed in Python.
"""

from __future__ import annotations

import math
import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles
from transform_helpers import facts_of_text as _facts

from htam_core.source import parse_text
from htam_core.source.analysis.device_queries import REFERENCE_SM_COUNT
from htam_core.transforms import registry
from htam_core.transforms._lane_split import SPLIT_BELOW_PER_SM, SPLIT_TARGET_PER_SM, row_groups
from htam_core.transforms.base import NotApplicable

TID = "cuda.lane_columns"
FILE = "bias_grad_variants.cu"
SPLIT = ["bias_grad", "bias_grad_shfl", "bias_grad_t", "bias_grad_cg"]
#: the launcher's sizes (B * T rows, OC columns, threads per block)
ROWS, COLS, THREADS = 8 * 1024, 768, 512


def _body(text: str, kernel: str) -> str:
    return text.split(f"void {kernel}(", 1)[1].split("\n}\n", 1)[0]


def _launch_line(text: str, kernel: str) -> str:
    return next(ln.strip() for ln in text.splitlines() if ln.strip().startswith(f"{kernel}<"))


@pytest.mark.parametrize("kernel", SPLIT)
def test_few_columns_split_the_rows_over_grid_y(cand, kernel):
    (c,) = cand(TID, FILE, kernel)
    sm = REFERENCE_SM_COUNT["sm_90"]
    col_blocks = -(-COLS // 32)
    assert col_blocks < SPLIT_BELOW_PER_SM * sm  # the shape needs the split
    (groups,) = c.params["row_groups"]
    assert c.params["column_blocks"] == [col_blocks]
    # about SPLIT_TARGET_PER_SM blocks per SM, and at least one row per warp in every group
    assert col_blocks * groups >= SPLIT_TARGET_PER_SM * sm > col_blocks * (groups - 1)
    assert groups * (THREADS // 32) <= ROWS
    assert f"dim3(((OC) + 31) / 32, {groups}), dim3(32, ((block_size) + 31) / 32)" in _launch_line(c.new_text, kernel)
    body = _body(c.new_text, kernel)
    # the grid-y row loop counts in 64 bits and declares the kernel's int row from it (a 32-bit i would wrap past
    # INT_MAX - gridDim.y * blockDim.y rows, where the kernel's warp loop was right)
    assert "htam_gi = blockIdx.y * blockDim.y + threadIdx.y; htam_gi < B * T; htam_gi += gridDim.y * blockDim.y" in body
    assert "for (long long htam_gi" in body and "int i = (int)htam_gi;" in body
    assert "atomicAdd(&dbias[o], sum);" in body and "shared[" not in body
    assert c.reorders_only and c.changes_numerics
    f = _facts(c.new_text, kernel)
    (read,) = [a for a in f.global_accesses() if a.pointer == "dout"]
    assert read.pattern("x") == "contiguous"  # consecutive lanes, consecutive columns


def test_the_block_count_follows_the_sm_count_of_the_profiled_device():
    """The groups are sized for the profiled device's SMs (sm_80: 108), not a fixed number."""
    assert row_groups(COLS, ROWS, THREADS, 108) * 24 >= SPLIT_TARGET_PER_SM * 108
    assert row_groups(COLS, ROWS, THREADS, 108) < row_groups(COLS, ROWS, THREADS, 132)
    assert row_groups(COLS, 64, THREADS, 132) == 64 // 16  # bounded by rows / warps
    assert row_groups(32 * SPLIT_BELOW_PER_SM * 132, ROWS, THREADS, 132) == 1  # enough column blocks already


def test_plain_store_refuses_the_split_with_its_reason(cand):
    """The partial sums of several blocks cannot be added into an output that is stored: one row group, the same
    write, and the reason in the candidate."""
    (c,) = cand(TID, FILE, "bias_grad_store")
    why = c.params["row_split_refused"]
    assert "24 blocks for 132 SMs" in why and "`dbias[o] = shared[0]`" in why
    assert "output known to be zero" in why and "\n" not in why and why in c.description
    assert "row_groups" not in c.params
    body = _body(c.new_text, "bias_grad_store")
    assert "i = threadIdx.y; i < B * T; i += blockDim.y" in body and "dbias[o] = sum;" in body
    assert "atomicAdd" not in body
    assert "bias_grad_store<<<dim3(((OC) + 31) / 32), dim3(32" in c.new_text


def test_unknown_sizes_keep_the_unsplit_form(cand):
    (c,) = cand(TID, FILE, "bias_grad_rt")
    assert "row_groups" not in c.params
    body = _body(c.new_text, "bias_grad_rt")
    assert "i = threadIdx.y; i < B * T; i += blockDim.y" in body and "dbias[o] += sum;" in body
    assert "bias_grad_rt<<<dim3(((OC) + 31) / 32), dim3(32, ((512) + 31) / 32)" in c.new_text


def _propose(text: str, kernel: str = "bias_grad"):
    model = parse_text(text, "cuda")
    return registry.propose(TID, model, model.kernel(kernel))


def _fixture() -> str:
    from transform_helpers import fixture_path
    return fixture_path(FILE).read_text()


@pytest.mark.parametrize("write,made", [
    ("dbias[o] -= shared[0];", "atomicAdd(&dbias[o], -sum);"),
    ("dbias[o] = shared[0] + dbias[o];", "atomicAdd(&dbias[o], sum);"),
    ("dbias[o] += 0.5f * shared[0];", "atomicAdd(&dbias[o], 0.5f * sum);"),
    ("dbias[o] += shared[0] / (float)(B * T);", "atomicAdd(&dbias[o], sum / (float)(B * T));"),
    ("atomicAdd(&dbias[o], shared[0]);", "atomicAdd(&dbias[o], sum);"),
])
def test_other_accumulating_writes_become_atomic_adds(write, made):
    text = _fixture().replace("dbias[o] += shared[0];", write, 1)
    res = _propose(text)
    assert not isinstance(res, NotApplicable), res.reason
    assert made in _body(res[0].new_text, "bias_grad")


@pytest.mark.parametrize("write,needle", [
    ("dbias[o] += shared[0] * shared[0];", "not the column's total times a factor"),
    ("dbias[o] = 2.0f * shared[0];", "stores the column's total rather than adding it"),
    ("dbias[o] += shared[0] + 1.0f;", "adds `shared[0] + 1.0f`, not the column's total times a factor"),
    ("atomicAdd(&dbias[o], shared[0] * shared[0]);", "not the column's total times a factor"),
])
def test_writes_that_do_not_add_the_total_keep_one_row_group(write, needle):
    res = _propose(_fixture().replace("dbias[o] += shared[0];", write, 1))
    assert not isinstance(res, NotApplicable), res.reason
    why = res[0].params["row_split_refused"]
    assert needle in why and "rows are not split over more blocks" in why, why
    assert "blockIdx.y" not in _body(res[0].new_text, "bias_grad")


def test_an_output_read_before_the_write_keeps_one_row_group():
    text = _fixture().replace("int tid = threadIdx.x;", "int tid = threadIdx.x;\n    float before = dbias[o];", 1)
    res = _propose(text)
    assert not isinstance(res, NotApplicable), res.reason
    assert "reads its output dbias on line 13" in res[0].params["row_split_refused"]
    assert "blockIdx.y" not in _body(res[0].new_text, "bias_grad")


def _shfl(old: str, new: str) -> str:
    """``bias_grad_shfl`` alone (with its launcher line) with ``old`` replaced by ``new`` in its body."""
    text = _fixture()
    start = text.index("// the tree stops at one warp")
    end = text.index("// the element type a template parameter")
    kernel = text[start:end]
    assert old in kernel
    launch = _launch_line(text, "bias_grad_shfl")
    return (kernel.replace(old, new) + "void go(float* dbias, const float* dout)\n{\n    const int B = 8, T = 1024, "
            "OC = 768;\n    const int block_size = 512;\n    " + launch + "\n}\n")


@pytest.mark.parametrize("old,new", [
    ("stride >= 32", "stride > 16"),
    ("off /= 2", "off >>= 1"),
    ("__shfl_down_sync", "__shfl_xor_sync"),
    ("if (tid < 32)", "if (threadIdx.x < warpSize)"),
    ("stride >= 32; stride /= 2", "stride >= 64; stride /= 2"),  # with the two reads below
])
def test_other_spellings_of_the_shuffle_finish(old, new):
    text = _shfl(old, new)
    if "64" in new:
        text = text.replace("float v = shared[tid];", "float v = shared[tid] + shared[tid + 32];")
    res = _propose(text, "bias_grad_shfl")
    assert not isinstance(res, NotApplicable), res.reason
    body = _body(res[0].new_text, "bias_grad_shfl")
    assert "atomicAdd(&dbias[o], sum);" in body and "__shfl" not in body and "shared[" not in body


@pytest.mark.parametrize("old,new,needle", [
    ("stride >= 32; stride /= 2", "stride >= 64; stride /= 2", "the warp adds 32 partial sums, the tree leaves 64"),
    ("float v = shared[tid];", "float v = shared[tid] + shared[tid + 32];", "adds 64 partial sums, the tree leaves 32"),
    ("float v = shared[tid];", "float v = shared[tid + 1];", "does not read `shared[tid + 32 * j]`"),
    ("int off = 16", "int off = 8", "is not one statement guarded by"),  # lanes 16-31 never added
    ("if (tid < 32)", "if (tid < 16)", "is not one statement guarded by"),
])
def test_shuffle_finishes_that_miss_partial_sums_are_refused(old, new, needle):
    res = _propose(_shfl(old, new), "bias_grad_shfl")
    assert isinstance(res, NotApplicable)
    assert needle in res.reason and "\n" not in res.reason, res.reason


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_split_candidates_compile_for_sm_90(cand, tmp_path):
    text = _fixture()
    for kernel in SPLIT:
        (c,) = cand(TID, FILE, kernel)
        text = text.replace(_body(text, kernel), _body(c.new_text, kernel), 1).replace(
            _launch_line(text, kernel), _launch_line(c.new_text, kernel), 1)
    assert text.count("atomicAdd(&dbias[o], sum);") == len(SPLIT)
    assert_nvcc_compiles(text, tmp_path)


_MAIN = """
int main() {
    const int B = 3, T = TT, OC = COLS;
    std::vector<float> x((size_t)B * T * OC), out(OC);
    for (int r = 0; r < B * T; ++r)
        for (int c = 0; c < OC; ++c) x[(size_t)r * OC + c] = (float)((r * 7 + c * 3) % 13) - 6.0f;
    for (int c = 0; c < OC; ++c) out[c] = 0.5f * (float)c;
    htam_launch2((OC + 31) / 32, GROUPS, 32, (THREADS + 31) / 32, [&] { CALL(out.data(), x.data(), B, T, OC); });
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel,call", [("bias_grad", "bias_grad"), ("bias_grad_shfl", "bias_grad_shfl"),
                                         ("bias_grad_t", "bias_grad_t<float>"), ("bias_grad_cg", "bias_grad_cg")])
@pytest.mark.parametrize("tt,cols,threads,groups", [(100, 70, 128, 5), (7, 33, 96, 22), (40, 32, 64, 1)])
def test_split_rewrite_adds_every_row_once_on_the_cpu(cand, tmp_path, kernel, call, tt, cols, threads, groups):
    """Any number of row groups gives the same sums added to the output's start (more groups than warps' rows,
    columns not a multiple of 32, one group)."""
    (c,) = cand(TID, FILE, kernel)
    main = (_MAIN.replace("TT", str(tt)).replace("COLS", str(cols)).replace("THREADS", str(threads))
            .replace("GROUPS", str(groups)).replace("CALL", call))
    got = run_block_main(c.new_text, kernel, main, tmp_path)
    want = [0.5 * col + sum(float((r * 7 + col * 3) % 13) - 6.0 for r in range(3 * tt)) for col in range(cols)]
    assert len(got) == cols
    assert all(math.isclose(g, w, abs_tol=1e-3) for g, w in zip(got, want, strict=True)), (got, want)


def test_rows_unknown_at_the_launch_keep_the_unsplit_form():
    text = _fixture().replace("void launch_bias_grads(float* dbias, const float* dout)",
                              "void launch_bias_grads(float* dbias, const float* dout, int B, int T)").replace(
        "const int B = 8, T = 1024, OC = 768;", "const int OC = 768;")
    res = _propose(text)
    assert not isinstance(res, NotApplicable), res.reason
    assert "row_groups" not in res[0].params and "blockIdx.y" not in _body(res[0].new_text, "bias_grad")


WARP = """#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
#define ROWS 4096
__global__ void colsum_warp(float *out, const float *x, int rows, int cols)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int c = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (c >= cols) { return; }
    float s = 0.0f;
    for (int r = warp.thread_rank(); r < rows; r += warp.size()) {
        s += x[r * cols + c];
    }
    s = cg::reduce(warp, s, cg::plus<float>{});
    if (warp.thread_rank() == 0) {
        out[c] = out[c] + s;
    }
}
void run(float *out, const float *x) {
    colsum_warp<<<(1000 * 32 + 255) / 256, 256>>>(out, x, ROWS, 1000);
}
"""


def test_a_warp_per_column_with_a_guard_splits_too(tmp_path):
    """One warp per column (cooperative groups, the column guard an early return, ``out[c] = out[c] + s``), the sizes
    a macro and literals: 1000 columns give 32 blocks, so the rows are split as well."""
    res = _propose(WARP, "colsum_warp")
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    (groups,) = c.params["row_groups"]
    assert c.params["column_blocks"] == [32] and groups == row_groups(1000, 4096, 256, REFERENCE_SM_COUNT["sm_90"])
    assert f"colsum_warp<<<dim3(((1000) + 31) / 32, {groups}), dim3(32, ((256) + 31) / 32)>>>" in c.new_text
    body = _body(c.new_text, "colsum_warp")
    assert "atomicAdd(&out[c], s);" in body and "cg::" not in body
    if compiler() is not None:
        main = (_MAIN.replace("TT", "50").replace("COLS", "45").replace("THREADS", "256").replace("GROUPS", "7")
                .replace("CALL(out.data(), x.data(), B, T, OC)", "colsum_warp(out.data(), x.data(), B * T, OC)"))
        got = run_block_main(c.new_text, "colsum_warp", main, tmp_path)
        want = [0.5 * col + sum(float((r * 7 + col * 3) % 13) - 6.0 for r in range(150)) for col in range(45)]
        assert all(math.isclose(g, w, abs_tol=1e-3) for g, w in zip(got, want, strict=True)), (got, want)
