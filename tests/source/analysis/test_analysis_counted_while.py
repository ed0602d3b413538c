"""``while`` and ``do``/``while`` loops read as the counted loops they are (:func:`loops.c_while_header`): the
variable set just before the loop, updated once as the body's last statement; a ``do`` loop only when its first
test is provably true; the reduction tree they form is a shared tree (:meth:`KernelFacts.shared_tree_loops`)."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

HEAD = "constexpr int BLOCK = 256;\n#define HALF 128\n"
#: tree spelling -> (kind, start, cmp, bound, update, trip count)
TREES = {
    "int s = 1; do { if ((t & (2 * s - 1)) == 0) sh[t] += sh[t + s]; __syncthreads(); s <<= 1; } while (s < BLOCK);":
        ("do", 1, "<", 256, "<<", 8),
    "unsigned s = 1u; while (s < BLOCK) { if (t % (2 * s) == 0) sh[t] += sh[t + s]; __syncthreads(); s *= 2; }":
        ("while", 1, "<", 256, "*", 8),
    "int s = HALF; while (s > 0) { if (t < s) sh[t] += sh[t + s]; __syncthreads(); s >>= 1; }":
        ("while", 128, ">", 0, ">>", 8),
    "int s = BLOCK / 2; do { if (t < s) sh[t] += sh[t + s]; __syncthreads(); s = s / 2; } while (s > 0);":
        ("do", 128, ">", 0, "/", 8),
    "int s; s = 1; while (s < BLOCK) { if (t % (2 * s) == 0) sh[t] += sh[t + s]; __syncthreads(); s = s * 2; }":
        ("while", 1, "<", 256, "*", 8),
}


def _facts(tree: str, head: str = HEAD):
    text = (head + "__global__ void k(float *out, int n) {\n    __shared__ float sh[BLOCK];\n    int t = threadIdx.x;\n"
            f"    sh[t] = t;\n    __syncthreads();\n    {tree}\n    if (t == 0) out[blockIdx.x] = sh[0];\n}}\n")
    model = parse_text(text, "cuda")
    return text, analyze(model, model.kernel("k"))


@pytest.mark.parametrize("tree", list(TREES))
def test_a_while_or_do_tree_reads_as_its_counted_loop(tree):
    text, f = _facts(tree)
    (lp,) = f.loops
    kind, start, cmp, bound, update, trips = TREES[tree]
    assert (lp.kind, lp.var, lp.start, lp.cmp, lp.bound, lp.update, lp.trip_value) == (
        kind, "s", start, cmp, bound, update, trips)
    data = text.encode()
    assert data[lp.init_span[0]:lp.init_span[1]].decode().startswith(("int s", "unsigned s", "s = 1"))
    assert data[lp.update_span[0]:lp.update_span[1]].decode().startswith("s ")
    assert lp.header_refusal is None and f.shared_tree_loops() == (lp,)
    assert lp.var_outside == tree.startswith("int s;")  # declared apart from its initialisation


def test_a_do_loop_whose_first_test_is_not_provably_true_is_refused_in_one_line():
    _, f = _facts("int s = n; do { if (t % (2 * s) == 0) sh[t] += sh[t + s]; __syncthreads(); s <<= 1; } "
                  "while (s < BLOCK);")
    (lp,) = f.loops
    assert lp.var is None and lp.update is None and not f.shared_tree_loops()
    assert "runs its body once before testing `(s < BLOCK)`" in lp.header_refusal and "\n" not in lp.header_refusal
    assert lp.header_refusal in f.no_shared_tree()


def test_a_continue_that_skips_the_update_is_refused():
    _, f = _facts("int s = 1; while (s < BLOCK) { if (t >= n) { s *= 2; continue; } sh[t] += sh[t + s]; "
                  "__syncthreads(); s *= 2; }")
    (lp,) = f.loops
    assert lp.var is None


@pytest.mark.parametrize("tree", [
    "int s = 1; s += 0; while (s < BLOCK) { sh[t] += sh[t + s]; __syncthreads(); s *= 2; }",  # written between
    "int s = 1; while (s < BLOCK) { sh[t] += sh[t + s]; s += 1; __syncthreads(); s *= 2; }",  # written twice
    "int s = 1; while (s < BLOCK) { sh[t] += sh[t + s]; s *= 2; __syncthreads(); }",  # not the last statement
])
def test_other_shapes_are_not_counted_loops(tree):
    _, f = _facts(tree)
    assert f.loops[0].var is None and f.loops[0].init_span is None


def test_a_variable_read_after_the_loop_is_flagged():
    _, f = _facts("int s = 1; do { if (t % (2 * s) == 0) sh[t] += sh[t + s]; __syncthreads(); s <<= 1; } "
                  "while (s < BLOCK); out[1] = s;")
    assert f.loops[0].var == "s" and f.loops[0].var_outside
