"""Triton row-kernel steps: several rows per program (``triton.multi_row``), single-pass statistics
(``triton.online_softmax``, ``triton.single_pass_moments``) and ``triton.autotune``'s config pruning.

Each transform is applied to several differently written kernels (``tests/fixtures/transforms/tri_rows.py`` and
the corpus); the candidates are run next to the originals under ``TRITON_INTERPRET=1`` on shapes that include
ragged ones (``n`` not a multiple of the block) and their outputs compared. Refusals are checked on kernels where
a transform must not apply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from transform_helpers import fixture_path
from triton_equivalence import Case, run_cases

from htam_core.source import load, parse_text
from htam_core.transforms import registry

ROWS = "tri_rows.py"
LOOPED = ((5, 37), (16, 128), (3, 100), (2, 300))  # one, two and ragged column tiles


# ---- several rows per program -----------------------------------------------------------------------------

def test_multi_row_rewrites_row_ids_masks_and_launch(cand):
    cs = cand("triton.multi_row", ROWS, "rms_scale_kernel")
    assert [c.params["rows"] for c in cs] == [16, 64]  # BLOCK=128 at the launch: 2048 and 8192 elements per tile
    t = cs[0].new_text
    assert "row = (tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)" in t
    assert "offs = tl.arange(0, BLOCK)[None, :]" in t
    assert "tl.sum(x * x, axis=1, keep_dims=True)" in t  # an axis-less sum becomes per-row
    assert "tl.store(Rstd + row, rstd, mask=htam_row_mask)" in t  # the unmasked per-row store gets the row mask
    assert "w = tl.load(W + offs, mask=m, other=0.0)" in t  # the shared weight row needs no row mask
    assert "rms_scale_kernel[(triton.cdiv(M, 16),)](x, w, y, rstd, x.stride(0), N, 1e-6, BLOCK=128, " \
           "htam_n_rows=M, ROWS=16)" in t


def test_multi_row_computed_block_picks_rows_at_the_launch(cand):
    (c, _) = cand("triton.multi_row", "softmax_rows.py", "row_softmax_kernel")
    again = parse_text(c.new_text, "python")
    res = registry.propose("triton.multi_row", again, again.kernel("row_softmax_kernel"))
    assert not res and "already gives each program several rows" in res.reason
    assert c.params["rows"] is None
    assert "htam_rows = max(1, min(64, 2048 // (BLOCK_SIZE)))" in c.new_text
    assert "row_softmax_kernel[(triton.cdiv(n_rows, htam_rows),)]" in c.new_text
    assert "mask=valid & htam_row_mask" in c.new_text


@pytest.mark.parametrize("file,kernel,needle", [
    ("layernorm_heuristics.py", "ln_fwd_kernel", "loops over column tiles"),
    (ROWS, "softmax_three_pass", "loops over column tiles"),
    (ROWS, "branchy_rows", "branches on s"),
    ("vector_add_small_block.py", "vadd_kernel", "indexes blocks of BLOCK_SIZE elements, not rows"),
    ("matmul_autotune.py", "mm_kernel", "@triton.autotune"),
    ("tri_scale.py", "scale_shift", "indexes blocks of BLOCK elements"),
])
def test_multi_row_refusals(refuse, file, kernel, needle):
    assert needle in refuse("triton.multi_row", file, kernel)


# ---- single-pass statistics -------------------------------------------------------------------------------

def test_online_softmax_per_lane_max(cand):
    (c,) = cand("triton.online_softmax", ROWS, "softmax_three_pass")
    t = c.new_text.split("def softmax_three_pass")[1].split("def softmax3")[0]
    assert t.count("for c0 in range") == 2  # the max and sum loops are one; the normalize loop stays
    assert "s = s * tl.where(m == float(\"-inf\"), 1.0, tl.exp(htam_m_prev - m))" in t
    assert "s = s * tl.where(m == float(\"-inf\"), 0.0, tl.exp(m - row_max))" in t  # rescaled to the row max
    assert t.index("s = tl.zeros") < t.index("for c0")  # the sum's initial value moved above the fused loop
    assert c.changes_numerics


def test_online_softmax_scalar_max_without_rescale(cand):
    (c,) = cand("triton.online_softmax", ROWS, "logsumexp_rows")
    t = c.new_text.split("def logsumexp_rows")[1].split("def logsumexp(")[0]
    assert t.count("for k in range") == 1
    assert "tl.exp(v - mx)" in t and "exp(mx -" not in t  # the sum reads the running max itself: no final rescale


def test_single_pass_moments(cand):
    (c,) = cand("triton.single_pass_moments", ROWS, "layer_norm_two_pass")
    t = c.new_text.split("def layer_norm_two_pass")[1].split("def layer_norm(")[0]
    assert t.count("for off in range") == 2  # mean+variance in one loop, then normalize
    assert "htam_dp = tl.where(cols < N, (-1.0), 0.0)" in t
    assert "        x = a\n" in t and t.count("tl.load(X + cols") == 2  # the second read of the row became an alias
    assert "_var = _var + tl.maximum(htam_q0 + 2.0 * mean * htam_q1 + mean * mean * htam_q2, 0.0)" in t
    (c,) = cand("triton.single_pass_moments", ROWS, "row_variance")
    assert "htam_q0 += tl.sum(tl.where(idx < n_cols, (htam_p0 * htam_p0), 0.0), axis=0)" in c.new_text


@pytest.mark.parametrize("tid,file,kernel,needle", [
    ("triton.online_softmax", ROWS, "layer_norm_two_pass", "accumulates no max"),
    ("triton.online_softmax", "softmax_rows.py", "row_softmax_kernel", "0 loop(s)"),
    ("triton.online_softmax", ROWS, "row_sum_loop", "1 loop(s)"),
    ("triton.single_pass_moments", ROWS, "softmax_three_pass", "accumulates no sum"),
    # already single-pass: the corpus layer norm sums x and x*x in its first loop; the second only normalizes
    ("triton.single_pass_moments", "layernorm_heuristics.py", "ln_fwd_kernel", "accumulates nothing"),
    ("triton.single_pass_moments", "matmul_autotune.py", "mm_kernel", "loop(s)"),
])
def test_single_pass_refusals(refuse, tid, file, kernel, needle):
    assert needle in refuse(tid, file, kernel)


def test_single_pass_refuses_non_affine_deviation(tmp_path):
    src = fixture_path(ROWS).read_text().replace("x = tl.where(cols < N, x - mean, 0.)",
                                                 "x = tl.where(cols < N, tl.abs(x - mean), 0.)")
    p = tmp_path / "abs_dev.py"
    p.write_text(src)
    model = load(str(p))
    res = registry.propose("triton.single_pass_moments", model, model.kernel("layer_norm_two_pass"))
    assert not res and "not affine" in res.reason


# ---- autotune with pruned configs -------------------------------------------------------------------------

def test_autotune_prunes_on_the_mask_bound(cand):
    (c,) = cand("triton.autotune", ROWS, "row_sum_loop")  # BLOCK loops over N: the prune compares BLOCK with N
    assert "for b, n in (('BLOCK', 'N'),)" in c.new_text
    (c,) = cand("triton.autotune", "softmax_rows.py", "row_softmax_kernel")  # warps only: BLOCK_SIZE is computed
    assert "for b, n in (('BLOCK_SIZE', 'n_cols'),)" in c.new_text and "cfg.num_warps * 32 >" in c.new_text


_PRUNE = r"""
import json, runpy, sys
import triton
ns = runpy.run_path(sys.argv[1], run_name="htam_probe")
prune = ns[sys.argv[2]]
configs = ns[sys.argv[3]]
out = {}
for n in (20, 100, 5000):
    kept = prune(configs, {}, **{sys.argv[4]: n, **json.loads(sys.argv[5])})
    out[n] = [(c.kwargs, c.num_warps) for c in kept]
print("HTAM-RESULT " + json.dumps(out))
"""


@pytest.mark.slow
def test_autotune_prune_function_drops_pointless_configs(tmp_path):
    """The generated prune keeps no block above next_power_of_2(n) and no config with more threads than elements;
    run (in a worker, without the interpreter so every survivor is returned) on three sizes."""
    model = load(str(fixture_path(ROWS)))
    (c,) = registry.propose("triton.autotune", model, model.kernel("row_sum_loop"))
    p = tmp_path / "tuned.py"
    p.write_text(c.new_text)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", _PRUNE, str(p), "_htam_prune_row_sum_loop",
                           "_HTAM_ROW_SUM_LOOP_CONFIGS", "N", "{}"], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("HTAM-RESULT ")), None)
    assert line is not None, proc.stderr[-2000:]
    kept = json.loads(line[len("HTAM-RESULT "):])
    for n in ("100", "5000"):
        cap = max(16, 1 << (int(n) - 1).bit_length())
        assert kept[n] and all(kw["BLOCK"] <= cap and w * 32 <= kw["BLOCK"] for kw, w in kept[n]), (n, kept[n])
    assert {kw["BLOCK"] for kw, _ in kept["100"]} == {128}
    # a long row keeps every config with at least one element per thread
    sensible = [g for g in c.params["configs"] if g["num_warps"] * 32 <= g["kwargs"]["BLOCK"]]
    assert len(kept["5000"]) == len(sensible) < len(c.params["configs"])
    assert kept["20"] == [[{"BLOCK": 64}, 4]]  # nothing fits 32 elements: the smallest tile stays


# ---- equivalence under the interpreter --------------------------------------------------------------------

CASES = [
    Case(ROWS, "rms_scale_kernel", "triton.multi_row", 0, "rms_scale", ("x", "w")),
    Case(ROWS, "rms_scale_kernel", "triton.multi_row", 1, "rms_scale", ("x", "w")),
    Case(ROWS, "row_max_abs", "triton.multi_row", 0, "max_abs", shapes=((5, 37), (70, 16), (3, 100))),
    Case("softmax_rows.py", "row_softmax_kernel", "triton.multi_row", 0, "softmax",
         shapes=((1, 1), (7, 33), (40, 781), (9, 1024)), tol=(1e-5, 1e-6)),
    Case(ROWS, "softmax_three_pass", "triton.online_softmax", 0, "softmax3", shapes=LOOPED, tol=(1e-5, 1e-6)),
    Case(ROWS, "logsumexp_rows", "triton.online_softmax", 0, "logsumexp", shapes=LOOPED, tol=(1e-5, 1e-5)),
    Case(ROWS, "layer_norm_two_pass", "triton.single_pass_moments", 0, "layer_norm", ("x", "w"), shapes=LOOPED),
    Case(ROWS, "row_variance", "triton.single_pass_moments", 0, "variance", shapes=LOOPED),
    Case("vector_add_small_block.py", "vadd_kernel", "triton.autotune", 0, "vector_add", ("x", "x")),
    Case("softmax_rows.py", "row_softmax_kernel", "triton.autotune", 0, "softmax", tol=(1e-5, 1e-6)),
    Case(ROWS, "row_sum_loop", "triton.autotune", 0, "row_sum", shapes=LOOPED),
    Case("layernorm_heuristics.py", "ln_fwd_kernel", "triton.autotune", 0, "layer_norm", ("x", "w", "w"),
         shapes=LOOPED),
]


@pytest.fixture(scope="module")
def equivalence(tmp_path_factory) -> dict[str, str]:
    """Every case's candidate and original, run in one interpreter worker."""
    return run_cases(CASES, tmp_path_factory.mktemp("rows_candidates"), fixture_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_candidate_matches_original_in_interpreter(equivalence, case):
    assert equivalence[case.key] == "ok", equivalence[case.key]


@pytest.mark.slow
def test_equivalence_harness_detects_a_wrong_candidate(tmp_path, monkeypatch):
    """The comparison can fail: a candidate whose variance is off by a factor is reported, not passed."""
    real = registry.propose

    def wrong(tid, model, kernel, profile=None):
        res = real(tid, model, kernel, profile)
        for c in res:
            c.new_text = c.new_text.replace("sq / n_cols", "sq / (n_cols + 1)")
        return res

    monkeypatch.setattr(registry, "propose", wrong)
    out = run_cases([Case(ROWS, "row_variance", "triton.single_pass_moments", 0, "variance")], tmp_path, fixture_path)
    assert out["triton.single_pass_moments:row_variance:0"] != "ok"
