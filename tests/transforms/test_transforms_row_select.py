"""Row kernels whose running max/min is written as a comparison and a choice (``m = x > m ? x : m``, ``m = (m > x) ?
m : x``, ``hi = hi < v ? v : hi``, ``if (v < lo) { lo = v; }``, an ``int`` ``v >= m ? v : m``), and passes that start
after the row's first element (``m = row[0]; for (c = 1; ...)``).

The analysis layer reads each as a max/min step once (:func:`htam_core.source.analysis.select.select_step`, a loop
accumulator with its :class:`~htam_core.source.analysis.select.Selection`), so ``cuda.warp_per_row``,
``cuda.row_in_registers`` and ``cuda.online_softmax`` all offer and make their step; the all-reduces combine the
lanes' values with the original's own comparison and branch order (never ``fmaxf``), so ties and NaN choose as in
the one thread. ``cuda.row_in_registers`` accepts passes from any constant start: element ``j`` stays in register
``j / B`` of thread ``j % B``, and the first pass loads from the smallest start. Every rewrite compiles with nvcc
(sm_90) and runs on the CPU (:func:`cpu_emulation.run_block_main`) against the original on ragged shapes with ties,
a row of ``-inf``, rows wider than the register path and, where the step keeps its value on a NaN, a row with NaNs.
Regression: a new user's thread-per-row softmax with a ternary max was refused by both row steps, and its
``mx = row[0]; for (c = 1; ...)`` form by the register cache.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, candidates, facts_of_text, fixture_path

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

FILE = "row_select_variants.cu"
WARP, REG, ONLINE = "cuda.warp_per_row", "cuda.row_in_registers", "cuda.online_softmax"
KERNELS = ["softmax_ternary", "softmax_from_first", "shift_keep_old", "row_range", "int_argcount"]
PRELUDE = "#include <cmath>\n#include <cfloat>\n#include <climits>"


def _kernel_text(text: str, kernel: str) -> str:
    start = text.index(f"void {kernel}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize(("kernel", "line", "op", "sel"), [
    ("softmax_ternary", "mx = row[c] > mx", "max", (">", True, True)),
    ("shift_keep_old", "m = (m > row[c])", "max", (">", False, False)),
    ("row_range", "hi = hi < v", "max", ("<", False, True)),
    ("row_range", "if (v < lo)", "min", ("<", True, True)),
    ("int_argcount", "m = v >= m", "max", (">=", True, True)),
])
def test_the_analysis_reads_a_choice_as_a_max_or_min_step(kernel, line, op, sel):
    text = fixture_path(FILE).read_text()
    model = parse_text(text, "cuda")
    facts = analyze(model, model.kernel(kernel))
    accs = [a for lp in facts.loops for a in lp.accumulators if text[a.span[0]:a.span[1]].startswith(line)]
    assert len(accs) == 1 and accs[0].op == op
    assert (accs[0].select.op, accs[0].select.cand_left, accs[0].select.cand_true) == sel
    assert accs[0].select.kind == op


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("tid", [WARP, REG])
def test_both_row_steps_are_offered_and_made(cand, tid, kernel):
    (c,) = cand(tid, FILE, kernel)
    assert "htam_lane" in c.new_text if tid == WARP else "htam_row[" in c.new_text


@pytest.mark.parametrize(("tid", "kernel", "combine"), [
    (WARP, "softmax_ternary", "mx = htam_v > mx ? htam_v : mx;"),
    (WARP, "shift_keep_old", "m = m > htam_v ? m : htam_v;"),
    (WARP, "row_range", "if (htam_v < lo) lo = htam_v;"),
    (REG, "row_range", "hi = hi < htam_v ? htam_v : hi;"),
    (REG, "row_range", "if (htam_red1[htam_w] < lo) lo = htam_red1[htam_w];"),
    (REG, "int_argcount", "m = htam_v >= m ? htam_v : m;"),
])
def test_the_all_reduce_keeps_the_original_comparison(cand, tid, kernel, combine):
    body = _kernel_text(cand(tid, FILE, kernel)[0].new_text, kernel)
    assert combine in body and "fmaxf" not in body and "fminf" not in body


@pytest.mark.parametrize("tid", [WARP, REG])
def test_a_step_that_lets_a_nan_in_says_so(cand, tid):
    assert "a row holding a NaN may end with another" in cand(tid, FILE, "shift_keep_old")[0].description
    assert "NaN" not in cand(tid, FILE, "row_range")[0].description


def test_a_pass_from_the_second_element_keeps_registers_aligned(cand):
    body = _kernel_text(cand(REG, FILE, "softmax_from_first")[0].new_text, "softmax_from_first")
    # the max pass (from 1) loads the whole row, element 0 included, and reduces from 1 only
    assert "if (c < cols) { htam_row[htam_e] = row[c]; if (c >= 1) { mx = fmaxf(mx, htam_row[htam_e]); } }" in body
    assert "for (int c = 1 + threadIdx.x; c < cols; c += 256)" in body  # the wider-row pass keeps its start
    f = facts_of_text(cand(REG, FILE, "shift_keep_old")[0].new_text, "shift_keep_old")
    assert len([a for a in f.accesses if a.pointer == "x" and a.space == "global"
                and any(f.loops[i].var == "htam_e" for i in a.loops)]) == 1  # the row is read from memory once


def test_a_start_that_is_not_a_constant_is_refused_by_the_register_cache(refuse, cand):
    assert "not at a constant index" in refuse(REG, FILE, "shift_from_r")
    assert cand(WARP, FILE, "shift_from_r")  # the lanes start at `start + lane`: any start


def test_online_softmax_merges_a_ternary_max(cand):
    (c,) = cand(ONLINE, FILE, "softmax_ternary")
    assert "const float htam_mn = ((htam_x) > (mx) ? (htam_x) : (mx));" in c.new_text


@pytest.mark.parametrize(("first", "then"), [(WARP, ONLINE), (ONLINE, WARP)])
def test_warp_per_row_and_online_softmax_compose_on_a_ternary_max(first, then):
    """Either order: the warp all-reduce of the ternary max is read back by online softmax (its shuffle loop), and
    the merged loop is split over the lanes by warp per row (one all-reduce of the (max, sum) pairs)."""
    text = candidates(first, FILE, "softmax_ternary")[0].new_text
    model = parse_text(text, "cuda")
    res = registry.propose(then, model, model.kernel("softmax_ternary"))
    assert not isinstance(res, NotApplicable), res.reason
    assert "htam_om" in res[0].new_text and "htam_lane" in res[0].new_text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(cand, tmp_path):
    done = [cand(ONLINE, FILE, "softmax_ternary")[0].new_text]
    done += [cand(tid, FILE, k)[0].new_text for tid in (WARP, REG) for k in KERNELS]
    for i, text in enumerate(done):
        assert_nvcc_compiles(text, tmp_path, f"s{i}.cu")


_MAIN = """
int main() {
    const int shapes[][2] = {{5, 1}, {6, 5}, {6, 33}, {4, 300}, {3, 600}};
    for (const auto &sh : shapes) {
        const int rows = sh[0], cols = sh[1];
        std::vector<ELEM> x((size_t)rows * cols), y((size_t)rows * cols, (ELEM)-7);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                x[(size_t)r * cols + c] = r == 0 ? (ELEM)LOWEST : r == 1 ? (ELEM)2 : (ELEM)((r * 7 + c * 3) % 5) - 2;
        if (NANS && cols > 2) x[(size_t)2 * cols + 1] = x[(size_t)3 * cols] = NAN_OR_ZERO;
        htam_launch(GRID, BLOCK, 1, [&] { KERNEL(x.data(), y.data(), rows, cols); });
        for (ELEM v : y) std::printf("%.9g\\n", (double)v);
    }
    return 0;
}
"""


def _run(text: str, kernel: str, tmp_path, tag: str, nans: bool) -> list[float]:
    la = facts_of_text(text, kernel).launches[0]
    (grid,) = [d.text for d in la.grid]
    ints = kernel.startswith("int")
    main = (_MAIN.replace("GRID", grid).replace("BLOCK", str(la.block_shape[0])).replace("KERNEL", kernel)
            .replace("NANS", "1" if nans else "0").replace("NAN_OR_ZERO", "0" if ints else "NAN")
            .replace("LOWEST", "-1000" if ints else "-INFINITY").replace("ELEM", "int" if ints else "float"))
    (tmp_path / tag).mkdir()
    return run_block_main(text, kernel, main, tmp_path / tag, prelude=PRELUDE)


def _same(a: list[float], b: list[float], exact: bool) -> bool:
    return len(a) == len(b) and all((math.isnan(x) and math.isnan(y)) or x == y or
                                    (not exact and x == pytest.approx(y, rel=1e-5, abs=1e-6)) for x, y in zip(a, b, strict=True))


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("tid", [WARP, REG])
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_rewrite_computes_the_same_on_the_cpu(cand, tid, kernel, tmp_path):
    nans = kernel == "row_range"  # its steps keep their value on a NaN, as fmaxf would not tell apart
    before = _run(fixture_path(FILE).read_text(), kernel, tmp_path, "a", nans)
    after = _run(cand(tid, FILE, kernel)[0].new_text, kernel, tmp_path, "b", nans)
    assert _same(before, after, exact=not kernel.startswith("softmax")) and set(after) != {-7.0}


TOP1 = "row_top1_spellings.cu"


@pytest.mark.parametrize("kernel", ["row_top1_half", "row_argmin_last", "row_peak_u8"])
def test_the_top_ranked_warp_step_of_other_types_is_made(cand, kernel, tmp_path):
    """The spellings tests/memory/test_rank_row_reductions.py ranks warp_per_row first for: the step is made."""
    (c,) = cand(WARP, TOP1, kernel)
    assert "__shfl_xor_sync" in _kernel_text(c.new_text, kernel)
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(c.new_text, tmp_path, f"{kernel}.cu")


_TOP1_MAIN = """
int main() {
    const int shapes[][2] = {{5, 1}, {6, 5}, {5, 33}, {3, 70}};
    for (const auto &sh : shapes) {
        const int rows = sh[0], cols = sh[1];
        std::vector<IN> x((size_t)rows * cols);
        std::vector<OUT> out(rows, (OUT)201);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) x[(size_t)r * cols + c] = r == 1 ? (IN)2 : (IN)((r * 7 + c * 3) % 5);
        htam_launch(GRID, BLOCK, 1, [&] { KERNEL(x.data(), out.data(), rows, cols); });
        for (OUT v : out) std::printf("%.9g\\n", (double)v);
    }
    return 0;
}
"""


def _run_top1(text: str, kernel: str, types: tuple[str, str], tmp: Path) -> list[float]:
    la = facts_of_text(text, kernel).launches[0]
    main = (_TOP1_MAIN.replace("GRID", la.grid[0].text).replace("BLOCK", str(la.block_shape[0]))
            .replace("KERNEL", kernel).replace("IN", types[0]).replace("OUT", types[1]))
    tmp.mkdir()
    return run_block_main(text, kernel, main, tmp)


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize(("kernel", "types"), [("row_argmin_last", ("double", "long")),
                                               ("row_peak_u8", ("unsigned char", "unsigned char"))])
def test_the_warp_rewrite_of_other_types_finds_the_same_on_the_cpu(cand, kernel, types, tmp_path):
    before = _run_top1(fixture_path(TOP1).read_text(), kernel, types, tmp_path / "a")
    after = _run_top1(cand(WARP, TOP1, kernel)[0].new_text, kernel, types, tmp_path / "b")
    assert after == before and 201.0 not in before
