"""A template kernel defined in a header and instantiated only at a launch in another file (``k<64><<<...>>>`` in
``launch.cu``) is profiled statically with the instantiation its launcher uses, in the header itself and in an
optimize candidate's copy of it (whose launchers stay beside the original); an argument the header cannot name
keeps the clear "must be instantiated" error."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import mark_origin
from htam_core.profile import static_cuda as sc
from htam_core.profile.api import static_profile
from htam_core.runtime.cache import CompileCache
from htam_core.source import load
from htam_core.types.errors import ProfileError

HEADER = """#pragma once
template <int NUM_CLASSES>
__global__ void hist(const int* labels, unsigned int* counts, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { int c = labels[i]; if (c >= 0 && c < NUM_CLASSES) atomicAdd(&counts[c], 1u); }
}
"""
LAUNCH = """#include "hist.cuh"
ARGDECL
void count(const int* l, unsigned int* c, int n) { hist<ARG><<<(n + 255) / 256, 256>>>(l, c, n); }
"""


def _write(folder: Path, arg: str = "64", decl: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hist.cuh").write_text(HEADER)
    (folder / "launch.cu").write_text(LAUNCH.replace("ARGDECL", decl).replace("ARG", arg))
    return folder / "hist.cuh"


def test_instantiation_text_takes_each_specialization_address() -> None:
    text = sc.instantiation_text("k", [("float", "256"), ("double", "128")])
    assert "(const void *)&k<float, 256>;" in text and "(const void *)&k<double, 128>;" in text


@pytest.mark.skipif(sc.find_nvcc() is None, reason="needs nvcc")
def test_the_header_kernel_is_profiled_with_its_launchers_instantiation(tmp_path: Path) -> None:
    header = _write(tmp_path / "ws")
    p = static_profile(load(header), "hist", cache=CompileCache(tmp_path / "cache"), harness=None)
    assert p.registers is not None and p.registers > 0
    assert [e["name"].split("(")[0] for e in p.extra["instantiations"]] == ["void hist<64>"]


@pytest.mark.skipif(sc.find_nvcc() is None, reason="needs nvcc")
def test_a_candidate_copy_reads_the_original_folders_launchers(tmp_path: Path) -> None:
    header = _write(tmp_path / "ws")
    cands = tmp_path / "out" / "candidates"
    mark_origin(cands, header)
    copy = cands / "00-start" / "hist.cuh"
    copy.parent.mkdir(parents=True)
    copy.write_text(HEADER)
    p = static_profile(load(copy), "hist", cache=CompileCache(tmp_path / "cache"), harness=None)
    assert p.registers is not None


@pytest.mark.skipif(sc.find_nvcc() is None, reason="needs nvcc")
def test_an_argument_only_the_launcher_names_keeps_the_error(tmp_path: Path) -> None:
    header = _write(tmp_path / "ws", arg="kClasses", decl="constexpr int kClasses = 64;")
    with pytest.raises(ProfileError, match="must be instantiated"):
        static_profile(load(header), "hist", cache=CompileCache(tmp_path / "cache"), harness=None)
