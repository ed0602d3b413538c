"""``cuda.warp_per_row`` on row reductions beyond a sum: an arg-max/arg-min (the pair of the extreme and its index,
all-reduced with the original's tie rule: a strict comparison keeps the first index, ``>=`` the last), a scan that
starts from the row's first element (``best = p[0]; for (c = 1; ...)``; a sum keeps that start on lane 0 only), and
a perfect nest of two loops read as one index range (NCHW per-channel statistics). Refused: an index that is not the
loop variable, a last-index rule whose index starts past the loop, a triangular nest, a nest three deep and a loop
that can leave early (each lane would stop at its own element).

Every rewrite compiles with nvcc (sm_90) and runs on the CPU (:func:`cpu_emulation.run_block_main`, one host thread
per CUDA thread, warp shuffles included) against the original, on ragged shapes (rows shorter than a warp) with many
ties (small integers), a row of ``-inf`` and a row of one repeated value.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text, fixture_path

TID = "cuda.warp_per_row"
FILE = "warp_row_argreduce.cu"
ROW_KERNELS = ["argmax_first", "argmax_from_first", "argmax_last", "argmin_flipped", "max_from_first",
               "sum_from_first"]


def _kernel_text(text: str, kernel: str) -> str:
    start = text.index(f"void {kernel}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize(("kernel", "test"), [
    ("argmax_first", "htam_ov > best || (htam_ov == best && htam_oi < bi)"),
    ("argmax_from_first", "htam_ov > best || (htam_ov == best && htam_oi < bi)"),
    ("argmax_last", "htam_ov > best || (htam_ov == best && htam_oi > bi)"),
    ("argmin_flipped", "htam_ov < lo || (htam_ov == lo && htam_oi < at)"),
])
def test_an_arg_reduction_all_reduces_the_pair_with_its_tie_rule(cand, kernel, test):
    (c,) = cand(TID, FILE, kernel)
    body = _kernel_text(c.new_text, kernel)
    assert test in body and body.count("__shfl_xor_sync") == 2
    assert c.params["reduced"][0]["op"].startswith("argmin" if kernel == "argmin_flipped" else "argmax")


def test_the_pair_keeps_the_declared_types(cand):
    body = _kernel_text(cand(TID, FILE, "argmax_last")[0].new_text, "argmax_last")
    assert "const float htam_ov = " in body and "const long htam_oi = " in body


def test_a_scan_from_the_first_element_starts_the_lanes_after_it(cand):
    body = _kernel_text(cand(TID, FILE, "argmax_from_first")[0].new_text, "argmax_from_first")
    assert "for (int c = (1) + htam_lane; c < cols; c += 32)" in body and "float best = p[0];" in body


def test_a_sum_from_the_first_element_keeps_it_on_lane_0(cand):
    body = _kernel_text(cand(TID, FILE, "sum_from_first")[0].new_text, "sum_from_first")
    assert "float s = htam_lane == 0 ? (x[(size_t)r * cols]) : (float)0;" in body


def test_a_perfect_nest_becomes_one_index_over_the_lanes(cand):
    (c,) = cand(TID, FILE, "channel_stats")
    body = _kernel_text(c.new_text, "channel_stats")
    assert body.count("htam_f += 32") == 2 and "for (int n" not in body and "for (int i" not in body
    assert "const int n = (int)htam_q;" in body and "const int i = (int)htam_r;" in body
    assert "htam_q = htam_f / htam_b" in body and "htam_q += htam_dq + (htam_r >= htam_b)" in body  # divided once
    assert [r["name"] for r in c.params["reduced"]] == ["s", "q"]


@pytest.mark.parametrize(("kernel", "needle"), [
    ("argmax_offset_index", "keeps bi = `cols - 1 - c`, not its own variable c"),
    ("argmax_last_from_end", "starts at `cols`, which is not a number at most the loop's start"),
    ("triangular_nest", "the inner loop on line 130 depends on a"),
    ("nest_three_deep", "nest more than two deep"),
    ("sum_until_negative", "can leave early (break, return or goto)"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, FILE, kernel)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(cand, tmp_path):
    for i, kernel in enumerate([*ROW_KERNELS, "channel_stats"]):
        assert_nvcc_compiles(cand(TID, FILE, kernel)[0].new_text, tmp_path, f"w{i}.cu")


_ROWS_MAIN = """
int main() {
    const int shapes[][2] = {{5, 1}, {9, 5}, {7, 33}, {6, 70}};
    for (const auto &sh : shapes) {
        const int rows = sh[0], cols = sh[1];
        std::vector<float> x((size_t)rows * cols), out(rows, -7.0f);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                x[(size_t)r * cols + c] = r == 0 ? -INFINITY : r == 1 ? 2.0f : (float)((r * 7 + c * 3) % 5);
        htam_launch(GRID, 128, 1, [&] { KERNEL(x.data(), out.data(), rows, cols); });
        for (float v : out) std::printf("%.9g\\n", v);
    }
    return 0;
}
"""


def _run(text: str, kernel: str, main: str, tmp_path, tag: str) -> list[float]:
    (grid,) = [d.text for d in facts_of_text(text, kernel).launches[0].grid]
    (tmp_path / tag).mkdir()
    return run_block_main(text, kernel, main.replace("GRID", grid).replace("KERNEL", kernel), tmp_path / tag,
                          prelude="#include <cmath>")


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", ROW_KERNELS)
def test_the_rewrite_finds_the_same_on_the_cpu(cand, kernel, tmp_path):
    before = _run(fixture_path(FILE).read_text(), kernel, _ROWS_MAIN, tmp_path, "a")
    after = _run(cand(TID, FILE, kernel)[0].new_text, kernel, _ROWS_MAIN, tmp_path, "b")
    assert after == before and -7.0 not in after  # every row written, the same index on every tie


def test_the_tie_rules_are_those_of_the_fixture(tmp_path):
    """The original kernels themselves: first and last index of the maximum on the row of one repeated value."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text = fixture_path(FILE).read_text()
    first = _run(text, "argmax_first", _ROWS_MAIN, tmp_path, "f")
    last = _run(text, "argmax_last", _ROWS_MAIN, tmp_path, "l")
    assert first[5 + 9 + 1] == 0.0 and last[5 + 9 + 1] == 32.0  # row 1 of the 7 x 33 shape: all 2.0


_STATS_MAIN = """
int main() {
    const int shapes[][3] = {{2, 3, 5}, {3, 2, 40}, {1, 4, 1}, {4, 1, 70}};
    for (const auto &sh : shapes) {
        const int N = sh[0], C = sh[1], HW = sh[2];
        std::vector<float> x((size_t)N * C * HW), out(2 * C, -7.0f);
        for (size_t k = 0; k < x.size(); ++k) x[k] = (float)((k * 7) % 11) - 5.0f;
        htam_launch(GRID, 64, 1, [&] { KERNEL(x.data(), out.data(), N, C, HW); });
        for (float v : out) std::printf("%.9g\\n", v);
    }
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
def test_the_flattened_nest_gives_the_same_statistics_on_the_cpu(cand, tmp_path):
    before = _run(fixture_path(FILE).read_text(), "channel_stats", _STATS_MAIN, tmp_path, "a")
    after = _run(cand(TID, FILE, "channel_stats")[0].new_text, "channel_stats", _STATS_MAIN, tmp_path, "b")
    assert -7.0 not in after and after == pytest.approx(before, rel=1e-5, abs=1e-4)
