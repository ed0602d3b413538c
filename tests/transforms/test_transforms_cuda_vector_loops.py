"""``cuda.vectorize_float4`` on strided and row loops: a float4 main loop per loop, the alignment check, the
scalar tail (which does all the work when a base is not 16-byte aligned).

Structural tests read the facts of the result: each vectorized loop becomes a main loop over ``htam_v4`` whose
global accesses go through ``float4`` (``Access.vector``), with the original start and step, and a tail loop (over
a 64-bit counter that declares the original variable) with the original bound; launches are unchanged. The ``gpu`` tests compare outputs with
the original on ragged sizes (row widths that are and are not multiples of 4).
"""

from __future__ import annotations

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path

TID = "cuda.vectorize_float4"
FILE = "vector_loop_variants.cu"


def _main_and_tail(f, var: str):
    mains = [lp for lp in f.loops if lp.var == "htam_v4"]
    # the tail counts in 64 bits (htam_gi) and declares the loop's 32-bit variable from it (tests/transforms/
    # test_grid_loop_counters.py); a 64-bit variable stays the tail's own
    tails = [lp for lp in f.loops if lp.var in (var, "htam_gi")]
    return mains, tails


def test_block_per_row_rmsnorm_both_loops(cand):
    (c,) = cand(TID, FILE, "rmsnorm_block_row")
    assert c.params["loops"] == [13, 24] and c.changes_numerics  # the sum of squares changes order
    f = _facts(c.new_text, "rmsnorm_block_row")
    mains, tails = _main_and_tail(f, "c")
    assert len(mains) == len(tails) == 2
    for lp in mains:
        assert str(lp.start) == "threadIdx.x" and str(lp.step) == "blockDim.x" and str(lp.bound) == "div(cols, 4)"  # each loop's own htam_n4, in scope
        assert all(a.vector for a in f.accesses_in(lp) if a.space == "global")
    assert {a.pointer for lp in mains for a in f.accesses_in(lp) if a.space == "global"} == {"x", "w", "y"}
    for lp in tails:
        assert str(lp.bound) == "cols" and str(lp.step) == "blockDim.x"
    assert "& 15ull) == 0ull" in c.new_text
    assert f.launches[0].grid[0].text == "rows" and f.launches[0].block_shape == (256, 1, 1)


def test_grid_stride_loop_keeps_its_stride(cand):
    (c,) = cand(TID, FILE, "axpy_grid_stride")
    f = _facts(c.new_text, "axpy_grid_stride")
    (main,), (tail,) = _main_and_tail(f, "i")
    assert main.grid_stride and tail.grid_stride
    y = [a for a in f.accesses_in(main) if a.pointer == "y"]
    assert {a.kind for a in y} == {"read", "write"} and all(a.vector for a in y)  # y is read, so it is loaded


def test_warp_lanes_and_an_alias_base(cand):
    (c,) = cand(TID, FILE, "warp_row_max")
    assert "reinterpret_cast<const float4 *>(xr + (0))[htam_v4]" in c.new_text and not c.changes_numerics
    (main,), _ = _main_and_tail(_facts(c.new_text, "warp_row_max"), "c")
    assert main.step == 32


def test_thread_per_row_corpus_softmax(cand):
    (c,) = cand(TID, "softmax_row_per_thread.cu", "softmax_row_per_thread")
    assert c.params["loops"] == [25, 29, 33]


def test_scalar_loops_are_refused(refuse):
    assert "is not a stride-1 access in i" in refuse(TID, FILE, "even_sum")


@pytest.mark.parametrize("kernel", ["guarded_chunk_sum", "guarded_row_copy"])
def test_an_access_under_a_condition_inside_the_loop_is_refused(refuse, kernel):
    """Regression (a new user's trial): ``if (i * 8 + k < lim) s += p[k]`` got an unguarded 16-byte load of ``p``,
    reading the elements the guard skips, past the end of the buffer. An access that a condition inside the loop
    decides (if, ?:, &&/||) stays scalar: the loop is refused with the line of the access."""
    why = refuse(TID, FILE, kernel)
    assert "runs under a condition inside the loop" in why and "would also touch the elements" in why


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [1024, 1023, 4, 3, 130])
def test_equivalence_on_gpu(cols, tmp_path, cand):
    torch = torch_cuda()
    rows = 37
    g = torch.Generator(device="cuda").manual_seed(cols)
    x = torch.randn(rows, cols, device="cuda", generator=g)
    w = torch.randn(cols, device="cuda", generator=g)
    texts = [fixture_path(FILE).read_text()]
    for k in ("rmsnorm_block_row", "axpy_grid_stride", "warp_row_max"):
        texts.append(cand(TID, FILE, k)[0].new_text)
    outs = []
    for i, text in enumerate([texts[0], *texts[1:]]):
        y, m = torch.zeros_like(x), torch.zeros(rows, device="cuda")
        z = x.clone().reshape(-1)
        call_host(text, "const float *x, const float *w, float *y, float *m, float *z, int rows, int cols",
                  "run_rmsnorm(x, w, y, rows, cols, 1e-5f); run_axpy(rows * cols - 1, 0.5f, x + 1, z); "
                  "run_row_max(x, m, rows, cols)", [x, w, y, m, z, rows, cols], tmp_path, f"v{i}")
        outs.append((y, m, z))
    for k in range(1, len(outs)):
        for got, want in zip(outs[k], outs[0], strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cols", [300, 301, 3])
def test_thread_per_row_softmax_same_numbers_on_the_cpu(cols, tmp_path, cand):
    """The float4 loops, the scalar tail and the misaligned fallback (odd rows when ``cols`` is odd) give the
    original's outputs, run one thread at a time on the host (:mod:`cpu_emulation`)."""
    from cpu_emulation import compiler, run_rows

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    start = fixture_path("softmax_row_per_thread.cu").read_text()
    (c,) = cand(TID, "softmax_row_per_thread.cu", "softmax_row_per_thread")
    before = run_rows(start, "softmax_row_per_thread", 37, cols, 8, tmp_path)
    after = run_rows(c.new_text, "softmax_row_per_thread", 37, cols, 8, tmp_path)
    assert len(after) == len(before) == 37 * cols
    assert max(abs(a - b) for a, b in zip(after, before, strict=True)) < 1e-6
