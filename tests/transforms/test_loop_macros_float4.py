"""Grid-stride loops written through statement macros (ATen's ``CUDA_KERNEL_LOOP``, one-variable ``KERNEL_LOOP``
forms, a macro with a type argument) and PyTorch's two-variable header written out: the analysis reads the loop
(a grid-stride loop over the index), the float4 step is offered and made, the candidate compiles with nvcc and
computes what the kernel computes (CPU emulation, :mod:`cpu_emulation`). Also: a function-like launch-bounds
macro between ``void`` and the kernel's name is no parse problem."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_main

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.macro_loops import expanded_view, loop_macro_text
from htam_core.source.analysis.macros import macro_table
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

ATEN = """#include <cstdint>
#define MY_LB_1(n) __launch_bounds__((n))
#define LOOP_TYPE(i, n, index_type) \\
    int64_t _i_n_d_e_x = blockIdx.x * blockDim.x + threadIdx.x; \\
    for (index_type i = _i_n_d_e_x; _i_n_d_e_x < (n); _i_n_d_e_x += blockDim.x * gridDim.x, i = _i_n_d_e_x)
#define KLOOP(i, n) LOOP_TYPE(i, n, int)
"""
ONE = """#define KLOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
"""
TYPED = """#define KLOOP_T(T, i, n) \\
    for (T i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define KLOOP(i, n) KLOOP_T(long long, i, n)
"""
BODY = """    KLOOP(index, n) {
        float x = self[index];
        float g = grad[index];
        out[index] = x > 0.f ? g : g * slope;
    }
"""
HEAD = "__global__ void {lb}leaky(int n, const float* grad, const float* self, float* out, float slope) {{\n"
WRITTEN = """    int64_t _i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t index = _i; _i < n; _i += blockDim.x * gridDim.x, index = _i) {
        float x = self[index];
        float g = grad[index];
        out[index] = x > 0.f ? g : g * slope;
    }
"""
CASES = {
    "aten_two_variable_macro": ATEN + HEAD.format(lb="MY_LB_1(256)\n") + BODY + "}\n",
    "one_variable_macro": ONE + HEAD.format(lb="") + BODY + "}\n",
    "macro_with_type_argument": TYPED + HEAD.format(lb="") + BODY + "}\n",
    "written_out_two_variable": "#include <cstdint>\n" + HEAD.format(lb="") + WRITTEN + "}\n",
    "one_statement_body": ONE + HEAD.format(lb="") + "    KLOOP(i, n) out[i] = slope * self[i] + grad[i];\n}\n",
}
LAUNCH = "int main() { leaky<<<4, 256>>>(0, 0, 0, 0, 0.f); return 0; }\n"
EMU = """
int main() {
    const int n = 1031;
    std::vector<float> g(n), x(n), y(n, -7.f);
    for (int i = 0; i < n; ++i) { x[i] = (float)((i * 37) % 201) - 100.f; g[i] = (float)(i % 17) * 0.25f; }
    HTAM_LAUNCH(3, 1, 64, 1, leaky(n, g.data(), x.data(), y.data(), 0.01f));
    for (float v : y) std::printf("%.9g\\n", v);
    return 0;
}
"""


def _kernel(text: str):
    model = parse_text(text, "cuda")
    return model, model.kernel("leaky")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_loop_is_a_grid_stride_loop_over_the_index(name: str) -> None:
    model, k = _kernel(CASES[name] + LAUNCH)
    facts = analyze(model, k)
    loops = [lf for lf in facts.loops if lf.kind == "for"]
    assert len(loops) == 1, facts.loops
    lf = loops[0]
    assert lf.var in ("index", "i") and lf.cmp == "<" and lf.update == "+" and lf.grid_stride
    assert {a.pointer for a in facts.accesses if a.space == "global"} == {"grad", "self", "out"}
    assert all(a.stride(lf.var) == 1 for a in facts.accesses if a.space == "global")
    assert [(g.dim, g.var) for g in facts.grid_stride_loops] == [("x", lf.var)]
    assert facts.launch_free_dims == ("x",)


def _made(name: str) -> str:
    model, k = _kernel(CASES[name] + LAUNCH)
    res = registry.propose("cuda.vectorize_float4", model, k)
    assert isinstance(res, list), res.reason
    assert "float4" in res[0].new_text
    return res[0].new_text


@pytest.mark.parametrize("name", sorted(CASES))
def test_float4_made_and_compiles(name: str, tmp_path: Path) -> None:
    new = _made(name)
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    assert_compiles(new, flags=("-arch=sm_90",), tmp=tmp_path, context=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float4_computes_the_same(name: str, tmp_path: Path) -> None:
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text = CASES[name] + LAUNCH
    new = _made(name)
    defines = "#define __launch_bounds__(...)\n" + "".join(line + "\n" for line in _define_lines(text))
    before = run_main(text, "leaky", EMU, tmp_path, prelude=defines)
    after = run_main(new, "leaky", EMU, tmp_path, prelude=defines)
    assert before == after and len(before) == 1031 and -7.0 not in before


def _define_lines(text: str) -> list[str]:
    """The ``#define`` lines of ``text``, continuation lines joined (the emulation compiles the kernel alone)."""
    return [line for line in text.replace("\\\n", " ").splitlines() if line.lstrip().startswith("#define")]


def test_other_steps_leave_the_macro_as_written() -> None:
    model, k = _kernel(CASES["aten_two_variable_macro"] + LAUNCH)
    res = registry.propose("cuda.restrict_const", model, k)
    assert isinstance(res, list), res.reason
    assert "KLOOP(index, n) {" in res[0].new_text and "_i_n_d_e_x =" not in res[0].new_text.split("leaky(")[1]


def test_function_like_launch_bounds_macro_is_no_parse_problem() -> None:
    model, k = _kernel(CASES["aten_two_variable_macro"] + LAUNCH)
    assert not k.incomplete and not model.problems, model.problems
    assert analyze(model, k).loops


def test_a_body_that_moves_the_counter_is_not_a_grid_stride_loop() -> None:
    text = CASES["written_out_two_variable"].replace("out[index] =", "_i += 1; out[index] =") + LAUNCH
    model, k = _kernel(text)
    facts = analyze(model, k)
    assert not any(lf.grid_stride for lf in facts.loops) and not facts.grid_stride_loops


def test_two_uses_stay_as_written_under_a_step_that_edits_elsewhere() -> None:
    text = ONE + HEAD.format(lb="") + BODY + "    KLOOP(j, n) out[j] += grad[j];\n}\n" + LAUNCH
    model, k = _kernel(text)
    res = registry.propose("cuda.restrict_const", model, k)
    assert isinstance(res, list), res.reason
    new = res[0].new_text
    assert "KLOOP(index, n) {" in new and "KLOOP(j, n) out[j] += grad[j];" in new and "__restrict__" in new
    assert new.count("blockIdx.x") == text.count("blockIdx.x")


def test_statement_macros_that_open_no_loop_stay_opaque() -> None:
    text = ("#define SET(p, i) do { (p)[i] = 0.f; } while (0)\n#define BLOCK(i) for (int i = 0; i < 4; ++i) {\n"
            + HEAD.format(lb="") + "    SET(out, threadIdx.x);\n}\n" + LAUNCH)
    model, k = _kernel(text)
    table = macro_table(text.encode())
    assert loop_macro_text(table, "SET", ["out", "0"], len(text)) is None
    assert loop_macro_text(table, "BLOCK", ["i"], len(text)) is None  # the brace is not the loop's header
    assert expanded_view(model, k) is None
