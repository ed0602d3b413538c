"""The host-code evaluator of an inferred harness reads enumerators as the analysis layer does (one reader:
:meth:`htam_core.source.analysis.constants.ConstEnv.enumerator_value`): a launch configuration or size spelled
``cfg::BLOCK`` of ``namespace cfg { enum { BLOCK = 256 }; }``, ``static_cast<int>(Hist::Threads)`` of an ``enum
class``, ``Cfg::kThreads`` of an enum in a struct, an enumerator of a local header or of ``main()``'s own body.

The kernels are written here for these tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.harness.cu_eval import Program, Scope, parse_expression
from htam_core.harness.infer_cuda import infer_cuda_harness
from tests.support.nvcc_check import assert_compiles

KERNEL = """
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""

#: name -> (declarations before the kernel, the launch's block as written, the block it is)
SPELLINGS = {
    "namespace_anonymous": ("namespace cfg { enum { BLOCK = 256 }; }", "cfg::BLOCK", 256),
    "enum_class_cast": ("enum class Hist : int { Bins = 64, Threads = 128 };",
                        "static_cast<int>(Hist::Threads)", 128),
    "struct_member": ("struct Cfg { enum Sizes { kThreads = 128, kTree = 64 }; };", "Cfg::kThreads", 128),
    "through_enum_name": ("struct Cfg { enum Sizes { kTree = 64, kThreads }; };", "Cfg::Sizes::kThreads", 65),
    "implicit_and_sibling": ("enum { A, B, HALF = 64, FULL = 2 * HALF };", "FULL", 128),
    "value_from_define": ("#define W 32\nnamespace k { enum { BLOCK = 8 * W }; }", "k::BLOCK", 256),
}


def _program(decls: str, block: str, n: str = "1 << 20") -> str:
    return (f"#include <cuda_runtime.h>\n{decls}\n{KERNEL}\nint main() {{\n    int n = {n};\n    float *x, *y;\n"
            "    cudaMalloc(&x, n * sizeof(float));\n    cudaMalloc(&y, n * sizeof(float));\n"
            f"    scale<<<(n + {block} - 1) / ({block}), {block}>>>(x, y, n);\n    cudaDeviceSynchronize();\n"
            "    return 0;\n}\n")


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_a_launch_spelled_with_an_enumerator_is_read(name: str, tmp_path: Path) -> None:
    decls, block, value = SPELLINGS[name]
    path = tmp_path / "k.cu"
    path.write_text(_program(decls, block))
    h = infer_cuda_harness(path, "scale")
    assert h.block == repr((value, 1, 1))
    assert h.grid == repr(((1 << 20) // value + (1 if (1 << 20) % value else 0), 1, 1))


def test_an_enum_of_main_and_one_of_a_header(tmp_path: Path) -> None:
    (tmp_path / "cfg.h").write_text("#pragma once\nnamespace cfg { enum Block { THREADS = 512 }; }\n")
    src = _program('#include "cfg.h"', "cfg::THREADS").replace(
        "int main() {\n", "int main() {\n    enum { ELEMS = 4096 };\n").replace("int n = 1 << 20", "int n = ELEMS")
    path = tmp_path / "k.cu"
    path.write_text(src)
    h = infer_cuda_harness(path, "scale")
    assert (h.grid, h.block) == ("(8, 1, 1)", "(512, 1, 1)")
    assert h.sizes == [{"n": 4096}]


def test_a_local_of_the_same_name_hides_the_enumerator(tmp_path: Path) -> None:
    # a local hides a file-scope enumerator ([basic.scope.block]); the evaluator reads the local first
    src = _program("enum { BLOCK = 256 };", "BLOCK").replace("int main() {\n", "int main() {\n    int BLOCK = 64;\n")
    path = tmp_path / "k.cu"
    path.write_text(src)
    assert infer_cuda_harness(path, "scale").block == "(64, 1, 1)"


def test_an_undefined_name_is_still_named() -> None:
    prog = Program("enum { BLOCK = 256 };\nint main() { return 0; }\n")
    assert prog.ev(parse_expression("BLOCK * 2"), Scope()) == 512
    with pytest.raises(Exception, match="`NOPE` .* is not defined before the launch"):
        prog.ev(parse_expression("NOPE"), Scope())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_programs_are_valid_cuda(name: str, tmp_path: Path) -> None:
    decls, block, _ = SPELLINGS[name]
    assert_compiles(_program(decls, block), tmp=tmp_path, name="k.cu")


# --- conversion intrinsics of constant arguments -----------------------------------------------------------------

AXPY = """#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <typename T>
__global__ void axpy(T alpha, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
}

int main() {
    int n = 1 << 12;
    ELEM *x, *y;
    cudaMalloc(&x, n * sizeof(ELEM));
    cudaMalloc(&y, n * sizeof(ELEM));
    axpy<ELEM><<<(n + 255) / 256, 256>>>(ALPHA, x, y, n);
    cudaDeviceSynchronize();
    return 0;
}
"""

#: name -> (element type, alpha as written, harness dtype of alpha, its value)
CONVERTED = {
    "float2half": ("__half", "__float2half(2.0f)", "float16", 2.0),
    "float2half_rn_rounds": ("__half", "__float2half_rn(0.1f)", "float16", 0.0999755859375),
    "int2half_rn": ("__half", "__int2half_rn(3)", "float16", 3.0),
    "half_constructor": ("__half", "__half(1.5f)", "float16", 1.5),
    "float2bfloat16_rounds": ("__nv_bfloat16", "__float2bfloat16(1.01f)", "bfloat16", 1.0078125),
    "float_kept": ("float", "__half2float(__float2half(0.5f))", "float32", 0.5),
}


@pytest.mark.parametrize("name", sorted(CONVERTED))
def test_a_conversion_intrinsic_of_a_constant_is_evaluated(name: str, tmp_path: Path) -> None:
    elem, alpha, dtype, value = CONVERTED[name]
    path = tmp_path / "k.cu"
    path.write_text(AXPY.replace("ELEM", elem).replace("ALPHA", alpha))
    h = infer_cuda_harness(path, "axpy")
    a = next(i for i in h.inputs if i.name == "alpha")
    assert (a.dtype, a.value) == (dtype, value)


def test_integer_conversions_round_as_named() -> None:
    prog = Program("int main() { return 0; }\n")
    got = [prog.ev(parse_expression(e), Scope()) for e in
           ("__float2int_rn(2.5f)", "__float2int_rn(3.5f)", "__float2int_rz(-2.7f)", "__float2int_rd(-2.2f)",
            "__float2int_ru(2.2f)")]
    assert got == [2, 4, -2, -3, 3]


def test_a_conversion_of_an_unknown_value_names_it() -> None:
    prog = Program("int main() { return 0; }\n")
    with pytest.raises(Exception, match="`nope` .* is not defined"):
        prog.ev(parse_expression("__float2half(nope)"), Scope())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", sorted(CONVERTED))
def test_the_converting_programs_are_valid_cuda(name: str, tmp_path: Path) -> None:
    elem, alpha, _, _ = CONVERTED[name]
    assert_compiles(AXPY.replace("ELEM", elem).replace("ALPHA", alpha), tmp=tmp_path, name="k.cu")


def test_the_analysis_evaluator_folds_the_same_conversions() -> None:
    from htam_core.source.analysis.constants import dict_lookup, evaluate_text

    look = dict_lookup({"K": 3})
    assert evaluate_text("__float2int_rn(2.5f) + K", look) == 5
    assert evaluate_text("__half2float(__float2half(0.1f))", look) == 0.0999755859375


def test_a_bfloat16_scalar_is_passed_as_its_16_bits() -> None:
    np = pytest.importorskip("numpy")
    from htam_core.harness.runner import _np_scalar

    v = _np_scalar("bfloat16", 1.01)
    assert v.dtype == np.uint16 and int(v) == 0x3F81  # 1.0078125, the bfloat16 nearest 1.01
    assert _np_scalar("float16", 2.0).dtype == np.float16
