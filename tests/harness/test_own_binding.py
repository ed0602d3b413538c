"""A kernel whose own file binds its launcher for Python (``PYBIND11_MODULE``, ``TORCH_LIBRARY``) is named as run
through that binding, in one line; and the template's dtype of a buffer whose element type is a template parameter
comes from the type its launch instantiates (``k<float>``, a dispatch macro's ``using scalar_t = ...;``), or is a
guess marked TODO. The extension files are written here, in the style of a torch C++ extension."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.template import write_template
from htam_core.source import parse_text

KERNEL = """#include <torch/extension.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename scalar_t>
__global__ void bias_add_kernel(const scalar_t* x, const scalar_t* bias, scalar_t* out, int64_t rows, int64_t cols) {
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < rows * cols) out[idx] = x[idx] + bias[idx % cols];
}
"""

OWN_MACRO = KERNEL + """
#define ONLY_BF16(TYPE, NAME, ...) [&] {                              \\
        TORCH_CHECK(TYPE == at::kBFloat16, NAME, ": expected bf16");   \\
        using scalar_t = __nv_bfloat16;                                \\
        return __VA_ARGS__(); }()

torch::Tensor bias_add(torch::Tensor x, torch::Tensor bias) {
    auto out = torch::empty_like(x);
    int64_t rows = x.size(0), cols = x.size(1);
    int blocks = (int)((rows * cols + 255) / 256);
    ONLY_BF16(x.scalar_type(), "bias_add", [&] {
        bias_add_kernel<scalar_t><<<blocks, 256>>>(
            reinterpret_cast<const scalar_t*>(x.data_ptr()), reinterpret_cast<const scalar_t*>(bias.data_ptr()),
            reinterpret_cast<scalar_t*>(out.data_ptr()), rows, cols);
    });
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("bias_add", &bias_add); }
"""

# the typedef spelling of the macro, and a TORCH_LIBRARY binding
TYPEDEF_MACRO = OWN_MACRO.replace("using scalar_t = __nv_bfloat16;", "typedef __half scalar_t;").replace(
    'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("bias_add", &bias_add); }',
    'TORCH_LIBRARY(myops, m) { m.def("bias_add", bias_add); }')

AT_DISPATCH = KERNEL + """
torch::Tensor bias_add(torch::Tensor x, torch::Tensor bias) {
    auto out = torch::empty_like(x);
    int64_t rows = x.size(0), cols = x.size(1);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "bias_add", [&] {
        bias_add_kernel<scalar_t><<<(rows * cols + 127) / 128, 128>>>(
            x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), rows, cols);
    });
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("bias_add", &bias_add, "x + bias per row");
}
"""

EXPLICIT = KERNEL + """
void bias_add_half(const __half* x, const __half* b, __half* y, int64_t rows, int64_t cols) {
    bias_add_kernel<__half><<<(rows * cols + 255) / 256, 256>>>(x, b, y, rows, cols);
}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ext.cu"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, binding", [(OWN_MACRO, "PYBIND11_MODULE"), (TYPEDEF_MACRO, "TORCH_LIBRARY"),
                                           (AT_DISPATCH, "PYBIND11_MODULE")])
def test_the_binding_of_the_kernels_own_file_is_named_in_one_line(tmp_path: Path, text: str, binding: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(HarnessError) as ei:
        find_harness(path, "bias_add_kernel")
    e = ei.value
    assert e.missing and "\n" not in e.message.strip()
    assert f"bias_add_kernel is run from ext.cu (its {binding} binding of bias_add)" in e.message, e.message
    assert "[kernel.bias_add_kernel]" in e.message and "no main()" not in e.message


def test_a_file_without_a_binding_still_says_no_main(tmp_path: Path) -> None:
    path = _write(tmp_path, EXPLICIT)
    with pytest.raises(HarnessError) as ei:
        find_harness(path, "bias_add_kernel")
    assert "no main() in ext.cu" in ei.value.message and "binding of" not in ei.value.message


def _dtypes(text: str) -> dict[str, tuple[str, str]]:
    model = parse_text(text, "cuda", "ext.cu")
    table = write_template(model, model.kernel("bias_add_kernel"))
    out = {}
    for name in ("x", "bias", "out"):
        line = next(ln for ln in table.splitlines() if f'name = "{name}"' in ln)
        out[name] = (re.search(r'dtype = "(\w+)"', line).group(1), line.partition("#")[2])
    return out


@pytest.mark.parametrize("text, dtype", [(OWN_MACRO, "bfloat16"), (TYPEDEF_MACRO, "float16")])
def test_the_dispatch_macros_type_gives_the_dtype(text: str, dtype: str) -> None:
    for got, note in _dtypes(text).values():
        assert got == dtype and "element type scalar_t = " in note and "TODO: element" not in note


def test_several_dispatched_types_give_a_todo_that_names_them() -> None:
    for got, note in _dtypes(AT_DISPATCH).values():
        assert got == "float32"
        assert "TODO: element type: scalar_t is a template type launched with double, float" in note


def test_an_explicit_template_argument_gives_the_dtype() -> None:
    model = parse_text(EXPLICIT, "cuda", "ext.cu")
    table = write_template(model, model.kernel("bias_add_kernel"))
    # the launcher table of the host function, or the kernel's own: every tensor is half either way
    tensors = [ln for ln in table.splitlines() if "shape = " in ln]
    assert tensors and all('dtype = "float16"' in ln for ln in tensors), table
