"""``cuda.row_in_registers``: a multi-pass thread-per-row kernel becomes one block per row with the row's slice
in registers across passes and a block all-reduce of each pass's statistics.

Structural tests read the facts of the result: the row is read from global memory in one pass only, now
coalesced along ``threadIdx.x``; each pass is an unrolled loop of ``PER`` steps (a compile-time trip count); the
launch is one block of 256 threads per row. A row width with no compile-time bound is refused. The ``gpu`` test
compares outputs with the original.
"""

from __future__ import annotations

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path

TID = "cuda.row_in_registers"
FILE = "row_register_variants.cu"


def test_softmax_three_passes_one_read(cand):
    (c,) = cand(TID, FILE, "softmax_rows")
    assert c.params == {"block": 256, "per_thread": 4, "cached": "xr", "reduced": ["m", "s"], "row_width": 1024,
                        "wider_rows_loop": True}
    f = _facts(c.new_text, "softmax_rows")
    reads = [a for a in f.accesses if a.pointer == "x" and a.space == "global"
             and any(f.loops[i].var == "htam_e" for i in a.loops)]  # the register path (rows up to 1024)
    assert len(reads) == 1 and reads[0].coalesced("x") is True  # one pass reads x, consecutive threads adjacent
    passes = [lp for lp in f.loops if lp.var == "htam_e"]
    assert len(passes) == 3 and all(lp.trip_value == 4 for lp in passes)
    # cols is a parameter (run_softmax passes 1024): wider rows take a block-strided loop of each pass
    assert len([lp for lp in f.loops if lp.var == "j" and str(lp.step) == "256"]) == 3
    (la,) = f.launches
    assert la.grid[0].text == "rows" and la.block_shape == (256, 1, 1)
    assert c.new_text.count("__shfl_xor_sync") == 2


def test_layernorm_define_width_and_thread0_store(cand):
    (c,) = cand(TID, FILE, "layernorm_d")
    assert c.params["per_thread"] == 3 and c.params["reduced"] == ["mu", "var"]
    assert "if (threadIdx.x == 0) { mean_out[r] = mu; }" in c.new_text
    f = _facts(c.new_text, "layernorm_d")
    assert c.params["wider_rows_loop"] is False and not [lp for lp in f.loops if lp.var == "i"]  # D is the width
    assert f.launches[0].grid[0].text == "n"
    assert len([a for a in f.accesses if a.pointer == "x"]) == 1


RUNTIME = "row_register_runtime_width.cu"


@pytest.mark.parametrize(("kernel", "width", "cap"), [("rownorm", "cols", 1024), ("rowcentre", "w", 512)])
def test_launch_width_is_no_contract_wider_rows_take_the_original_pass(cand, kernel, width, cap):
    """A width the file's launches pass as one constant sizes the register path only: any other width the
    runtime parameter takes still covers its whole row (a block-strided loop of the same pass)."""
    (c,) = cand(TID, RUNTIME, kernel)
    assert c.params["row_width"] == cap and c.params["wider_rows_loop"] is True
    assert c.new_text.count(f"if ({width} <= {cap})") == 2
    f = _facts(c.new_text, kernel)
    wide = [lp for lp in f.loops if str(lp.start) == "threadIdx.x" and str(lp.step) == "256"]
    assert len(wide) == 2 and all(str(lp.bound) == width for lp in wide)
    # the wider-row pass reads memory, not the register slice sized for `cap` elements
    for lp in wide:
        assert "htam_row" not in c.new_text[lp.span[0]:lp.span[1]]


def test_unbounded_width_is_refused(refuse):
    assert "no compile-time bound" in refuse(TID, FILE, "softmax_any")
    assert "no compile-time bound" in refuse(TID, "softmax_row_per_thread.cu", "softmax_row_per_thread")


def test_single_pass_is_refused(refuse):
    assert "two or more passes" in refuse(TID, "rowwise_variants.cu", "row_sum")


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 129])
def test_equivalence_on_gpu(rows, tmp_path, cand):
    torch = torch_cuda()
    g = torch.Generator(device="cuda").manual_seed(rows)
    x = torch.randn(rows, 1024, device="cuda", generator=g)
    xd = torch.randn(rows, 768, device="cuda", generator=g)
    gam = torch.randn(768, device="cuda", generator=g)
    outs = []
    texts = [fixture_path(FILE).read_text(), cand(TID, FILE, "softmax_rows")[0].new_text,
             cand(TID, FILE, "layernorm_d")[0].new_text]
    for i, text in enumerate(texts):
        y, yd, mu = torch.zeros_like(x), torch.zeros_like(xd), torch.zeros(rows, device="cuda")
        call_host(text, "const float *x, float *y, const float *xd, const float *g, float *yd, float *mu, int rows",
                  "run_softmax(x, y, rows); run_layernorm(xd, g, yd, mu, rows)", [x, y, xd, gam, yd, mu, rows],
                  tmp_path, f"r{i}")
        outs.append((y, yd, mu))
    for k in (1, 2):
        for got, want in zip(outs[k], outs[0], strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
