"""The transpose tile on every spelling, run on the CPU (:func:`cpu_emulation.run_block_main`, one host thread per
CUDA thread, so ``__syncthreads`` is a barrier): on a non-square matrix whose sides are not multiples of 32, each
output element is the transposed input element and is written exactly once, and nothing past the output is
touched.

The tile-loop form (``htam_e`` loops) claims to be correct for any block shape and grid, so it is run under the
launch's own shape, one block for the whole matrix, and an odd block over a 3-D grid with more blocks than tiles.
The coarsened tile (32x8 threads, 4 rows each: the first variant wherever the block is or can be made 32x8) is
made for that block alone, so it is run under 32x8 blocks over grids with one block per tile, fewer and more.
The form that keeps the samples' loop over rows is run under the launch it keeps (sides multiples of the tile).

Each element is a counting type (``float`` is read as it in the kernel: a transpose only copies values), so a
second write of one element, or an element never written, shows in its count.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_emulation import compiler, run_block_main
from spellings import ROOT

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import apply_edits

FOLDER = ROOT / "transpose_tile"

#: spelling file -> (kernel, the kernel's call with IN/OUT pointers and ROWS/COLS sizes of the input)
CALLS = {
    "aten.cu": ("transpose_kernel", "transpose_kernel(IN, OUT, ROWS, COLS)"),
    "coop_groups.cu": ("transpose_cg", "transpose_cg(IN, OUT, ROWS, COLS)"),
    "llmc.cu": ("transpose_kernel1", "transpose_kernel1(OUT, IN, ROWS, COLS)"),
    "macro.cu": ("transpose_macro", "transpose_macro(IN, OUT, ROWS, COLS)"),
    "pragma_col_row.cu": ("transpose_rows", "transpose_rows(IN, OUT, ROWS, COLS)"),
    "templated.cu": ("transpose_naive", "transpose_naive<float, 16>(IN, OUT, ROWS, COLS)"),
    "samples_guarded.cu": ("transposeNaiveGuarded", "transposeNaiveGuarded(OUT, IN, COLS, ROWS)"),
    "samples_early_return.cu": ("transposeNaiveExit", "transposeNaiveExit(OUT, IN, COLS, ROWS)"),
    "int64_column_threads.cu": ("transpose_by_columns", "transpose_by_columns(IN, OUT, ROWS, COLS)"),
    "split_kernel.cu": ("transpose_split", "transpose_split(IN, OUT, ROWS, COLS)"),
}

#: the loop-keeping form: (kernel, call, block rows) for a square of 64
LOOP_KEEPING = {
    "nvidia_samples.cu": ("transposeNaive", "transposeNaive(OUT, IN, COLS, ROWS)", 8),
    "samples_square.cu": ("transposeSquare", "transposeSquare(OUT, IN, ROWS)", 16),
}

PRELUDE = """
#include <array>
struct HtamCounted {  // a value and how many times it was assigned
    double v = -1; int n = 0;
    HtamCounted() = default;
    HtamCounted(const HtamCounted &o) : v(o.v), n(0) {}
    HtamCounted &operator=(const HtamCounted &o) { v = o.v; ++n; return *this; }
};
#define float HtamCounted
#define C10_LAUNCH_BOUNDS_1(n)
"""

MAIN = """
int main() {
    const int rows = ROWS_, cols = COLS_;
    for (auto [gx, gy, gz, bx, by] : std::vector<std::array<unsigned, 5>>{LAUNCHES_}) {
        std::vector<HtamCounted> in((size_t)rows * cols), out((size_t)rows * cols + 64);
        for (size_t i = 0; i < in.size(); ++i) in[i].v = (double)i;
        htam_launch3(gx, gy, gz, bx, by, [&] { CALL_; });
        for (const HtamCounted &o : out) std::printf("%.0f %d\\n", o.v, o.n);
    }
    return 0;
}
"""


def _run(text: str, kernel: str, call: str, rows: int, cols: int, launches: list[tuple[int, ...]], tmp) -> list:
    call = call.replace("IN", "in.data()").replace("OUT", "out.data()").replace("ROWS", "rows").replace(
        "COLS", "cols")
    main = MAIN.replace("ROWS_", str(rows)).replace("COLS_", str(cols)).replace(
        "CALL_", call).replace("LAUNCHES_", ", ".join("{" + ", ".join(map(str, la)) + "}" for la in launches))
    nums = run_block_main(text, kernel, main, tmp, prelude=PRELUDE)
    per = 2 * (rows * cols + 64)
    return [list(zip(nums[i:i + per:2], nums[i + 1:i + per:2], strict=True)) for i in range(0, len(nums), per)]


def _check(outs: list, rows: int, cols: int) -> None:
    want = [(float(r * cols + c), 1.0) for c in range(cols) for r in range(rows)] + [(-1.0, 0.0)] * 64
    for k, got in enumerate(outs):
        bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
        assert not bad, f"launch {k}: {len(bad)} elements wrong, first at {bad[0]}: {got[bad[0]]} != {want[bad[0]]}"


def _candidates(file: str, kernel: str) -> list:
    model = load(str(FOLDER / file))
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    return cs


@pytest.mark.parametrize("file", sorted(CALLS))
def test_the_tile_loop_moves_each_element_once_under_any_launch(file, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call = CALLS[file]
    cs = [c for c in _candidates(file, kernel) if "htam_e" in c.new_text]
    assert cs, f"no tile-loop candidate on {file}"
    rows, cols = 37, 70
    launches = [(3, 2, 1, 32, 8), (1, 1, 1, 16, 16), (4, 3, 2, 7, 5)]
    for c in cs:
        _check(_run(c.new_text, kernel, call, rows, cols, launches, tmp_path), rows, cols)


#: 32x8 launches for the coarsened tile on a 37x70 input (2x3 tiles): one block per tile, one block for all, more
#: blocks than tiles over a 3-D grid, fewer blocks than tiles in one dimension and more in the other
ROWS_LAUNCHES = [(3, 2, 1, 32, 8), (1, 1, 1, 32, 8), (4, 3, 2, 32, 8), (2, 5, 1, 32, 8)]


@pytest.mark.parametrize("file", sorted(CALLS))
def test_the_coarsened_tile_moves_each_element_once_under_any_32x8_grid(file, tmp_path):
    """The coarsened tile (32x8 threads, 4 rows each; the first variant on every spelling here) is made for a
    32x8 block, which its launch gets; under that block, any grid moves each element of a non-square matrix whose
    sides are not multiples of 32 exactly once, both ways round."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call = CALLS[file]
    cs = _candidates(file, kernel)
    assert cs[0].params.get("rows_per_thread") == 4 and cs[0].params["block"] == [32, 8], cs[0].params
    assert "htam_e" not in cs[0].new_text
    for rows, cols in ((37, 70), (70, 37)):
        _check(_run(cs[0].new_text, kernel, call, rows, cols, ROWS_LAUNCHES, tmp_path), rows, cols)


def test_a_wrong_coarsened_tile_is_caught(tmp_path):
    """The check can fail: a coarsened tile whose store steps 16 rows at a time leaves half the rows unwritten."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call = CALLS["aten.cu"]
    text = _candidates("aten.cu", kernel)[0].new_text
    head, sep, tail = text.rpartition("htam_k < 32; htam_k += 8)")
    assert sep
    broken = head + "htam_k < 32; htam_k += 16)" + tail
    with pytest.raises(AssertionError, match="elements wrong"):
        _check(_run(broken, kernel, call, 37, 70, ROWS_LAUNCHES[:1], tmp_path), 37, 70)


@pytest.mark.parametrize("file", sorted(LOOP_KEEPING))
def test_the_loop_keeping_form_moves_each_element_once_under_its_launch(file, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call, by = LOOP_KEEPING[file]
    (c,) = _candidates(file, kernel)
    assert "htam_e" not in c.new_text and f"{by} rows per pass" in c.description
    prelude = PRELUDE + f"#define TILE_DIM 32\n#define BLOCK_ROWS {by}\n"
    n = 64
    call = call.replace("IN", "in.data()").replace("OUT", "out.data()").replace("ROWS", "rows").replace(
        "COLS", "cols")
    main = MAIN.replace("ROWS_", str(n)).replace("COLS_", str(n)).replace(
        "CALL_", call).replace("LAUNCHES_", f"{{2, 2, 1, 32, {by}}}")
    nums = run_block_main(c.new_text, kernel, main, tmp_path, prelude=prelude)
    _check([list(zip(nums[0::2], nums[1::2], strict=True))], n, n)


def test_a_wrong_tile_loop_is_caught(tmp_path):
    """The check can fail: a tile loop whose second phase steps by half the block writes elements twice."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call = CALLS["aten.cu"]
    (c,) = [c for c in _candidates("aten.cu", kernel) if "htam_e" in c.new_text]
    head, sep, tail = c.new_text.rpartition("htam_e += htam_threads)")
    broken = head + "htam_e += htam_threads / 2)" + tail
    assert broken != c.new_text
    with pytest.raises(AssertionError, match="elements wrong"):  # the general loop: a block of 7x5 threads
        _check(_run(broken, kernel, call, 37, 70, [(4, 3, 2, 7, 5)], tmp_path), 37, 70)
    # the unrolled path of the launch's own block count (256 threads): its second phase steps by half the block
    head, sep, tail = c.new_text.rpartition("htam_k * 256;")
    assert sep, "no unrolled path for the launch's 256 threads"
    broken = head + "htam_k * 128;" + tail
    with pytest.raises(AssertionError, match="elements wrong"):
        _check(_run(broken, kernel, call, 37, 70, [(3, 2, 1, 32, 8)], tmp_path), 37, 70)


KERNEL_ONLY = """#include <cuda_runtime.h>
__global__ void flip(const double *a, double *b, long long m, long long n) {
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) return;
    b[j * m + i] = a[i * n + j];
}
"""


def test_a_kernel_launched_nowhere_gets_the_launch_independent_form(tmp_path):
    path = tmp_path / "flip.cu"
    path.write_text(KERNEL_ONLY)
    model = load(str(path))
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel("flip"))
    assert isinstance(cs, list), cs.reason
    (c,) = cs
    assert "launch-independent" in c.description and "correct for any block shape" in c.description
    assert c.title_note == "launch not found: correct for any grid" and c.params["launch"] == "independent"
    assert "__shared__ double htam_tile[32][33];" in c.new_text
    assert "const long long htam_rows = m, htam_cols = n;" in c.new_text  # the 64-bit sizes keep 64-bit indices
    assert not c.file_edits


def test_a_launch_in_another_file_is_edited_with_the_kernel():
    cs = _candidates("split_kernel.cu", "transpose_split")
    assert [c.params["block"] for c in cs] == [[32, 8], [32, 32]]  # a 1024-thread launch: the 32x8 tile first
    narrow, kept = cs
    assert not kept.file_edits and "launch-independent" not in kept.description
    launcher = str(FOLDER / "split_launch.cu")
    assert list(narrow.file_edits) == [launcher]
    edited = apply_edits((FOLDER / "split_launch.cu").read_text(), narrow.file_edits[launcher])
    assert "dim3 block(32, 8);" in edited and "dim3 grid((cols + 31) / 32, (rows + 31) / 32);" in edited
    assert "split_launch.cu" in narrow.title_note


def test_a_block_the_launcher_is_passed_gets_the_launch_independent_form_titled_so():
    cs = _candidates("llmc.cu", "transpose_kernel1")
    # the launcher's own dim3 can be set to 32x8: with the block unknown, that textbook tile goes first
    assert [c.params["block"] for c in cs] == [[32, 8], "any"]
    kept = cs[1]
    assert "launch-independent" in kept.description
    assert kept.title_note == "block not constant: correct for any block and grid"


def test_a_kernel_that_moves_half_of_each_tile_is_refused(tmp_path):
    path = tmp_path / "half.cu"
    path.write_text((FOLDER / "samples_guarded.cu").read_text().replace("j < TILE_DIM;", "j < TILE_DIM / 2;"))
    model = load(str(path))
    r = registry.propose("cuda.transpose_smem_tile", model, model.kernel("transposeNaiveGuarded"))
    assert not isinstance(r, list), [c.description for c in r]
    assert "moves 512 of the 32x32 cells of its tile" in r.reason


def test_the_tile_keeps_64_bit_indices_the_kernel_computes_with():
    """Sizes are ``int`` but the kernel indexes with ``(size_t)c * rows + r``: a matrix of 2^31 elements or more
    fits, so the tile's index arithmetic stays 64-bit (``long long``), not ``int``."""
    from htam_core.source import parse_text

    text = """__global__ void tr(float *out, const float *in, int rows, int cols) {
    int c = blockIdx.x * 32 + threadIdx.x;
    int r0 = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        int r = r0 + j;
        if (c < cols && r < rows) out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
    }
}
void run(float *out, const float *in, int rows, int cols) {
    tr<<<dim3((cols + 31) / 32, (rows + 31) / 32), dim3(32, 8)>>>(out, in, rows, cols);
}
"""
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.transpose_smem_tile", model, model.kernel("tr"))
    assert isinstance(res, list), res
    rows, loop = res  # the launch's 32x8 block: the textbook tile first, the launch-independent form next
    assert rows.params["rows_per_thread"] == 4 and "htam_e" in loop.new_text
    assert "const long long htam_rows" in loop.new_text
    # the textbook tile: int sides and coordinates (as the kernel's), the flat index 64-bit (as the kernel's)
    assert "const int htam_rows = rows" in rows.new_text
    assert "in[(long long)(htam_r0 + htam_k) * htam_cols + htam_c]" in rows.new_text
    assert "out[(long long)(htam_or0 + htam_k) * htam_rows + htam_oc]" in rows.new_text
    narrow = parse_text(text.replace("(size_t)", ""), "cuda")
    res = registry.propose("cuda.transpose_smem_tile", narrow, narrow.kernel("tr"))
    assert isinstance(res, list) and len(res) == 2
    assert all("const int htam_rows" in c.new_text and "(long long)" not in c.new_text for c in res)
    wide = parse_text(text.replace("(size_t)", "").replace("int rows, int cols", "long rows, long cols"), "cuda")
    res = registry.propose("cuda.transpose_smem_tile", wide, wide.kernel("tr"))
    assert isinstance(res, list) and len(res) == 2  # 64-bit sides: 64-bit coordinates too
    assert all("const long long htam_rows" in c.new_text for c in res)
    assert "const long long htam_c = htam_tx * 32 + htam_x" in res[0].new_text


NAIVE_WITH_BLOCK = """#include <cuda_runtime.h>
__global__ void tr(const float *in, float *out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
void launch_tr(const float *in, float *out, int rows, int cols) {
    dim3 block(BX, BY);
    dim3 grid((cols + BX - 1) / BX, (rows + BY - 1) / BY);
    tr<<<grid, block>>>(in, out, rows, cols);
}
"""


@pytest.mark.parametrize(("bx", "by"), [(32, 32), (32, 16), (64, 8), (16, 16), (16, 8), (32, 8)])
def test_the_coarsened_32x8_tile_goes_first_whenever_the_block_can_be_32x8(bx, by, tmp_path):
    """The variant order: whatever the launch's block, when it can be made 32x8 (or is), the textbook coarsened
    tile (32x8 threads, 4 rows each) is proposed first, the launch-independent form with the launch's block next."""
    path = tmp_path / "tr.cu"
    path.write_text(NAIVE_WITH_BLOCK.replace("BX", str(bx)).replace("BY", str(by)))
    model = load(str(path))
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel("tr"))
    assert isinstance(cs, list), cs.reason
    assert [c.params["block"] for c in cs] == [[32, 8], [bx, by]]
    rows, kept = cs
    assert rows.params["rows_per_thread"] == 4 and "rows_per_thread" not in kept.params
    assert "for (int htam_k = 0; htam_k < 32; htam_k += 8)" in rows.new_text and "htam_e" not in rows.new_text
    assert "dim3 block(32, 8);" in rows.new_text
    assert ("the launch's block changes" in rows.description) is ((bx, by) != (32, 8))  # edited only when needed
    assert "htam_e" in kept.new_text and f"dim3 block({bx}, {by});" in kept.new_text


@pytest.mark.parametrize("grid", ["dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);",
                                  "dim3 grid((cols + 15) / 16, (rows + 15) / 16);"])
def test_the_coarsened_tile_sizes_a_grid_made_for_another_block_to_one_tile_per_block(grid, tmp_path):
    """A grid sized for the 16x16 block the kernel had would give 4 blocks per 32x32 tile, 3 of them idle: the
    coarsened tile's launch gets ``((cols + 31) / 32, (rows + 31) / 32)``."""
    path = tmp_path / "tr.cu"
    text = NAIVE_WITH_BLOCK.replace("BX", "16").replace("BY", "16")
    path.write_text(text.replace("dim3 grid((cols + 16 - 1) / 16, (rows + 16 - 1) / 16);", grid))
    model = load(str(path))
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel("tr"))
    assert isinstance(cs, list), cs.reason
    rows, kept = cs
    assert "dim3 grid((cols + 31) / 32, (rows + 31) / 32);" in rows.new_text and "grid sized" in rows.description
    assert grid in kept.new_text  # the form for any block keeps the launch as it is


def test_a_grid_of_one_block_per_tile_is_kept():
    """The family suite's kernel advances 32 rows and columns a block (``blockIdx.x * TILE``): its grid already
    has one block per tile, so only the block changes."""
    model = load(str(Path(__file__).parents[2] / "bench" / "suite" / "transpose_naive.cu"))
    rows = registry.propose("cuda.transpose_smem_tile", model, model.kernel("transpose_naive"))[0]  # type: ignore[index]
    assert "grid sized" not in rows.description and "dim3 threads(32, 8);" in rows.new_text
    assert "dim3 blocks((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);" in rows.new_text


def test_a_batched_grid_keeps_its_batch_dimension_when_sized():
    from htam_core.source import parse_text

    text = """__global__ void bt(const float *in, float *out, int R, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < R && c < C) out[(size_t)blockIdx.z * R * C + c * R + r] = in[(size_t)blockIdx.z * R * C + r * C + c];
}
void run(const float *in, float *out, int B, int R, int C) {
    bt<<<dim3((C + 15) / 16, (R + 15) / 16, B), dim3(16, 16)>>>(in, out, R, C);
}
"""
    model = parse_text(text, "cuda")
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel("bt"))
    assert isinstance(cs, list), cs.reason
    assert "bt<<<dim3((C + 31) / 32, (R + 31) / 32, B), dim3(32, 8)>>>" in cs[0].new_text


TABLE_LAUNCH = """#include <cuda_runtime.h>
__global__ void tr(const float *in, float *out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
__global__ void neg(const float *in, float *out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = -in[r * cols + c];
}
typedef void (*Op)(const float *, float *, int, int);
void run(const float *in, float *out, int rows, int cols) {
    Op ops[] = {&tr, &neg};
    for (int k = 0; k < 2; ++k) ops[k]<<<dim3((cols + 15) / 16, (rows + 15) / 16), dim3(16, 16)>>>(in, out, rows, cols);
}
"""


def test_a_launch_through_a_table_of_other_kernels_keeps_the_launch_independent_form_alone():
    """The table's launch runs ``neg`` too: its block and grid are not the transpose's to change, and the
    coarsened tile is correct for a 32x8 block only, so only the form correct for any launch is made."""
    from htam_core.source import parse_text

    model = parse_text(TABLE_LAUNCH, "cuda", "ops.cu")
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel("tr"))
    assert isinstance(cs, list), cs.reason
    assert [c.params["block"] for c in cs] == [[16, 16]] and "htam_e" in cs[0].new_text
    assert "dim3((cols + 15) / 16, (rows + 15) / 16), dim3(16, 16)" in cs[0].new_text


SHARED_BLOCK = NAIVE_WITH_BLOCK.replace("BX", "32").replace("BY", "32").replace(
    "    tr<<<grid, block>>>(in, out, rows, cols);",
    "    tr<<<grid, block>>>(in, out, rows, cols);\n    other<<<grid, block>>>(out, rows * cols);") + """
__global__ void other(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = 0.f;
}
"""


def test_a_block_shared_with_another_launch_keeps_the_launch_independent_form_alone(tmp_path):
    """The launch's ``dim3 block`` is also another kernel's: it cannot become 32x8, so the tile that needs 32x8
    threads is not proposed; the form correct for any block is, with the launch as it is."""
    path = tmp_path / "tr.cu"
    path.write_text(SHARED_BLOCK.replace("void launch_tr", "__global__ void other(float *p, int n);\nvoid launch_tr"))
    model = load(str(path))
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel("tr"))
    assert isinstance(cs, list), cs.reason
    assert [c.params["block"] for c in cs] == [[32, 32]] and "htam_e" in cs[0].new_text
