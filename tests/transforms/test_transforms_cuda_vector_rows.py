"""``cuda.vectorize_float4``'s row form: a 2-D kernel whose column (the global x index) is its contiguous index
takes ``16 / sizeof(T)`` consecutive columns per thread with 16-byte loads and stores, the kernel's own code at a
row's ragged end or a misaligned row, and every launch's grid x divided by the width.

Spellings: a guarded compound body with ``size_t`` indices and a ``dim3`` grid variable, an early return with
``int`` indices, a type template parameter launched through a grid macro, ``__half`` with the column used as a
value and an ``if (!(...)) return;``, an ``unsigned`` column with a ``?:`` per element, and the textbook rank-1
update after ``cuda.coalesce_remap`` (htam's own output). Each runs on the CPU (:mod:`cpu_emulation`, one thread
at a time) against the original with ``N % 4 != 0``, a one-element row and a misaligned base.
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles, fixture_path

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TID = "cuda.vectorize_float4"
FILE = "vector_rows2d.cu"
NAIVE = "outer_update_naive.cu"

#: Host stand-ins for the device half type (the emulation compiles for the CPU) and a printer for every element.
HALF = """struct __half { _Float16 h; };
static __half __hadd(__half a, __half b) { return __half{(_Float16)(a.h + b.h)}; }
static __half __int2half_rn(int v) { return __half{(_Float16)v}; }
static double htam_val(__half v) { return (double)(float)v.h; }
static __half htam_make(__half *, int v) { return __half{(_Float16)v}; }
"""
PLAIN = """template <class T> static double htam_val(T v) { return (double)v; }
template <class T> static T htam_make(T *, int v) { return (T)v; }
"""

#: kernel -> (index type, arrays as (name, element type, length), output array, call, block y)
KERNELS = {
    "rank1_cols": ("size_t", [("A", "float", "M * N"), ("u", "float", "M"), ("v", "float", "N")], "A",
                   "rank1_cols(A, u, v, 0.5f, M, N)", 8),
    "scale_shift": ("int", [("in", "float", "M * N"), ("rs", "float", "M"), ("cb", "float", "N"),
                            ("out", "float", "M * N")], "out", "scale_shift(in, rs, cb, out, M, N)", 8),
    "add_col_bias": ("int", [("y", "float", "M * N"), ("x", "float", "M * N"), ("b", "float", "N")], "y",
                     "add_col_bias<float>(y, x, b, M, N)", 8),
    "ramp_half": ("int", [("out", "__half", "M * N"), ("a", "__half", "M * N")], "out", "ramp_half(out, a, M, N)", 8),
    "masked_copy": ("int", [("out", "float", "M * N"), ("in", "float", "M * N"), ("keep", "int", "N")], "out",
                    "masked_copy(out, in, keep, M, N)", 4),
}


def _main(kernel: str, m: int, n: int, off: int, grid_x: str) -> str:
    """C++ ``main`` that fills the kernel's arrays with small integers, offsets every base by ``off`` elements,
    launches it over ``grid_x`` x ``ceil(M / by)`` blocks of ``32 x by`` and prints the output array."""
    idx, arrays, out, call, by = KERNELS[kernel]
    lines = [f"int main() {{ const {idx} M = {m}, N = {n};"]
    for k, (name, t, size) in enumerate(arrays):
        lines += [f"std::vector<{t}> {name}_buf((size_t)({size}) + 8);",
                  f"for (size_t k = 0; k < {name}_buf.size(); ++k) {name}_buf[k] = htam_make(({t} *)nullptr, "
                  f"(int)((k * {7 + 2 * k} + {k}) % 13) - 6);",
                  f"{t} *{name} = {name}_buf.data() + {off};"]
    lines += [f"HTAM_LAUNCH({grid_x}, (M + {by - 1}) / {by}, 32, {by}, {call});",
              f"for (size_t k = 0; k < (size_t)M * N; ++k) std::printf(\"%.9g\\n\", htam_val({out}[k]));",
              "return 0; }"]
    return "\n".join(lines)


def _made(kernel: str):
    model = parse_text(fixture_path(FILE).read_text(), "cuda")
    res = registry.propose(TID, model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason
    return res[0]


@pytest.mark.parametrize("kernel,width,float4", [
    ("rank1_cols", 4, True), ("scale_shift", 4, True), ("add_col_bias", 4, False), ("ramp_half", 8, False),
    ("masked_copy", 4, False),
])
def test_the_row_form_is_offered_and_made(kernel, width, float4):
    c = _made(kernel)
    assert c.params["form"] == "rows" and c.params["vector_width"] == width
    assert ("float4" in c.new_text.split(f"void {kernel}")[1].split("__global__")[0]) == float4
    assert f"the grid's x shrinks {width}x" in c.description
    # the grid shrinks along x only: the y component is the kernel's own
    assert f"+ {width - 1}) / {width}" in c.new_text


def test_the_launches_keep_their_y():
    assert "dim3 grid((((unsigned)((N + 31) / 32)) + 3) / 4, (unsigned)((M + 7) / 8));" in _made("rank1_cols").new_text
    assert "dim3((dim3(GRID2D(rows, cols)).x + 3) / 4, dim3(GRID2D(rows, cols)).y, dim3(GRID2D(rows, cols)).z)" \
        in _made("add_col_bias").new_text
    assert "ramp_half<<<dim3((((cols + 31) / 32) + 7) / 8, (rows + 7) / 8), block>>>" in _made("ramp_half").new_text


def test_per_row_reads_and_conditional_reads_stay_scalar():
    text = _made("rank1_cols").new_text
    assert "u[r]" in text and "&u[" not in text  # the row's factor: one value for every lane
    masked = _made("masked_copy")
    assert masked.params["pointers"] == ["out", "keep"]  # in[i * N + j] is read under `?:`: scalar
    assert "reinterpret_cast<const htam_in" not in masked.new_text


@pytest.mark.parametrize("kernel,why", [
    ("every_other", "moves by 2 elements when the column j moves by 1"),
    ("running_total", "writes acc, declared outside it"),
    ("lane_scaled", "reads the thread's x before the bounds check"),
])
def test_refusals_say_why(refuse, kernel, why):
    assert why in refuse(TID, FILE, kernel)


def test_the_naive_mapping_is_told_to_coalesce_first(refuse):
    reason = refuse(TID, NAIVE, "outer_update")
    assert "moves by N elements when the column i moves by 1" in reason and "threadIdx.x" in reason


def _coalesced_then_vectorized() -> tuple[str, str]:
    text = fixture_path(NAIVE).read_text()
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.coalesce_remap", model, model.kernel("outer_update"))
    assert not isinstance(res, NotApplicable), res.reason
    mid = parse_text(res[0].new_text, "cuda")
    res = registry.propose(TID, mid, mid.kernel("outer_update"))
    assert not isinstance(res, NotApplicable), res.reason
    assert res[0].params["form"] == "rows" and res[0].params["column"] == "j"
    return mid.text, res[0].new_text


def test_htams_own_coalesced_form_is_vectorized():
    _, final = _coalesced_then_vectorized()
    assert "size_t j = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;" in final
    assert "dim3 grid((((unsigned)((N + 15) / 16)) + 3) / 4, (unsigned)((M + 15) / 16));" in final
    # once made, the step is not offered again (the column is no longer one element per thread)
    again = parse_text(final, "cuda")
    assert isinstance(registry.propose(TID, again, again.kernel("outer_update")), NotApplicable)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_candidates_compile(tmp_path):
    for k in KERNELS:
        assert_nvcc_compiles(_made(k).new_text, tmp_path, f"{k}.cu")
    assert_nvcc_compiles(_coalesced_then_vectorized()[1], tmp_path, "outer.cu")


def _emulate(text: str, kernel: str, main: str, tmp, prelude: str) -> list[float]:
    from cpu_emulation import run_main

    tmp.mkdir()
    return run_main(text, kernel, main, tmp, prelude=prelude)


@pytest.mark.parametrize("m,n,off", [(5, 37, 0), (3, 64, 0), (4, 1, 0), (3, 40, 1)])
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_same_numbers_on_the_cpu(tmp_path, kernel, m, n, off):
    """37 columns: rows start off a 16-byte boundary in turn and end ragged; one column: the scalar code only;
    an offset of one element: every vector misaligned."""
    from cpu_emulation import compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    c = _made(kernel)
    width = c.params["vector_width"]
    prelude = HALF if kernel == "ramp_half" else PLAIN
    gx = (n + 31) // 32
    want = _emulate(fixture_path(FILE).read_text(), kernel, _main(kernel, m, n, off, str(gx)), tmp_path / "a", prelude)
    got = _emulate(c.new_text, kernel, _main(kernel, m, n, off, str((gx + width - 1) // width)), tmp_path / "b",
                   prelude)
    assert got == want and len(got) == m * n


@pytest.mark.parametrize("m,n,off", [(5, 37, 0), (6, 48, 0), (6, 48, 1)])
def test_the_textbook_chain_gives_the_same_numbers(tmp_path, m, n, off):
    """The rank-1 update: naive (rows on x) against coalesced + vectorized (columns on x, 4 per thread)."""
    from cpu_emulation import compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    mid, final = _coalesced_then_vectorized()
    main = """int main() {{ const size_t M = {m}, N = {n};
std::vector<float> A_buf(M * N + 8), x(M), y_buf(N + 8);
for (size_t k = 0; k < A_buf.size(); ++k) A_buf[k] = (float)((k * 5) % 11) - 5.0f;
for (size_t k = 0; k < M; ++k) x[k] = (float)(k % 7) * 0.5f;
for (size_t k = 0; k < y_buf.size(); ++k) y_buf[k] = (float)(k % 5) * 0.25f;
float *A = A_buf.data() + {off}; const float *y = y_buf.data() + {off};
HTAM_LAUNCH({gx}, {gy}, 16, 16, outer_update(A, x.data(), y, 2.0f, M, N));
for (size_t k = 0; k < M * N; ++k) std::printf("%.9g\\n", A[k]);
return 0; }}"""
    naive = main.format(m=m, n=n, off=off, gx=(m + 15) // 16, gy=(n + 15) // 16)
    vec = main.format(m=m, n=n, off=off, gx=((n + 15) // 16 + 3) // 4, gy=(m + 15) // 16)
    want = _emulate(fixture_path(NAIVE).read_text(), "outer_update", naive, tmp_path / "a", "")
    got = _emulate(final, "outer_update", vec, tmp_path / "b", "")
    assert got == want and len(got) == m * n
    assert mid != final


def test_a_lane_that_skips_its_column_is_caught(tmp_path):
    """The check can fail: a vector path that leaves lane 3 unwritten gives other numbers."""
    from cpu_emulation import compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    c = _made("rank1_cols")
    broken = c.new_text.replace("htam_A_vec.w = htam_A;", "")
    assert broken != c.new_text
    want = _emulate(fixture_path(FILE).read_text(), "rank1_cols", _main("rank1_cols", 3, 64, 0, "2"), tmp_path / "a",
                    PLAIN)
    got = _emulate(broken, "rank1_cols", _main("rank1_cols", 3, 64, 0, "1"), tmp_path / "b", PLAIN)
    assert got != want


def test_a_loop_over_the_columns_data_refuses_the_row_form(refuse):
    """A matmul's ``B[k * N + col]`` moves with the column inside the k loop: copying the loop per lane would turn
    the threads' coalesced loads into scalar ones, so the row form says why and the loop form decides."""
    reason = refuse(TID, "ldg_loop_variants.cu", "mm_plain")
    assert "`B[k * N + col]` in the loop on line 12 moves with the column col" in reason


@pytest.mark.parametrize("body", [
    "for (int k = 0; k < K; ++k) { if (k % 2 == 0) acc += B[k * N + col]; }",  # a branch inside the loop
    "if (K > 0) { for (int k = 0; k < K; ++k) acc += B[k * N + col]; }",  # the loop inside a branch
    "for (int k = 0; k < K; ++k) acc += (k < M && B[k * N + col] > 0.f) ? B[k * N + col] : 0.f;",
])
def test_a_loop_wins_over_a_branch_around_the_columns_data(body: str) -> None:
    """However a branch and the loop nest around ``B[k * N + col]``, the reason is the loop's: one walk up the
    statement says why the read is conditional, and a loop is reported before a branch."""
    text = ("__global__ void mm(const float *B, float *C, int M, int N, int K)\n{\n"
            "    int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
            "    int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (row < M && col < N) {\n        float acc = 0.0f;\n        " + body + "\n"
            "        C[row * N + col] = acc;\n    }\n}\n")
    model = parse_text(text, "cuda", "mm.cu")
    r = registry.propose(TID, model, model.kernel("mm"))
    assert isinstance(r, NotApplicable)
    assert "`B[k * N + col]` in the loop on line 7 moves with the column col" in r.reason
