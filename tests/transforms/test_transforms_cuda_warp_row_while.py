"""cuda.warp_per_row (and cuda.block_per_row) on a thread-per-row ``while`` loop: ``T j = S; while (j < n) { ...;
++j; }`` is the counted loop ``for (T j = S; j < n; ++j)``, so the lanes start at ``S + lane`` and step by 32.
Several spellings of the step (``++j``, ``j++``, ``j += 1``, ``j = j + 1``) and of the reduction; the CPU runs (one
host thread per CUDA thread, warp shuffles emulated) check the results are the one thread's. Kernels written for
these tests."""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.transforms.cpu_emulation import compiler, run_block_main

_SRC = """
__global__ void rw(const float *x, float *out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = INIT;
        int c = START;
        while (c < cols) { STEP; INC; }
        out[r] = acc;
    }
}
void run(const float *x, float *o, int rows, int cols) { rw<<<(rows + 127) / 128, 128>>>(x, o, rows, cols); }
"""
_MAX = ("x[r * cols]", "1", "acc = fmaxf(acc, x[r * cols + c])")
_SUM = ("0.0f", "0", "acc += x[r * cols + c]")
CASES = [(_MAX, "++c"), (_MAX, "c++"), (_SUM, "c += 1"), (_SUM, "c = c + 1"), (("2.0f", "0", "acc += x[r * cols + c]"), "c++")]


def _text(case: tuple[tuple[str, str, str], str]) -> str:
    (init, start, step), inc = case
    return _SRC.replace("INIT", init).replace("START", start).replace("STEP", step).replace("INC", inc)


def _propose(text: str, tid: str = "cuda.warp_per_row"):
    model = parse_text(text, "cuda", "/tmp/row_while.cu")
    return registry.propose(tid, model, model.kernel("rw"))


@pytest.mark.parametrize("case", CASES)
def test_each_spelling_is_split_over_the_lanes(case):
    cs = _propose(_text(case))
    assert not isinstance(cs, NotApplicable), cs.reason
    (c,) = cs
    start = case[0][1]
    assert (f"int c = ({start}) + htam_lane;" if start != "0" else "int c = htam_lane;") in c.new_text
    assert "c += 32; }" in c.new_text and "__shfl_xor_sync" in c.new_text
    assert "if (htam_lane == 0) { out[r] = acc; }" in c.new_text
    assert "rw<<<((rows + 127) / 128) * 32, 128>>>" in c.new_text


_MATH = "#include <cmath>\nusing std::fmaxf;"
_MAIN = """
int main() {
    const int rows = 37, cols = 75;
    std::vector<float> x(rows * cols), o(rows, 0.f);
    for (int k = 0; k < rows * cols; ++k) x[k] = (float)((k * 29 + k / 11) % 97) * 0.25f - 7.0f;
    htam_launch((rows + 127) / 128 * GROW, 128, 1, [&] { rw(x.data(), o.data(), rows, cols); });
    for (float v : o) std::printf("%.4f\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("case", CASES[::2])
def test_the_lanes_give_the_one_threads_result_on_the_cpu(case, tmp_path):
    text = _text(case)
    want = run_block_main(text, "rw", _MAIN.replace("GROW", "1"), tmp_path, prelude=_MATH)
    assert len(set(want)) >= 5
    (c,) = _propose(text)
    got = run_block_main(c.new_text, "rw", _MAIN.replace("GROW", "32"), tmp_path, prelude=_MATH)
    assert got == pytest.approx(want, rel=1e-5, abs=1e-3)


@pytest.mark.parametrize(("old", "new", "why"), [
    ("STEP; INC;", "STEP; c += 2;", "does not end its body by stepping c"),
    ("STEP; INC;", "INC; STEP;", "does not end its body by stepping c"),
    ("out[r] = acc;", "out[r] = acc + c;", "c is read after its while loop"),
    ("STEP; INC;", "if (acc > 100.0f) break; STEP; INC;", "leaves early"),
    ("while (c < cols)", "while (c <= cols)", "is not `c < n`"),
])
def test_other_while_loops_are_refused_with_a_reason(old, new, why):
    text = _SRC.replace(old, new).replace("INIT", _SUM[0]).replace("START", "0").replace("STEP", _SUM[2]) \
        .replace("INC", "++c")
    r = _propose(text)
    assert isinstance(r, NotApplicable) and why in r.reason, getattr(r, "reason", r)


def test_a_block_per_row_reads_the_same_while_loop():
    cs = _propose(_text(CASES[0]), "cuda.block_per_row")
    if isinstance(cs, NotApplicable):  # the block-per-row step may refuse for its own reasons, never the loop's
        assert "no loop over the row" not in cs.reason and "while" not in cs.reason, cs.reason
    else:
        assert "c += blockDim.x" in cs[0].new_text or "c += " in cs[0].new_text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_candidate_compiles(tmp_path):
    (c,) = _propose(_text(CASES[2]))
    assert_nvcc_compiles(c.new_text, tmp_path)
