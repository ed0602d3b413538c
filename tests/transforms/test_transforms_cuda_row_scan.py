"""The warp-per-row scan (``cuda.row_scan``, :mod:`htam_core.transforms.cuda_row_scan`): a thread-per-row running
sum (``acc += in[r * cols + c]; out[r * cols + c] = acc;``) in several spellings (early return or guarded body;
int, unsigned and size_t counters; a pointer row base; ``__restrict__`` or none; int and float; an exclusive scan;
a running max by call; a template over T launched with dim3 variables; a kernel launched from another file) is
ranked by ``suggest`` (the fact ``row_running_scan``), made, accepted by ``nvcc -arch=sm_90 -c``, and run on the CPU
(:func:`cpu_emulation.run_block_main`, warp shuffles emulated) on rows whose length is not a multiple of 32: the
values equal the one thread's (integers and maxima exactly, float sums at the reordered-sum tolerance). Not
offered, each in one line: a column walk, a max written as a choice, an integer sum of floats, a loop that does
more than update and store, a block that is not whole warps. Kernels written here.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, only_candidate

from htam_core.memory import load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import apply_edits
from tests.support.workspace_fixtures import workspace

ID = "cuda.row_scan"

PAIR = """__global__ void row_cumsum(const int* __restrict__ in, int* __restrict__ out, size_t rows, size_t cols) {
    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int acc = 0;
    for (size_t c = 0; c < cols; ++c) {
        acc += in[r * cols + c];
        out[r * cols + c] = acc;
    }
}
void run(const int *in, int *out, size_t rows, size_t cols) {
    row_cumsum<<<(unsigned)((rows + 127) / 128), 128>>>(in, out, rows, cols);
}
"""

GUARDED_FLOAT = """__global__ void cumsum(const float *x, float *y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++) {
            s = s + x[r * cols + c];
            y[r * cols + c] = s;
        }
    }
}
void run(const float *x, float *y, int rows, int cols) { cumsum<<<(rows + 63) / 64, 64>>>(x, y, rows, cols); }
"""

ROW_POINTER = """__global__ void cumsum(const float *__restrict__ in, float *__restrict__ out, unsigned rows, unsigned cols) {
    unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *row = in + r * cols;
    float *orow = out + r * cols;
    float acc = 0.0f;
    for (unsigned c = 0; c < cols; ++c) {
        acc += row[c];
        orow[c] = acc;
    }
}
void run(const float *in, float *out, unsigned rows, unsigned cols) {
    cumsum<<<(rows + 127) / 128, 128>>>(in, out, rows, cols);
}
"""

EXCLUSIVE = """__global__ void offsets(const int *counts, int *offs, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int run = 0;
    for (int c = 0; c < cols; ++c) {
        offs[r * cols + c] = run;
        run = run + counts[r * cols + c];
    }
}
void go(const int *counts, int *offs, int rows, int cols) { offsets<<<(rows + 255) / 256, 256>>>(counts, offs, rows, cols); }
"""

RUNNING_MAX = """__global__ void cummax(const float *in, float *out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = -1e30f;
    for (int c = 0; c < cols; ++c) {
        m = fmaxf(m, in[r * cols + c]);
        out[r * cols + c] = m;
    }
}
void run(const float *in, float *out, int rows, int cols) { cummax<<<(rows + 127) / 128, 128>>>(in, out, rows, cols); }
"""

TEMPLATED = """template <typename T>
__global__ void cumsum(const T *in, T *out, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    T acc = T(0);
    for (int c = 0; c < cols; ++c) {
        acc += in[(size_t)r * cols + c];
        out[(size_t)r * cols + c] = acc;
    }
}
void run(const float *in, float *out, int rows, int cols) {
    dim3 block(128);
    dim3 grid((rows + 127) / 128);
    cumsum<float><<<grid, block>>>(in, out, rows, cols);
}
"""

#: name -> (text, kernel, element type, call in the emulation's main, block, exact)
KERNELS = {
    "pair": (PAIR, "row_cumsum", "int", "row_cumsum(in.data(), out.data(), (size_t)R, (size_t)C)", 128, True),
    "guarded_float": (GUARDED_FLOAT, "cumsum", "float", "cumsum(in.data(), out.data(), R, C)", 64, False),
    "row_pointer": (ROW_POINTER, "cumsum", "float", "cumsum(in.data(), out.data(), (unsigned)R, (unsigned)C)", 128,
                    False),
    "exclusive": (EXCLUSIVE, "offsets", "int", "offsets(in.data(), out.data(), R, C)", 256, True),
    "running_max": (RUNNING_MAX, "cummax", "float", "cummax(in.data(), out.data(), R, C)", 128, True),
    "templated": (TEMPLATED, "cumsum<float>", "float", "cumsum<float>(in.data(), out.data(), R, C)", 128, False),
}

MAIN = """
int main() {
    const int R = 37, C = 75;  // rows not a multiple of the block, columns not a multiple of 32
    std::vector<TYPE> in(R * C), out(R * C, (TYPE)-7);
    for (int i = 0; i < R * C; ++i) in[i] = (TYPE)((i * 7) % 11) - (TYPE)4 + (TYPE)((i % 3) * 0.25);
    htam_launch(GRID, BLOCK, 1, [&] { CALL; });
    for (TYPE v : out) std::printf("%.17g\\n", (double)v);
    return 0;
}
"""


def _name(kernel: str) -> str:
    return kernel.split("<")[0]


def _run(text: str, name: str, tmp, warps: bool) -> list[float]:
    _, kernel, typ, call, block, _ = KERNELS[name]
    grid = f"((37 + {block} - 1) / {block}) * {32 if warps else 1}"
    main = MAIN.replace("TYPE", typ).replace("GRID", grid).replace("BLOCK", str(block)).replace("CALL", call)
    return run_block_main(text, _name(kernel), main, tmp, prelude="#include <cmath>\n#include <cstdint>\n")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_row_scan_is_ranked_and_made(name):
    text, kernel = KERNELS[name][:2]
    model = parse_text(text, "cuda")
    k = model.kernel(_name(kernel))
    facts = compute_facts(k.features, "cuda", None, k, model)
    assert facts["row_running_scan"] is True
    strategy = next(s for s in load_knowledge().strategies if s.id == "row_scan")
    assert strategy.applies.evaluate(facts) is True and strategy.transform == ID
    c = only_candidate(ID, text, _name(kernel))
    assert "__shfl_up_sync" in c.new_text and "__shfl_sync" in c.new_text and "htam_c0 += 32" in c.new_text
    assert ") * 32" in c.new_text  # the grid gives 32 threads per row
    exact = KERNELS[name][5]
    assert c.changes_numerics is (not exact) and c.reorders_only is (not exact)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_row_scan_gives_the_same_values(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel = KERNELS[name][:2]
    want = _run(text, name, tmp_path, warps=False)
    got = _run(only_candidate(ID, text, _name(kernel)).new_text, name, tmp_path, warps=True)
    assert len(got) == len(want) == 37 * 75
    if KERNELS[name][5]:
        assert got == want
    else:
        assert got == pytest.approx(want, rel=1e-5, abs=1e-4)
    assert len(set(want)) > 10  # the values do vary: a constant output would pass any scan


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_row_scan_compiles(name, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text, kernel = KERNELS[name][:2]
    assert_nvcc_compiles(only_candidate(ID, text, _name(kernel)).new_text, tmp_path, "k.cu")


def test_a_scan_without_the_carry_is_caught(tmp_path):
    """The check can fail: without the carry every chunk of 32 restarts its sums."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    c = only_candidate(ID, PAIR, "row_cumsum")
    broken = c.new_text.replace("const int htam_r = acc + htam_v;", "const int htam_r = htam_v;")
    assert broken != c.new_text
    assert _run(broken, "pair", tmp_path, True) != _run(PAIR, "pair", tmp_path, False)


KERNEL_ONLY = PAIR.split("void run(")[0]
HOST = """#include <cstddef>
__global__ void row_cumsum(const int* __restrict__ in, int* __restrict__ out, size_t rows, size_t cols);
void run(const int *in, int *out, size_t rows, size_t cols) {
    row_cumsum<<<(unsigned)((rows + 127) / 128), 128>>>(in, out, rows, cols);
}
"""


def test_a_kernel_launched_from_another_file_has_that_launch_edited(tmp_path):
    ws = workspace(tmp_path, {"scan.cu": KERNEL_ONLY, "host.cu": HOST})
    model = load(ws / "scan.cu")
    got = registry.propose(ID, model, model.kernel("row_cumsum"))
    assert isinstance(got, list), got.reason
    (c,) = got
    (path, edits), = c.file_edits.items()
    assert path.endswith("host.cu") and ") * 32, 128>>>" in apply_edits(HOST, edits)
    assert "__shfl_up_sync" in c.new_text
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(c.new_text, tmp_path, "scan_out.cu")
    if compiler() is not None:
        assert _run(c.new_text, "pair", tmp_path, True) == _run(PAIR, "pair", tmp_path, False)


def test_without_any_launch_the_step_says_why_in_one_line():
    model = parse_text(KERNEL_ONLY, "cuda")
    got = registry.propose(ID, model, model.kernel("row_cumsum"))
    assert not isinstance(got, list) and "no launch site" in got.reason and "\n" not in got.reason


def test_a_store_outside_the_loop_runs_on_lane_zero():
    text = PAIR.replace("int* __restrict__ out, size_t rows", "int* __restrict__ out, int *total, size_t rows")
    text = text.replace("        out[r * cols + c] = acc;\n    }\n", "        out[r * cols + c] = acc;\n    }\n"
                        "    total[r] = acc;\n").replace("(in, out, rows, cols)", "(in, out, out, rows, cols)")
    c = only_candidate(ID, text, "row_cumsum")
    assert "if (htam_lane == 0) { total[r] = acc; }" in c.new_text


NOT_OFFERED = {
    "column_walk": PAIR.replace("in[r * cols + c]", "in[c * rows + r]"),
    "max_by_choice": RUNNING_MAX.replace("m = fmaxf(m, in[r * cols + c]);", "m = in[r * cols + c] > m ? in[r * cols + c] : m;"),
    "int_of_floats": GUARDED_FLOAT.replace("float s = 0.0f;", "int s = 0;"),
    "more_in_the_loop": PAIR.replace("out[r * cols + c] = acc;", "out[r * cols + c] = acc;\n        acc = acc / 2;"),
    "partial_warp": PAIR.replace("+ 127) / 128), 128>>>", "+ 99) / 100), 100>>>"),
}


@pytest.mark.parametrize("name", sorted(NOT_OFFERED))
def test_other_loops_are_refused_in_one_line(name):
    text = NOT_OFFERED[name]
    kernel = "cummax" if name == "max_by_choice" else "cumsum" if name == "int_of_floats" else "row_cumsum"
    model = parse_text(text, "cuda")
    got = registry.propose(ID, model, model.kernel(kernel))
    assert not isinstance(got, list) and "\n" not in got.reason, got


@pytest.mark.parametrize("step", ["cuda.thread_per_element", "cuda.warp_per_row", "cuda.block_per_row",
                                  "cuda.block_scan"])
def test_the_other_row_steps_name_the_row_scan_when_it_is_made(step):
    model = parse_text(PAIR, "cuda")
    got = registry.propose(step, model, model.kernel("row_cumsum"))
    assert not isinstance(got, list) and "\n" not in got.reason
    assert "is a running sum" in got.reason and "the row_scan step (cuda.row_scan" in got.reason, got.reason
    assert "does not make" not in got.reason


def test_the_audit_names_the_scan_pattern():
    """The makeable-actions audit asks a kernel with a known pattern for a structural step: a row scan is one."""
    from htam_core.editor.audit import known_pattern

    model = parse_text(PAIR, "cuda")
    k = model.kernel("row_cumsum")
    assert known_pattern(compute_facts(k.features, "cuda", None, k, model)) == "scan"
    assert registry.get(ID).kind == "structural"
