"""Object-like macros that expand to CUDA kernel qualifiers (``#define GLOBAL __global__``, ``#define LB
__launch_bounds__(256)``): the kernels are found and no parse problem is reported for code nvcc accepts."""

from __future__ import annotations

import shutil

import pytest

from htam_core.source.analysis.launch_bounds import launch_bounds
from htam_core.source.analysis.unit import cuda_source
from htam_core.source.api import parse_text
from htam_core.source.preproc import kernel_macros, qualifier_view
from tests.support.nvcc_check import assert_compiles

DEFINES = """#define GLOBAL __global__
#define KERNEL_GLOBAL __global__
#define LB256 __launch_bounds__(256)
#define KLB __global__ __launch_bounds__(128, 2)
#define DEV __device__
#define DFI __device__ __forceinline__
#define R __restrict__
"""

#: (header of a kernel, its launch bounds or None): spellings of a kernel declared through qualifier macros
HEADERS = [
    ("GLOBAL void", None),
    ("GLOBAL\nvoid", None),
    ("GLOBAL static void", None),
    ("KERNEL_GLOBAL void", None),
    ("GLOBAL LB256 void", 256),
    ("LB256 GLOBAL void", 256),
    ("KLB void", 128),
    ("template <typename T> GLOBAL void", None),
]


def _unit(header: str) -> str:
    call = "k<float><<<1, 128>>>(a, b, n)" if header.startswith("template") else "k<<<1, 128>>>(a, b, n)"
    elem = "T" if header.startswith("template") else "float"
    return (DEFINES + "DFI float twice(float v) { return 2.0f * v; }\n"
            + f"{header} k(const {elem}* R a, {elem}* R b, int n)\n"
            + "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) b[i] = twice(a[i]);\n}\n"
            + f"void run(const float* a, float* b, int n) {{ {call}; }}\n")


@pytest.mark.parametrize(("header", "bound"), HEADERS)
def test_kernel_macro_spellings_parse_without_problems(header: str, bound: int | None) -> None:
    model = parse_text(_unit(header), "cuda", "k.cu")
    assert model.problems == []
    assert [k.name for k in model.kernels] == ["k"]
    k = model.kernel("k")
    assert [p.name for p in k.params] == ["a", "b", "n"]
    assert len(k.launch_sites) == 1
    assert [f.name for f in model.device_functions] == ["twice"]
    lb = launch_bounds(cuda_source(model, k))  # type: ignore[arg-type]
    assert (lb.max_threads if lb is not None else None) == bound


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_spellings_are_valid_cuda(tmp_path) -> None:
    for n, (header, _) in enumerate(HEADERS):
        assert_compiles(_unit(header), tmp=tmp_path, name=f"k{n}.cu", context=header)


def test_kernel_macros_are_read_and_viewed_at_equal_length() -> None:
    src = (DEFINES + "#define KERNEL __global__ void\nGLOBAL void k(float* R p) {}\nKERNEL_GLOBAL void q() {}\n").encode()
    found = kernel_macros(src)
    assert set(found) == {"GLOBAL", "KERNEL_GLOBAL", "LB256", "KLB"}  # KERNEL names a type: read as the type
    view = qualifier_view(src)
    assert len(view) == len(src) and view.count(b"\n") == src.count(b"\n")
    assert b"\n       void k(" in view and b"\n__global__    void q(" in view


def test_a_real_parse_problem_is_still_reported() -> None:
    model = parse_text(_unit("GLOBAL void").replace("int i =", "int i = ;"), "cuda", "k.cu")
    assert model.problems and all("void" not in p.what for p in model.problems)
