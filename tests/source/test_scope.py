"""The kernel and its launcher (htam_core.source.scope): what guards and labels may look at."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from htam_core.source.scope import kernel_scope

HONEST = Path(__file__).resolve().parents[1] / "fixtures" / "honest"
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_python_main_block_and_self_test_helpers_are_out_kernel_and_launcher_in() -> None:
    text = (HONEST / "rmsnorm_fp32.py").read_text()
    scope = kernel_scope(text, "python")
    assert [e.what for e in scope.excluded] == ["function _reference (not the kernel or its launcher)",
                                                "the __main__ block"]
    assert scope.covers(_line(text, "def rmsnorm_kernel")) and scope.covers(_line(text, "rmsnorm_kernel[("))
    assert scope.covers(_line(text, "import triton"))  # module-level code runs on import
    assert not scope.covers(_line(text, "torch.bfloat16"))
    assert not scope.covers(_line(text, "xf = x.float()"))


def test_callers_of_a_launcher_are_the_launcher_chain_but_drivers_are_not() -> None:
    text = textwrap.dedent("""
        import triton

        @triton.jit
        def k(x_ptr):
            pass

        def _launch(x):
            k[(1,)](x)

        def public_api(x):
            return _launch(x)

        def bench_public_api(x):
            return public_api(x)

        def main():
            public_api(None)

        def unrelated():
            return 1
        """)
    scope = kernel_scope(text, "python")
    assert scope.covers(_line(text, "def _launch")) and scope.covers(_line(text, "def public_api"))
    out = {e.what for e in scope.excluded}
    assert out == {"function bench_public_api (a driver)", "function main (a driver)",
                   "function unrelated (not the kernel or its launcher)"}


def test_model_classes_and_extension_builders_anchor_the_scope() -> None:
    text = textwrap.dedent('''
        import torch
        from torch.utils.cpp_extension import load_inline

        ext = load_inline(name="e", cpp_sources="", cuda_sources=SRC, functions=["f"])

        def helper(x):
            return ext.f(x)

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return helper(x)

        def get_inputs():
            return [torch.randn(4)]
        ''')
    scope = kernel_scope(text, "python")
    assert scope.covers(_line(text, "def helper")) and scope.covers(_line(text, "class ModelNew"))
    assert [e.what for e in scope.excluded] == ["function get_inputs (not the kernel or its launcher)"]


def test_cuda_main_is_out_launchers_bindings_and_helpers_are_in() -> None:
    text = (HONEST / "scale_with_main.cu").read_text()
    scope = kernel_scope(text, "cuda")
    assert [e.what for e in scope.excluded] == ["main()"]
    assert scope.covers(_line(text, "__global__")) and scope.covers(_line(text, "void launch_scale"))
    assert scope.covers(_line(text, "#define CUDA_CHECK"))
    assert not scope.covers(_line(text, "cudaStreamCreateWithFlags"))
    ext = textwrap.dedent("""
        #include <torch/extension.h>
        __device__ float sq(float v) { return v * v; }
        __global__ void k(const float* x, float* y) { y[0] = sq(x[0]); }
        static void check(const torch::Tensor& t) { TORCH_CHECK(t.is_cuda()); }
        torch::Tensor run(torch::Tensor x) { check(x); auto y = torch::empty_like(x);
            k<<<1, 1>>>(x.data_ptr<float>(), y.data_ptr<float>()); return y; }
        torch::Tensor wrap(torch::Tensor x) { return run(x); }
        void debug_dump() { printf("x"); }
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("wrap", &wrap); }
        """)
    scope = kernel_scope(ext, "cuda")
    assert [e.what for e in scope.excluded] == ["function debug_dump (not the kernel or its launcher)"]


def test_templates_in_namespaces_and_corpus_files_get_a_scope() -> None:
    text = (CORPUS / "bias_gelu_templates.cu").read_text()
    scope = kernel_scope(text, "cuda")
    # the host reference main() checks against is not the kernel either
    assert [e.what for e in scope.excluded] == ["function gelu_ref (not the kernel or its launcher)", "main()"]
    assert scope.covers(_line(text, "void launch_bias_gelu")) and scope.covers(_line(text, "bias_grad_colsum"))
    for p in sorted(CORPUS.iterdir()):
        if p.suffix in (".py", ".cu"):
            kernel_scope(p.read_text(), "cuda" if p.suffix == ".cu" else "python")  # never raises


def test_unknown_language_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no kernel scope for 'rust'"):
        kernel_scope("fn main() {}", "rust")  # type: ignore[arg-type]
