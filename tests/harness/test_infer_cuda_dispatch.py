"""Zero-config CUDA inference through a version dispatch: ``main()`` -> ``run(kernel_num, ...)`` -> ``switch``
-> host launcher, with typedef'd element types, ``#if defined`` branches, block-size arrays and ``powf``
(htam_core.harness.cu_eval, htam_core.harness.infer_cuda), and the link flags of cuBLAS headers
(htam_core.harness.cu_launcher.library_flags). The programs are written here, in the style of a benchmark file
that holds several versions of one kernel. ``PROGRAM`` starts with a blank line on purpose: launch sites were
once looked up by offsets into the root node's text, which starts at the first token (regression)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.cu_eval import Program
from htam_core.harness.cu_launcher import library_flags
from htam_core.harness.infer_cuda import infer_cuda_harness

PROGRAM = r"""
#include <cuda_runtime.h>
#define USE_WIDE
#if defined(USE_HALF)
typedef __half realT;
#elif defined(USE_WIDE)
typedef double realT;
#else
typedef float realT;
#endif

template<class T> T ceil_div(T a, T b) { return (a + b - 1) / b; }

__global__ void scale_kernel1(realT* out, const realT* inp, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = s * inp[i]; }
}

__global__ void scale_kernel2(realT* out, const realT* inp, float s, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) { out[i] = s * inp[i]; }
}

void scale1(realT* out, const realT* inp, float s, int n, int block_size) {
    scale_kernel1<<<ceil_div(n, block_size), block_size>>>(out, inp, s, n);
}

void scale2(realT* out, const realT* inp, float s, int n, int block_size) {
    scale_kernel2<<<132, block_size>>>(out, inp, s, n);
}

void scale(int kernel_num, realT* out, const realT* inp, float s, int B, int C, int block_size) {
    switch (kernel_num) {
        case 1:
            scale1(out, inp, s, B * C, block_size);
            break;
        case 2:
            scale2(out, inp, s, B * C, block_size);
            break;
    }
}

int main(int argc, char** argv) {
    int B = 8;
    int C = 300;
    int kernel_num = KNUM;
    float s = powf(2.0f, 3);
    realT *d_out, *d_inp;
    cudaMalloc(&d_out, B * C * sizeof(realT));
    cudaMalloc(&d_inp, B * C * sizeof(realT));
    int block_sizes[] = {/*32,*/ 64, 128};
    for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
        int block_size = block_sizes[j];
        scale(kernel_num, d_out, d_inp, s, B, C, block_size);
    }
    return 0;
}
"""


def _write(tmp_path: Path, knum: int) -> Path:
    p = tmp_path / f"scale{knum}.cu"
    p.write_text(PROGRAM.replace("KNUM", str(knum)), encoding="utf-8")
    return p


def test_dispatch_reaches_the_selected_version_through_a_switch(tmp_path):
    h = infer_cuda_harness(_write(tmp_path, 1), "scale_kernel1")
    assert h.launcher == "scale1"  # a plain launcher: the launch configuration stays in the code
    ins = {i.name: i for i in h.inputs}
    assert ins["inp"].shape == [2400] and ins["inp"].dtype == "float64"  # realT is double under USE_WIDE
    assert ins["s"].value == 8.0  # powf(2, 3)
    assert ins["n"].value == "n" and h.sizes == [{"n": 2400, "block_size": 64}]  # the commented 32 is skipped
    assert h.outputs == ["out"]


def test_the_switch_selects_the_kernel_asked_for(tmp_path):
    """The program's `kernel_num = 2` selects scale2; asking for scale_kernel1 sets the selector to the case that
    launches it (traced from `scale`'s parameter to main's variable), and says so in a note."""
    h = infer_cuda_harness(_write(tmp_path, 2), "scale_kernel1")
    assert h.launcher == "scale1"
    assert any("`kernel_num` of main() is set to 1" in n for n in h.notes)
    h = infer_cuda_harness(_write(tmp_path, 2), "scale_kernel2")
    assert h.launcher == "scale2"
    assert not any("is set to" in n for n in h.notes)  # the program's own choice: nothing forced


def test_a_case_chosen_by_a_literal_is_not_forced(tmp_path):
    p = tmp_path / "lit.cu"
    p.write_text(PROGRAM.replace("scale(kernel_num, d_out", "scale(2, d_out").replace("KNUM", "2"),
                 encoding="utf-8")
    with pytest.raises(HarnessError, match="no call of `scale1` from main\\(\\) reaches"):
        infer_cuda_harness(p, "scale_kernel1")


def test_typedef_follows_the_defined_branch():
    prog = Program("#define A\n#ifdef A\ntypedef float T;\n#else\ntypedef int T;\n#endif\n"
                   "#ifndef A\ntypedef int U;\n#else\nusing U = T;\n#endif\n")
    assert prog.resolve("T") == "float" and prog.resolve("U") == "float"
    nvcc = Program("#ifdef __CUDACC__\ntypedef float V;\n#else\ntypedef int V;\n#endif\n")
    assert nvcc.resolve("V") == "float"  # nvcc's host pass defines __CUDACC__


def test_library_flags_follow_local_headers(tmp_path):
    (tmp_path / "common.h").write_text("#include <cublas_v2.h>\n#include <cublasLt.h>\n", encoding="utf-8")
    main = tmp_path / "k.cu"
    main.write_text('#include "common.h"\n__global__ void k() {}\n', encoding="utf-8")
    assert library_flags(main) == ["-lcublas", "-lcublasLt"]
    plain = tmp_path / "p.cu"
    plain.write_text("#include <cuda_runtime.h>\n", encoding="utf-8")
    assert library_flags(plain) == []
