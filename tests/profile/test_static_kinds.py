"""The static profilers' registry: one profiler per kernel language, created by name, and a clear error for a
language nobody registered (never a silent fallback to another language's compile)."""

from __future__ import annotations

import pytest

from htam_core.profile import static_kinds
from htam_core.types.errors import ProfileError


def test_each_language_of_the_source_model_has_its_profiler():
    assert {"cuda", "cuda-in-python", "triton"} <= set(static_kinds.languages())
    assert isinstance(static_kinds.create("triton"), static_kinds.TritonProfiler)
    assert type(static_kinds.create("cuda")) is static_kinds.CudaProfiler
    assert isinstance(static_kinds.create("cuda-in-python"), static_kinds.CudaInPythonProfiler)


def test_an_unknown_language_is_one_clear_error():
    with pytest.raises(ProfileError, match="'fortran' cannot be profiled statically"):
        static_kinds.create("fortran")


def test_a_language_cannot_be_registered_twice():
    class Again(static_kinds.CudaProfiler):
        languages = ("cuda",)

    with pytest.raises(ValueError, match="already has a static profiler"):
        static_kinds.register(Again)


def test_a_cuda_string_that_was_not_found_is_a_profile_error():
    class K:
        name, attributes = "k", {}

    class M:
        path, text = "x.py", ""

    prof = static_kinds.create("cuda-in-python")
    with pytest.raises(ProfileError, match="its CUDA string was not found"):
        prof.cuda_text(M(), K())
    assert prof.cuda_text(M(), K(), strict=False) == ("", 0, 1)
