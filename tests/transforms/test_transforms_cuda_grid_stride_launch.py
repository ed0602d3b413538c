"""The launch steps on grid-stride kernels, in every spelling, launched with a constant grid.

A grid-stride loop covers ``0 .. n - 1`` once with any grid and any block, so ``cuda.block_size`` retunes the
block with the grid held (it used to refuse: "the grid does not follow the block size"), and ``cuda.grid_size``
sets the grid to a multiple of the SM count (a 2-D grid-stride kernel's grid is capped at it, x first). The spellings: the stride in a ``for`` header, a ``while`` loop, a
``do { } while`` under the same check, the stride in a local, ``size_t`` and ``int64_t`` indices, a grid group's
``size()`` and ``num_threads()``, a 2-D loop (rows along y), and a template block size. Each candidate is read
back by the analysis layer, compiled with nvcc (``sm_90``; skipped without nvcc) and, where the kernel runs one
thread at a time on the CPU, run there with a grid smaller than the data: every element is updated exactly once.
A kernel whose coverage the grid decides (a per-block partial, a ``break`` after one pass, a 64-bit or
cooperative-groups index with no loop) is refused.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_main
from transform_helpers import assert_nvcc_compiles, facts_of_text, fixture_path

FILE = "grid_stride_spellings.cu"
TID = "cuda.block_size"
ONE_D = ["gs_for", "gs_while", "gs_do", "gs_stride_local", "gs_size_t", "gs_int64", "gs_cg_size",
         "gs_cg_num_threads", "gs_template", "gs_two_passes"]
SPELLINGS = [*ONE_D, "gs_2d"]
#: the kernels the CPU emulation runs (no cooperative groups there)
EMULATED = ["gs_for", "gs_while", "gs_do", "gs_stride_local", "gs_size_t", "gs_int64"]


def _text() -> str:
    return fixture_path(FILE).read_text()


@pytest.mark.parametrize("kernel", SPELLINGS)
def test_every_spelling_is_a_launch_free_grid_stride_loop(kernel):
    f = facts_of_text(_text(), kernel)
    assert f.grid_stride_loops, kernel
    assert f.launch_free_dims == (("x", "y") if kernel == "gs_2d" else ("x",))
    assert f.covers_any_launch("x")
    # the slice of a block is its extent blockDim.x (a template extent is a constant: the fixed-extent check's)
    assert f.multiplies_block_index("x") is (kernel != "gs_template")


@pytest.mark.parametrize(("kernel", "why"), [("gs_partials", "partial"), ("gs_break", "break")])
def test_a_grid_decided_coverage_is_not_launch_free(kernel, why):
    f = facts_of_text(_text(), kernel)
    assert not f.covers_any_launch("x"), why


@pytest.mark.parametrize("kernel", ["gs_partials", "gs_break", "cast_guarded", "cg_rank_guarded"])
def test_a_grid_decided_coverage_keeps_the_refusal(refuse, kernel):
    """``cast_guarded`` and ``cg_rank_guarded`` (one element per thread, a constant grid) were retuned before the
    index was read from the facts: the text check missed ``static_cast<int64_t>(blockIdx.x) * blockDim.x`` and a
    grid group's ``thread_rank()``, so the new block covered other elements (regression)."""
    assert "does not follow the block size" in refuse(TID, FILE, kernel)


@pytest.mark.parametrize("kernel", SPELLINGS)
def test_the_block_is_retuned_with_the_grid_held(cand, kernel):
    cands = cand(TID, FILE, kernel)
    assert len(cands) >= 2
    before = facts_of_text(_text(), kernel).launches[0]
    for c in cands:
        assert "is kept: its grid-stride loops cover every element" in c.description
        (la,) = facts_of_text(c.new_text, kernel).launches
        assert [d.value for d in la.grid] == [d.value for d in before.grid]
        assert [d.value for d in la.block] == c.params["block"] != c.params["previous_block"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("kernel", SPELLINGS)
def test_the_retuned_launch_compiles(cand, kernel, tmp_path):
    assert_nvcc_compiles(cand(TID, FILE, kernel)[0].new_text, tmp_path)


_MAIN_1D = """
int main() {
    std::vector<float> x(SIZE, 0.0f);
    HTAM_LAUNCH(GRID, 1, BLOCK, 1, CALL);
    for (float v : x) printf("%g\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", EMULATED)
def test_every_element_is_updated_exactly_once_with_the_new_block(cand, kernel, tmp_path):
    """1000 elements, the held grid of 3 blocks: each thread takes several elements, none twice, none missed."""
    args = {"gs_size_t": "(size_t)1000", "gs_int64": "(int64_t)1000"}.get(kernel, "1000")
    for c in cand(TID, FILE, kernel):
        (block,) = c.params["block"]
        main = _MAIN_1D.replace("SIZE", "1000").replace("GRID", "3").replace("BLOCK", str(block)).replace(
            "CALL", f"{kernel}(x.data(), {args}, 1.0f)")
        out = run_main(c.new_text, kernel, main, tmp_path)
        assert out == [1.0] * 1000, (block, [i for i, v in enumerate(out) if v != 1.0][:5])


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
def test_the_2d_loop_covers_the_matrix_exactly_once_with_each_new_block(cand, tmp_path):
    main = """
int main() {
    std::vector<float> m(37 * 53, 0.0f);
    HTAM_LAUNCH(2, 3, BX, BY, gs_2d(m.data(), 37, 53, 1.0f));
    for (float v : m) printf("%g\\n", v);
    return 0;
}
"""
    for c in cand(TID, FILE, "gs_2d"):
        bx, by = c.params["block"]
        out = run_main(c.new_text, "gs_2d", main.replace("BX", str(bx)).replace("BY", str(by)), tmp_path)
        assert out == [1.0] * (37 * 53), (bx, by)


def test_a_template_block_size_follows_its_named_constant(cand):
    """``gs_template<THREADS><<<128, THREADS>>>``: the index reads ``BS``, bound to ``THREADS`` at the launch, so
    the candidate changes ``THREADS`` at its definition and both follow."""
    for c in cand(TID, FILE, "gs_template"):
        (new,) = c.params["block"]
        assert f"constexpr int THREADS = {new};" in c.new_text
        (g,) = facts_of_text(c.new_text, "gs_template").grid_stride_loops
        assert g.extent == new


def test_launch_bounds_still_applies(cand):
    for kernel in SPELLINGS:
        assert cand("cuda.launch_bounds", FILE, kernel)


@pytest.mark.parametrize("kernel", ONE_D)
def test_the_grid_is_sized_to_the_sm_count_with_the_block_held(cand, kernel):
    cands = cand("cuda.grid_size", FILE, kernel)
    assert [c.params["blocks_per_sm"] for c in cands] == [8, 32]
    for c in cands:
        (la,) = facts_of_text(c.new_text, kernel).launches
        assert la.grid[0].text == f"htam_sm_blocks({c.params['blocks_per_sm']})"
        assert la.grid[0].device == ("sm_count",) and la.grid[0].value is None
        assert "static inline unsigned int htam_sm_blocks(int per_sm)" in c.new_text


@pytest.mark.parametrize(("kernel", "why"), [
    ("gs_partials", "writes one output per block"), ("gs_break", "no grid-stride loop that alone decides"),
    ("cast_guarded", "no grid-stride loop that alone decides")])
def test_the_grid_is_kept_where_it_decides_the_coverage(refuse, kernel, why):
    assert why in refuse("cuda.grid_size", FILE, kernel)


def test_a_2d_grid_stride_grid_is_capped_x_first(cand, tmp_path):
    """``gs_2d`` (rows along y, columns along x, both grid-strided): the grid is capped at 8 and 32 blocks per SM, x
    first, never more blocks along x or y than the launch's ``grid2``; the facts read both components from the device."""
    cands = cand("cuda.grid_size", FILE, "gs_2d")
    assert [c.params["blocks_per_sm"] for c in cands] == [8, 32]
    for c in cands:
        per_sm = c.params["blocks_per_sm"]
        (la,) = facts_of_text(c.new_text, "gs_2d").launches
        assert [d.text for d in la.grid] == [f"htam_sm_grid(grid2.x, {per_sm})",
                                             f"htam_sm_rows(grid2.x, grid2.y, {per_sm})"]
        assert all(d.device == ("sm_count",) and d.value is None for d in la.grid)
        assert [d.text for d in la.block] == ["16", "16"]  # the block is held
        assert c.new_text.count("static inline unsigned int htam_sm_rows(") == 1
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(cands[0].new_text, tmp_path)


_2D = """
__global__ void k2(float *m, int rows, int cols) {
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += blockDim.y * gridDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += blockDim.x * gridDim.x)
            m[(size_t)r * cols + c] *= 2.0f;
}
void host(float *m, int rows, int cols) {
    LAUNCH
}
"""


@pytest.mark.parametrize(("launch", "gx", "gy"), [
    ("k2<<<dim3((cols + 15) / 16, (rows + 15) / 16), dim3(16, 16)>>>(m, rows, cols);", "(cols + 15) / 16",
     "(rows + 15) / 16"),
    ("dim3 g((cols + 31) / 32, rows);\n    k2<<<g, dim3(32, 8)>>>(m, rows, cols);", "g.x", "g.y"),
    ("int blocks = (cols + 255) / 256;\n    k2<<<blocks, 256>>>(m, rows, cols);", "blocks", "1"),
    ("k2<<<64, dim3(32, 4)>>>(m, rows, cols);", "64", "1"),
])
def test_each_spelling_of_a_2d_grid_is_read(tmp_path, launch, gx, gy):
    from htam_core.source import parse_text
    from htam_core.transforms import registry

    text = _2D.replace("LAUNCH", launch)
    m = parse_text(text, "cuda")
    cands = registry.propose("cuda.grid_size", m, m.kernel("k2"))
    assert isinstance(cands, list), cands.reason
    assert f"dim3(htam_sm_grid({gx}, 8), htam_sm_rows({gx}, {gy}, 8))" in cands[0].new_text
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(cands[1].new_text, tmp_path)


@pytest.mark.parametrize(("body", "launch", "why"), [
    ("int r = blockIdx.y; for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += blockDim.x * gridDim.x) "
     "m[r * cols + c] = 0.0f;", "k2<<<dim3(4, rows), 128>>>(m, rows, cols);",
     "reads blockIdx.y outside a grid-stride loop along y"),
    (None, "k2<<<dim3(4, 4, 2), dim3(16, 16)>>>(m, rows, cols);", "has a z component"),
    ("for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += blockDim.y * gridDim.y) "
     "for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += blockDim.x * gridDim.x) "
     "m[(blockIdx.z * rows + r) * cols + c] = 0.0f;", "k2<<<dim3(4, 4, 3), dim3(16, 16)>>>(m, rows, cols);",
     "reads blockIdx.z: a grid along z is not resized"),
])
def test_a_2d_grid_that_decides_the_coverage_is_kept(body, launch, why):
    from htam_core.source import parse_text
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    text = _2D.replace("LAUNCH", launch)
    if body is not None:
        start = text.index("{") + 1
        text = text[:start] + body + "\n}\nvoid host(float *m, int rows, int cols) {\n    " + launch + "\n}\n"
    m = parse_text(text, "cuda")
    res = registry.propose("cuda.grid_size", m, m.kernel("k2"))
    assert isinstance(res, NotApplicable) and why in res.reason, res


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_sm_sized_grid_compiles(cand, tmp_path):
    assert_nvcc_compiles(cand("cuda.grid_size", FILE, "gs_while")[1].new_text, tmp_path)


def test_a_block_per_row_is_still_retuned(cand):
    """``row = blockIdx.x``, ``out[row * cols + j]`` with ``j`` striding by the block: the block index is scaled by
    the row length, not by the block's extent, so the grid (one block per row) need not follow the block."""
    f = facts_of_text(_text(), "row_per_block")
    assert not f.multiplies_block_index("x") and not f.covers_any_launch("x")
    assert {tuple(c.params["block"]) for c in cand(TID, FILE, "row_per_block")} >= {(256,), (512,)}


TAIL = """__global__ void tail(const float *__restrict__ x, float *y, int n, float a) {
    int done = 0;
    if ((reinterpret_cast<unsigned long long>(x) & 15ull) == 0ull) {
        const int n4 = n / 4;
        for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n4; v += blockDim.x * gridDim.x) {
            float4 q = reinterpret_cast<const float4 *>(x)[v];
            q.x *= a; q.y *= a; q.z *= a; q.w *= a;
            reinterpret_cast<float4 *>(y)[v] = q;
        }
        done = n4 * 4;
    }
    for (int i = START + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i];
}
void run(const float *x, float *y, int n, float a) { tail<<<1024, 128>>>(x, y, n, a); }
"""


def test_a_vector_body_and_its_scalar_tail_cover_any_launch():
    """Regression (a new user's trial): after float4, the scalar tail starts at ``done + gid``, a block-uniform
    offset; the kernel still covers every element for any grid, so the block size may be retuned with the grid
    held ("the grid does not follow the block size" before)."""
    f = facts_of_text(TAIL.replace("START", "done"), "tail")
    assert len(f.grid_stride_loops) == 2 and f.covers_any_launch("x")


@pytest.mark.parametrize("start", ["threadIdx.x % 2 + ", "bad + "])
def test_a_tail_offset_that_differs_between_threads_is_not_launch_free(start):
    text = TAIL.replace("START + ", start)
    if "bad" in start:  # a local set per thread, under a block-uniform-looking name
        text = text.replace("int done = 0;", "int done = 0; int bad = threadIdx.x & 1;")
    f = facts_of_text(text, "tail")
    assert not f.covers_any_launch("x")


def test_a_grid_read_from_the_command_line_is_named_in_the_title():
    """Regression (a new user's trial): sizing the grid to the SM count replaced `atoi(argv[2])` silently; the
    title now names the replaced expression and says the program's input no longer sets the grid."""
    from htam_core.source import parse_text
    from htam_core.transforms import registry

    text = """#include <cstdlib>
__global__ void k(int n, float *x) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] *= 2.0f;
}
int main(int argc, char **argv) {
    int n = 1 << 20;
    float *x = nullptr;
    int blocks = argc > 1 ? atoi(argv[1]) : 1024;
    k<<<blocks, 256>>>(n, x);
    return 0;
}
"""
    m = parse_text(text, "cuda")
    cands = registry.propose("cuda.grid_size", m, m.kernel("k"))
    assert isinstance(cands, list) and cands
    assert all("`argc > 1 ? atoi(argv[1]) : 1024`, which the program read from its input" in c.description
               for c in cands)
