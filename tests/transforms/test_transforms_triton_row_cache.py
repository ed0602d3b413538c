"""``triton.row_in_registers``: a two-pass Triton row kernel gets a one-tile fast path (``N <= BLOCK``) in which
the second pass reuses the first pass's loads of the row; longer rows take the original loops.

Structural tests check the fast path and which loads it drops; the candidates run next to the originals under
``TRITON_INTERPRET=1`` on rows that fit one tile, fill it exactly and take several tiles (the original loops).
"""

from __future__ import annotations

import pytest
from transform_helpers import fixture_path
from triton_equivalence import Case, run_cases

TID = "triton.row_in_registers"
ROWS = "tri_rows.py"
LN = "layernorm_heuristics.py"


def test_layer_norm_fast_path_drops_both_spellings_of_the_row_load(cand):
    (c,) = cand(TID, LN, "ln_fwd_kernel")
    t = c.new_text
    assert "if (N > 0) & (N <= BLOCK_N):" in t and c.params["reused"] == ["v"]
    fast, slow = t.split("if (N > 0) & (N <= BLOCK_N):")[1].split("\n    else:\n", 1)
    # the fast path loads x twice (the EVEN_N and the masked spelling of the first pass) and never again;
    # the mask written through `m = cols < N` in the second pass compares equal to `mask=cols < N`
    assert fast.count("tl.load(x_row + cols") == 2 and slow.count("tl.load(x_row + cols") == 4
    assert fast.count("tl.load(w_ptr + cols") == 2  # the weights were not loaded by the first pass


def test_three_pass_softmax_fuses_the_first_pair_only(cand):
    (c,) = cand(TID, ROWS, "softmax_three_pass")
    assert c.params == {"reused": ["x"], "fast_path": "n_cols <= BLOCK"}
    assert c.new_text.count("for c0 in range(0, n_cols, BLOCK):") == 3  # two in the slow path, the third pass
    # the comment and the description say which passes share the load, and that the third still loads its own
    assert ("# the row fits one tile: pass 2 (of 3) reuses x loaded by pass 1; pass 3 still loads its own"
            in c.new_text) and "loaded once, kept in registers" not in c.new_text
    assert ("the pass on line 127 reuses x loaded by the pass on line 121 instead of loading it again; the other "
            "pass over the row (line 132) still loads its own") in c.description


def test_two_pass_comment_names_both_passes(cand):
    (c,) = cand(TID, LN, "ln_fwd_kernel")
    assert "# the row fits one tile: pass 2 reuses v loaded by pass 1\n" in c.new_text
    assert "the pass on line 45 reuses v loaded by the pass on line 30 instead of loading it again (" in c.description


@pytest.mark.parametrize("kernel,needle", [
    ("layer_norm_two_pass", "loads nothing the loop on line 57 loaded the same way"),  # `a = ...` then `x = ...`
    ("row_sum_loop", "1 top-level loop(s)"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, ROWS, kernel)


CASES = [
    Case(LN, "ln_fwd_kernel", TID, 0, "layer_norm", ("x", "w", "w"),
         ((4, 64), (5, 37), (3, 100), (8, 1024), (2, 2500))),
    Case(ROWS, "softmax_three_pass", TID, 0, "softmax3", ("x",), ((5, 37), (16, 64), (3, 100))),
    Case(ROWS, "row_variance", TID, 0, "variance", ("x",), ((5, 20), (4, 32), (3, 100))),
    Case(ROWS, "logsumexp_rows", TID, 0, "logsumexp", ("x",), ((5, 20), (4, 32), (3, 100))),
]


@pytest.fixture(scope="module")
def equivalence(tmp_path_factory) -> dict[str, str]:
    """Every case's candidate and original, run in one interpreter worker."""
    return run_cases(CASES, tmp_path_factory.mktemp("row_cache"), fixture_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_candidate_matches_original_in_interpreter(equivalence, case):
    assert equivalence[case.key] == "ok", equivalence[case.key]
