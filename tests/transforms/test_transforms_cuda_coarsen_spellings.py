"""``cuda.coarsen_reduction`` on the spellings of the one-element guarded load (the analysis layer's
:func:`~htam_core.source.analysis.block_load.guarded_block_load`): a conditional either way round, a register zeroed
then loaded under an ``if`` (with and without braces, in a template), a register from a conditional, an ``if``/
``else`` store, the identity stored then overwritten, a register declared then set in both branches, a register of
another type (each element converted to it), a compound guard, a guard that reads the element (a count),
cooperative-groups barriers. A kernel that reads the
load's register or index after the tree is refused (the elements past the smaller grid would not reach that code),
and so are a guard term that differs between blocks and a sum whose value past the bound is not zero.

Each rewrite replaces exactly the load's statements (the register and the original load disappear), compiles with
nvcc (sm_90), and runs on the CPU (:func:`cpu_emulation.run_block_main`, one host thread per CUDA thread) with the
grid its own launch writes, on ragged sizes and inputs that are multiples of a half (every summation order gives the
same sums), against sums computed here from the same inputs.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import SM_GRID_PRELUDE, compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text

TID = "cuda.coarsen_reduction"
FILE = "coarsen_load_spellings.cu"
SIZES = (1, 127, 1000, 5003)

#: kernel -> which elements it sums (the compound guard skips the indices that are 1 modulo 3; the int register
#: truncates each element toward zero)
KERNELS = {
    "ternary_flipped": "all", "braced_register": "all", "template_register": "all",
    "conditional_register": "all", "if_else_store": "all", "identity_then_load": "all", "declared_if_else": "all",
    "int_register": "truncated", "compound_guard": "not_1_mod_3", "cg_if_else": "all", "count_in_guard": "count",
}


def _kernel_text(text: str, kernel: str) -> str:
    """The kernel's definition in ``text`` (from its name to the closing brace at column 0)."""
    start = text.index(f"void {kernel}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_load_becomes_one_grid_stride_accumulation(cand, kernel):
    cs = cand(TID, FILE, kernel)
    # the result goes to one atomic total: a grid sized to the device and the block combine in place of the tree
    assert [(c.params["blocks_per_sm"], c.params["form"]) for c in cs] == [(4, "block_combine"), (8, "block_combine")]
    body = _kernel_text(cs[0].new_text, kernel)
    f = facts_of_text(cs[0].new_text, kernel)
    (gs,) = [lp for lp in f.loops if lp.grid_stride]
    assert [a.name for a in gs.accumulators] == ["htam_acc"]
    assert "s[tid]" not in body and body.count("atomicAdd(out, htam_acc);") == 1
    assert "in[i]" not in body and "float v" not in body and "T v" not in body  # the load's statements are gone


def test_an_element_read_in_the_guard_is_tested_for_each_element(cand):
    body = _kernel_text(cand(TID, FILE, "count_in_guard")[0].new_text, "count_in_guard")
    assert "if (in[htam_j] > 0.0f) htam_acc += 1.0f;" in body


def test_a_compound_guard_guards_each_element(cand):
    body = _kernel_text(cand(TID, FILE, "compound_guard")[0].new_text, "compound_guard")
    assert "if (htam_j % 3 != 1) htam_acc += (float)in[htam_j];" in body  # the load as written, cast kept


def test_each_element_is_converted_to_the_registers_type(cand):
    body = _kernel_text(cand(TID, FILE, "int_register")[0].new_text, "int_register")
    assert "float htam_acc = 0;" in body and "htam_acc += (int)(in[htam_j]);" in body


def test_a_guard_term_that_differs_between_blocks_is_refused(refuse):
    why = refuse(TID, FILE, "block_dependent_guard")
    assert "blockIdx.x % 2 == 0" in why and "differs between threads" in why


def test_a_sum_whose_value_past_the_bound_is_not_zero_is_refused(refuse):
    assert "`1.0f`, is not read as zero" in refuse(TID, FILE, "nonzero_identity")


@pytest.mark.parametrize(("kernel", "name"), [("register_after", "v"), ("index_after", "i")])
def test_per_element_work_after_the_tree_is_refused(refuse, kernel, name):
    assert refuse(TID, FILE, kernel).startswith(f"{name} is read after the load into s")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(cand, tmp_path):
    for i, kernel in enumerate(KERNELS):
        assert_nvcc_compiles(cand(TID, FILE, kernel)[0].new_text, tmp_path, f"c{i}.cu")


_MAIN = """
int main() {
    for (unsigned int n : {SIZES}) {
        std::vector<float> x(n), out(2, 0.0f);
        for (unsigned int k = 0; k < n; ++k) x[k] = 0.5f * (float)((k * 7) % 13) - 3.0f;
        htam_launch(GRID, 128, 1, [&] { CALL(x.data(), out.data(), n); });
        std::printf("%.9g %.9g\\n", out[0], out[1]);
    }
    return 0;
}
"""


def _expected(kind: str) -> list[float]:
    """``[sum, 0]`` for each of :data:`SIZES`, from the inputs the C main writes (``out[1]`` stays 0): halves, so
    every summation order gives the same sum and truncation shows."""
    out: list[float] = []
    for n in SIZES:
        xs = [0.5 * ((k * 7) % 13) - 3.0 for k in range(n) if kind != "not_1_mod_3" or k % 3 != 1]
        if kind == "count":  # the element read in the guard: the positive ones counted
            xs = [1.0 for x in xs if x > 0.0]
        out += [sum(float(int(x)) if kind == "truncated" else x for x in xs), 0.0]
    return out


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", [k for k in KERNELS if k != "cg_if_else"])  # the CPU shim has no cg groups
def test_the_rewrite_sums_the_same_on_the_cpu(cand, kernel, tmp_path):
    text = cand(TID, FILE, kernel)[0].new_text
    (grid,) = [d.text for d in facts_of_text(text, kernel).launches[0].grid]
    call = f"{kernel}<float>" if kernel == "template_register" else kernel
    main = (_MAIN.replace("SIZES", ", ".join(f"{n}u" for n in SIZES)).replace("GRID", grid)
            .replace("CALL", call))
    assert run_block_main(text, kernel, main, tmp_path, prelude=SM_GRID_PRELUDE) == _expected(KERNELS[kernel])
