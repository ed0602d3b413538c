"""``cuda.coarsen_reduction`` when the shared slot receives an expression of the loaded element (``s[tid] = v * v``,
``fabsf(v)``, ``0.5f * (v * v)``, or ``in[i] * in[i]`` in the guarded branch): each thread accumulates that
expression of every element it covers, starting from the identity. A function of the register that is not zero past
the bound (``v + 1.0f``) is refused, and so is a factor that differs between threads.

Every rewrite compiles with nvcc (sm_90) and runs on the CPU (:func:`cpu_emulation.run_block_main`) with the grid its
own launch writes, on ragged sizes and inputs that are multiples of a half (every summation order gives the same
sum), against sums computed here from the same inputs.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import SM_GRID_PRELUDE, compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text

TID = "cuda.coarsen_reduction"
FILE = "coarsen_element_expressions.cu"
SIZES = (1, 127, 1000, 5003)

#: kernel -> the per-element function whose sum it computes
KERNELS = {
    "square_register": lambda x: x * x, "square_if_register": lambda x: x * x,
    "square_in_branch": lambda x: x * x, "abs_register": abs, "half_square": lambda x: 0.5 * x * x,
}


def _kernel_text(text: str, kernel: str) -> str:
    start = text.index(f"void {kernel}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_expression_of_each_element_is_accumulated(cand, kernel):
    cs = cand(TID, FILE, kernel)
    assert [c.params["blocks_per_sm"] for c in cs] == [4, 8]  # an atomic total: the grid sized to the device
    body = _kernel_text(cs[0].new_text, kernel)
    assert "float htam_acc = 0.0f;" in body and "s[tid]" not in body
    assert "in[i]" not in body and "float v" not in body  # the load's statements are gone
    (line,) = [ln.strip() for ln in body.splitlines() if "htam_acc +=" in ln and "htam_j" in ln]
    assert line.count("in[htam_j]") == (1 if kernel == "abs_register" else 2)


def test_the_register_function_is_applied_to_each_loaded_element(cand):
    body = _kernel_text(cand(TID, FILE, "abs_register")[0].new_text, "abs_register")
    assert "htam_acc += fabsf((in[htam_j]));" in body


def test_a_function_not_zero_past_the_bound_is_refused(refuse):
    why = refuse(TID, FILE, "plus_one")
    assert "receives `(0.0f) + 1.0f`, not the identity `0.0f`" in why


def test_a_factor_that_differs_between_threads_is_refused(refuse):
    assert refuse(TID, FILE, "per_thread_factor")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(cand, tmp_path):
    for i, kernel in enumerate(KERNELS):
        assert_nvcc_compiles(cand(TID, FILE, kernel)[0].new_text, tmp_path, f"e{i}.cu")


_MAIN = """
int main() {
    for (unsigned int n : {SIZES}) {
        std::vector<float> x(n), out(1, 0.0f);
        for (unsigned int k = 0; k < n; ++k) x[k] = 0.5f * (float)((k * 7) % 13) - 3.0f;
        htam_launch(GRID, 128, 1, [&] { CALL(x.data(), out.data(), n); });
        std::printf("%.9g\\n", out[0]);
    }
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_rewrite_sums_the_same_on_the_cpu(cand, kernel, tmp_path):
    text = cand(TID, FILE, kernel)[0].new_text
    (grid,) = [d.text for d in facts_of_text(text, kernel).launches[0].grid]
    main = (_MAIN.replace("SIZES", ", ".join(f"{n}u" for n in SIZES)).replace("GRID", grid)
            .replace("CALL", kernel))
    got = run_block_main(text, kernel, main, tmp_path, prelude="#include <cmath>\n" + SM_GRID_PRELUDE)
    f = KERNELS[kernel]
    assert got == [sum(f(0.5 * ((k * 7) % 13) - 3.0) for k in range(n)) for n in SIZES]
