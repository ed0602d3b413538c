"""The row scan step's description says that sums change order only for a floating running value: a concrete
``float``/``double``, or a type template parameter some launch instantiates with a floating type; an integer one
(``int64_t`` bound at the launch) is exact and gets no such note; a template parameter no launch binds gets the
note on that condition.

The kernels are written here for these tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.source import parse_text
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

KERNEL = """#include <cstdint>
template <typename I>
__global__ void offsets(const int* cnt, I* off, int nseg, int len) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nseg) return;
    I total = 0;
    for (int k = 0; k < len; k++) {
        off[(I)r * len + k] = total;
        total += cnt[(I)r * len + k];
    }
}
"""
LAUNCH = """
void run(const int* c, ELEM* o, int nseg, int len) {
    offsets<ELEM><<<(nseg + 127) / 128, 128>>>(c, o, nseg, len);
}
"""
CONCRETE = """
__global__ void cumsum(const float* x, float* y, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float run = 0.f;
        for (int k = 0; k < cols; ++k) {
            run += x[(long long)row * cols + k];
            y[(long long)row * cols + k] = run;
        }
    }
}
void run(const float* x, float* y, int rows, int cols) { cumsum<<<(rows + 127) / 128, 128>>>(x, y, rows, cols); }
"""


def _description(src: str) -> str:
    model = parse_text(src, "cuda", "k.cu")
    r = registry.get("cuda.row_scan").propose(model, model.kernels[0], None)
    assert isinstance(r, list), getattr(r, "reason", r)
    return r[0].description


@pytest.mark.parametrize("elem", ["int64_t", "long long", "unsigned"])
def test_an_integer_instantiation_gets_no_float_note(elem: str) -> None:
    d = _description(KERNEL + LAUNCH.replace("ELEM", elem))
    assert "change order" not in d and "float" not in d, d


@pytest.mark.parametrize("elem", ["float", "double"])
def test_a_floating_instantiation_gets_the_note(elem: str) -> None:
    d = _description(KERNEL.replace("const int* cnt", "const I* cnt") + LAUNCH.replace("ELEM", elem)
                     .replace("const int* c", f"const {elem}* c"))
    assert d.endswith("(float sums change order)"), d


def test_a_concrete_float_gets_the_note() -> None:
    assert _description(CONCRETE).endswith("(float sums change order)")


def test_an_unbound_template_type_gets_the_note_on_its_condition() -> None:
    # the launch deduces I from its argument: no launch names it
    d = _description(KERNEL + LAUNCH.replace("offsets<ELEM>", "offsets").replace("ELEM", "long long"))
    assert "(sums change order if I is a floating type)" in d and "float sums" not in d, d


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_kernels_are_valid_cuda(tmp_path: Path) -> None:
    assert_compiles(KERNEL + LAUNCH.replace("ELEM", "int64_t"), tmp=tmp_path, name="a.cu")
    assert_compiles(CONCRETE, tmp=tmp_path, name="b.cu")
    assert_compiles(KERNEL + LAUNCH.replace("offsets<ELEM>", "offsets").replace("ELEM", "long long"), tmp=tmp_path,
                    name="c.cu")
