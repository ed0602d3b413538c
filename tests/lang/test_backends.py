"""Language backends: one per kernel language behind ``create(kind)``, each delegating to its engine."""

from __future__ import annotations

import pytest

from htam_core.lang import LanguageBackend, create, kinds
from htam_core.profile.static_kinds import CudaInPythonProfiler, CudaProfiler, TritonProfiler
from htam_core.types.language import UnknownLanguage, traits

CUDA = """__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
void launch(float *x, int n) { scale<<<(n + 255) / 256, 256>>>(x, n); }
"""

TRITON = """import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
"""

EMBEDDED = '''from torch.utils.cpp_extension import load_inline

SRC = """
__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
"""
'''


def test_every_kernel_language_has_a_backend_and_unknown_ones_are_refused() -> None:
    assert set(kinds()) == {"cuda", "triton", "cuda-in-python"}
    for kind in kinds():
        b = create(kind)
        assert isinstance(b, LanguageBackend) and b.kind == kind and b.traits is traits(kind)
    with pytest.raises(ValueError, match="no language backend for 'fortran'"):
        create("fortran")
    with pytest.raises(UnknownLanguage):
        traits("fortran")


@pytest.mark.parametrize(("kind", "text", "profiler"), [
    ("cuda", CUDA, CudaProfiler), ("triton", TRITON, TritonProfiler), ("cuda-in-python", EMBEDDED, CudaInPythonProfiler),
])
def test_a_backend_parses_analyzes_profiles_and_lists_transforms_of_its_language(kind: str, text: str,
                                                                                 profiler: type) -> None:
    b = create(kind)
    model = b.parse(text, f"k.{'cu' if b.traits.file_language == 'cuda' else 'py'}")
    kernel = model.kernel("scale")
    assert kernel.language == kind
    facts = b.analyze(model, kernel)
    assert facts is b.analyze(model, kernel)  # the analysis layer's cache, not a second derivation
    assert type(b.static_profiler()) is profiler
    assert b.transforms() and all(kind in t.languages for t in b.transforms())
    assert "[kernel.scale]" in b.harness_template(model, kernel)


def test_validation_asks_the_compiler_of_the_file_language() -> None:
    assert create("triton").validate(TRITON) is True
    assert create("triton").validate(TRITON.replace("offs = ", "offs = (", 1)) is False
    assert create("cuda-in-python").validate(EMBEDDED) is True  # the Python file it lives in


def test_the_traits_tell_the_languages_apart() -> None:
    cuda, triton, embedded = traits("cuda"), traits("triton"), traits("cuda-in-python")
    assert (cuda.grammar, triton.grammar, embedded.grammar) == ("cuda", "python", "cuda")
    assert (cuda.file_language, triton.file_language, embedded.file_language) == ("cuda", "python", "python")
    assert (cuda.compiler, triton.compiler, embedded.compiler) == ("nvcc", "Python", "nvcc")
    assert embedded.embedded and not cuda.embedded and triton.tiles and not embedded.tiles
    assert cuda.nvcc_build and not embedded.nvcc_build
    assert (cuda.family, triton.family, embedded.family) == ("cuda", "triton", "cuda")
