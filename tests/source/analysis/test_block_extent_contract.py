"""A kernel whose per-element results depend on its block's extent through what its threads read (a per-thread
loop over the block's segment, a read of the block's first element): the block size is part of its results
(:func:`htam_core.source.analysis.contracts.block_extent_results`), so ``cuda.block_size`` is not made, and the
textbook bench's contract check says so too. The grid-stride loop and the plain global index keep the step.

The kernels are written here for these tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.contracts import block_extent_results, block_segment_results
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

HEAD = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n#define BLOCK 512\n"
LAUNCH = "\nvoid run(const float* in, float* out, int n) { k<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n); }\n"

#: name -> kernel body, each a per-thread sum whose range the block's extent sets
BLOCK_PLACED = {
    "segment_local": """
    int seg = blockIdx.x * blockDim.x;
    int i = seg + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = seg; j <= i; ++j) s += in[j];
    out[i] = s;""",
    "loop_init": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int j = blockIdx.x * blockDim.x; j <= i; j++) acc += in[j];
    out[i] = acc;""",
    "macro_block": """
    int base = blockIdx.x * BLOCK;
    int i = base + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int j = base; j <= i; ++j) s += in[j];
        out[i] = s;
    }""",
    "cooperative_groups": """
    cg::thread_block block = cg::this_thread_block();
    int first = block.group_index().x * block.size();
    int i = first + block.thread_index().x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = first; j <= i; ++j) s += in[j];
    out[i] = s;""",
    "thread_bound": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int d = 0; d <= threadIdx.x; ++d) s += in[i - d];
    out[i] = s;""",
    "minus_thread": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = i - threadIdx.x; j <= i; ++j) s += in[j];
    out[i] = s;""",
    "divided_start": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int head = (i / blockDim.x) * blockDim.x;
    out[i] = in[i] - in[head];""",
    "block_first_macro": """
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = in[i] - in[blockIdx.x * BLOCK];""",
}

#: name -> kernel body whose results are the same for any block
BLOCK_FREE = {
    "grid_stride": """
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = 2.0f * in[i];""",
    "global_index": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 0.5f + 1.0f;""",
    "neighbour": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n) out[i] = in[i] + in[i + 1];""",
    "index_window": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = i; j < i + 8 && j < n; ++j) s += in[j];
    out[i] = s;""",
    "coarsened_pair": """
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    if (i < n) out[i] = in[i] * 3.0f;
    if (i + blockDim.x < n) out[i + blockDim.x] = in[i + blockDim.x] * 3.0f;""",
}


def _src(body: str) -> str:
    return HEAD + "__global__ void k(const float* in, float* out, int n) {" + body + "\n}" + LAUNCH


def _launch_free_src(body: str) -> str:
    src = _src(body)
    if "blockDim.x * 2" in body:  # two elements per thread: the grid covers twice the block
        src = src.replace("(n + BLOCK - 1) / BLOCK", "(n + 2 * BLOCK - 1) / (2 * BLOCK)")
    return src


@pytest.mark.parametrize("name", sorted(BLOCK_PLACED))
def test_block_size_is_not_made_where_the_block_places_what_a_thread_reads(name: str) -> None:
    model = parse_text(_src(BLOCK_PLACED[name]), "cuda", "k.cu")
    facts = analyze(model, model.kernels[0])
    why = block_extent_results(facts, "x", 512)
    assert why is not None and "block size is part of k's results" in why and "\n" not in why
    r = registry.propose("cuda.block_size", model, model.kernels[0])
    assert isinstance(r, NotApplicable), name
    assert "block size is part of" in r.reason and "\n" not in r.reason


@pytest.mark.parametrize("name", sorted(BLOCK_FREE))
def test_block_size_stays_where_each_thread_reads_by_its_global_index(name: str) -> None:
    model = parse_text(_launch_free_src(BLOCK_FREE[name]), "cuda", "k.cu")
    facts = analyze(model, model.kernels[0])
    assert block_segment_results(facts, "x", 512) is None
    r = registry.propose("cuda.block_size", model, model.kernels[0])
    assert not isinstance(r, NotApplicable), r.reason


def test_the_reason_names_the_loop_and_its_start() -> None:
    model = parse_text(_src(BLOCK_PLACED["segment_local"]), "cuda", "k.cu")
    why = block_extent_results(analyze(model, model.kernels[0]), "x", 512)
    assert why is not None and "loop over j on line 9 starts at" in why


def test_the_textbook_bench_contract_check_reads_the_same_fact(tmp_path: Path) -> None:
    import importlib.util
    import sys

    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("bench_textbook_c", root / "bench" / "bench_textbook.py")
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(root / "bench"))
    tb = importlib.util.module_from_spec(spec)
    sys.modules["bench_textbook_c"] = tb  # dataclasses read their module
    spec.loader.exec_module(tb)
    path = tmp_path / "k.cu"
    for body, broken in ((BLOCK_PLACED["segment_local"], True), (BLOCK_FREE["global_index"], False)):
        path.write_text(_src(body))
        from htam_core.source import load

        model = load(path)
        edited = model.text.replace("#define BLOCK 512", "#define BLOCK 256")
        why = tb.contract_broken(model, model.kernels[0], edited)
        assert (why is not None and "block size is part of" in why) == broken, why


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_kernels_are_valid_cuda(tmp_path: Path) -> None:
    bodies = {**BLOCK_PLACED, **BLOCK_FREE}
    src = "#include <cuda_runtime.h>\n" + "\n".join(
        _launch_free_src(b).replace("void k(", f"void k_{n}(").replace("k<<<", f"k_{n}<<<")
        .replace("void run(", f"void run_{n}(").replace(HEAD, "") for n, b in bodies.items())
    assert_compiles(HEAD + src, tmp=tmp_path, name="k.cu")


@pytest.mark.parametrize("name", sorted(set(BLOCK_PLACED) - {"divided_start"}))
@pytest.mark.parametrize("step", ["cuda.vectorize_float4", "cuda.vector_columns"])
def test_more_elements_per_thread_is_not_made_where_the_block_index_places_a_read(name: str, step: str) -> None:
    # several elements per thread give each block several times its extent: a segment placed by the block moves
    model = parse_text(_src(BLOCK_PLACED[name]), "cuda", "k.cu")
    r = registry.propose(step, model, model.kernels[0])
    assert isinstance(r, NotApplicable)


@pytest.mark.parametrize("name, step", [("cooperative_groups", "cuda.vectorize_float4"),
                                        ("thread_bound", "cuda.vector_columns")])
def test_the_refusal_of_a_step_its_form_would_make_says_why(name: str, step: str) -> None:
    # the 2-D row form takes the cooperative-groups scan, the column form the loop bounded by threadIdx.x
    model = parse_text(_src(BLOCK_PLACED[name]), "cuda", "k.cu")
    r = registry.propose(step, model, model.kernels[0])
    assert isinstance(r, NotApplicable)
    assert "block size is part of" in r.reason and "another extent" in r.reason and "\n" not in r.reason


@pytest.mark.parametrize("name", ["divided_start", "grid_stride", "global_index"])
def test_vectorizing_stays_where_each_place_follows_the_element_index(name: str) -> None:
    # (i / blockDim.x) * blockDim.x is recomputed per element with the same blockDim: the same place
    model = parse_text(_src({**BLOCK_PLACED, **BLOCK_FREE}[name]), "cuda", "k.cu")
    r = registry.propose("cuda.vectorize_float4", model, model.kernels[0])
    assert not isinstance(r, NotApplicable), r.reason


TRANSPOSE_2D = """
constexpr int T = 32;
__global__ void tr(float* out, const float* in, int rows, int cols) {
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}
void go(float* out, const float* in, int rows, int cols) {
    tr<<<dim3((cols + T - 1) / T, (rows + T - 1) / T), dim3(T, T)>>>(out, in, rows, cols);
}
"""


@pytest.mark.parametrize("dim", ["x", "y"])
def test_a_constant_tile_times_a_row_pitch_is_the_global_index(dim: str) -> None:
    # in[(blockIdx.y * T + threadIdx.y) * cols + x]: cols * T * blockIdx.y is cols block extents, not a segment
    model = parse_text(TRANSPOSE_2D, "cuda", "k.cu")
    assert block_extent_results(analyze(model, model.kernels[0]), dim, 32) is None


def test_a_row_width_equal_to_the_block_is_not_the_block() -> None:
    # r * D with D == the block's 64 threads: D rows of the thread's own index, not the block's extent
    src = """
#define D 64
__global__ void rows(const float* x, float* y, int n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n) for (int i = 0; i < D; i++) y[r * D + i] = 2.0f * x[r * D + i];
}
void go(const float* x, float* y, int n) { rows<<<(n + 63) / 64, 64>>>(x, y, n); }
"""
    model = parse_text(src, "cuda", "k.cu")
    assert block_extent_results(analyze(model, model.kernels[0]), "x", 64) is None
