"""Host-code shapes of llm.c-style ``.cu`` programs (written here, in the same shape; no llm.c file is read):
a launch reached through a conditional-compilation group that tree-sitter mis-nests, a kernel and its host
launcher with one name, a templated launcher, and host state that main() sets up before launching."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.cu_eval import Program
from htam_core.harness.cu_launcher import build_shared_library, main_setup_calls, shim_source
from htam_core.harness.cu_main import find_nvcc
from htam_core.harness.cu_preproc import blank_untaken
from htam_core.harness.infer_cuda import infer_cuda_harness

# the block under `if` is the one the preprocessor keeps; tree-sitter nests it under the #if node
MISNESTED = r"""
#include <cuda_runtime.h>
__global__ void scale_kernel1(float* out, const float* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { out[i] = 2.0f * inp[i]; }
}
void scale1(float* out, const float* inp, int N, int block_size) {
    scale_kernel1<<<(N + block_size - 1) / block_size, block_size>>>(out, inp, N);
}
int main() {
    int N = 1 << 16;
    int kernel_num = 1;
    float *d_out, *d_inp;
    cudaMalloc(&d_out, N * sizeof(float));
    cudaMalloc(&d_inp, N * sizeof(float));
    int block_sizes[] = {128, 512};
#if defined(ENABLE_BF16) || defined(ENABLE_FP16)
    if (kernel_num < 4) // the half-precision build checks only some versions
#endif
    {
        for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
            int block_size = block_sizes[j];
            scale1(d_out, d_inp, N, block_size);
        }
    }
    return 0;
}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_a_launch_under_a_misnested_if_group_is_reached(tmp_path: Path) -> None:
    h = infer_cuda_harness(_write(tmp_path, "scale.cu", MISNESTED), "scale_kernel1")
    assert h.launcher == "scale1"
    # the loop's first iteration is the launch's own value (the evaluator runs a launch's loop once)
    assert h.sizes == [{"N": 1 << 16, "block_size": 128}]


def test_the_same_group_when_its_condition_holds(tmp_path: Path) -> None:
    # with ENABLE_BF16 defined the `if` is kept: kernel_num = 1 < 4 takes it, so the launch is still reached
    h = infer_cuda_harness(_write(tmp_path, "scale.cu", "#define ENABLE_BF16\n" + MISNESTED), "scale_kernel1")
    assert h.launcher == "scale1" and h.sizes[0]["block_size"] == 128


def _blank(src: str, macros: dict[str, str] | None = None) -> str:
    m = macros or {}
    prog = Program("")

    def evaluate(expr: str) -> int | float | None:
        return prog._pp_evaluate(expr)  # the host evaluator's own arithmetic

    out = blank_untaken(src.encode(), lambda n: n in m, lambda n: m.get(n) or None, evaluate).decode()
    assert len(out) == len(src) and out.count("\n") == src.count("\n")  # offsets and lines are kept
    return out


def test_blank_untaken_decides_what_it_can_and_leaves_the_rest() -> None:
    src = ("#define A 2\n#if A > 1 && !defined(B)\nkeep1;\n#else\ndrop1;\n#endif\n"
           "#ifdef B\ndrop2;\n#elif defined(C)\ndrop3;\n#else\nkeep2;\n#endif\n"
           "#if CUDART_VERSION >= 12000\nunknown1;\n#else\nunknown2;\n#endif\n"
           "#undef A\n#ifdef A\ndrop4;\n#endif\n")
    out = _blank(src)
    for kept in ("keep1;", "keep2;", "unknown1;", "unknown2;", "#if CUDART_VERSION", "#define A 2"):
        assert kept in out
    for dropped in ("drop1", "drop2", "drop3", "drop4", "#ifdef B", "#else\nkeep2"):
        assert dropped not in out
    assert "keep2;" in _blank(src, {}) and "drop2;" in _blank(src, {"B": "1"})


LAUNCHERS = r"""
#include <cuda_runtime.h>
#include <stdlib.h>
#define LIB_FAST_MODE 1
#define LIB_SLOW_MODE 0
int num_sms = 0;
int mode = 0;
cudaDeviceProp prop;
void setup() { cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); num_sms = p.multiProcessorCount; }
__global__ void gelu1(float* out, const float* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { out[i] = inp[i] > 0.0f ? inp[i] : 0.0f; }
}
void gelu1(float* out, const float* inp, int N, const int block_size) {
    gelu1<<<(N + block_size - 1) / block_size, block_size>>>(out, inp, N);
}
template <typename T>
__global__ void norm_kernel(float* out, const T* x, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) { atomicAdd(out, (float)x[i] * (float)x[i]); }
}
template <typename T>
void norm1(float* out, const T* x, size_t n, int block_size) {
    norm_kernel<<<num_sms > 0 ? num_sms : 1, block_size>>>(out, x, n);
}
int main() {
    setup();
    int dev = 0;
    cudaSetDevice(dev);
    cudaGetDeviceProperties(&prop, dev);
    int fast = prop.major >= 8 ? 1 : 0;
    mode = fast ? LIB_FAST_MODE : LIB_SLOW_MODE;
    srand(0);
    int k = atoi("3");
    cudaSetDevice(k);
    int N = 1024;
    float *d_out, *d_inp;
    cudaMalloc(&d_out, N * sizeof(float));
    cudaMalloc(&d_inp, N * sizeof(float));
    cudaMemset(d_out, 0, N * sizeof(float));
    gelu1(d_out, d_inp, N, 256);
    norm1(d_out, d_inp, (size_t)N, 256);
    cudaDeviceSynchronize();
    return 0;
}
"""


def test_the_shim_calls_the_host_overload_not_the_kernel_of_the_same_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "gelu.cu", LAUNCHERS)
    shim = shim_source(path, "gelu1", [None, None, "int32", "int32"])
    assert "gelu1(HtamAnyPtr{a0}, HtamAnyPtr{a1}, a2, a3);" in shim  # 4 arguments: the host launcher


def test_a_templated_launcher_gets_typed_pointers(tmp_path: Path) -> None:
    path = _write(tmp_path, "norm.cu", LAUNCHERS)
    shim = shim_source(path, "norm1", [None, None, "int64", "int32"], [ "float32", "float32", None, None])
    # `out` is float* (no template parameter): any pointer converts; `x` is const T*: T must be deducible
    assert "norm1(HtamAnyPtr{a0}, static_cast<float*>(a1), a2, a3);" in shim
    extra = shim_source(path, "gelu1", [None, None, "int32", "int32", "int32"])
    assert "int a4)" in extra and "a3);" in extra  # an input beyond the parameters is accepted, not passed


def test_main_setup_is_replayed_once_before_the_launch(tmp_path: Path) -> None:
    path = _write(tmp_path, "norm.cu", LAUNCHERS)
    calls = main_setup_calls(Program(path.read_text()))
    # kept: the setup call, the device calls and what they read, an assignment of library constants to a
    # global; left out: srand and atoi (not setup calls) and what reads k, the allocations, and everything
    # from the first launcher call on
    assert calls == ["setup();", "int dev = 0;", "cudaSetDevice(dev);", "cudaGetDeviceProperties(&prop, dev);",
                     "int fast = prop.major >= 8 ? 1 : 0;", "mode = fast ? LIB_FAST_MODE : LIB_SLOW_MODE;",
                     "int N = 1024;", "float *d_out, *d_inp;"]
    shim = shim_source(path, "norm1", [None, None, "int64", "int32"], ["float32", "float32", None, None])
    assert "htam_setup_done = true; setup(); int dev = 0;" in shim and "{ htam_setup(); norm1(" in shim


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found")
def test_the_shims_build_with_nvcc(tmp_path: Path) -> None:
    """Needs nvcc, not a GPU: both shims compile and link as shared libraries for sm_90."""
    path = _write(tmp_path, "both.cu", LAUNCHERS)
    for launcher, dtypes, pointees in (("gelu1", [None, None, "int32", "int32"], None),
                                       ("norm1", [None, None, "int64", "int32"], ["float32", "float32", None, None])):
        shim = tmp_path / f"shim_{launcher}.cu"
        shim.write_text(shim_source(path, launcher, dtypes, pointees), encoding="utf-8")
        assert build_shared_library(shim, "sm_90").is_file()
