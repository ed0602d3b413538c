"""Pointer modes when a kernel hands an element to a helper named like a builtin, or binds it to a reference.

Regressions from the public-corpus hand check: a user's ``__device__`` helper whose name starts with ``atomic``
was read as CUDA's atomic function (its pointer argument covered, the pointer "read"), and an element bound to a
non-const reference and assigned through it was "read"; both made ``const __restrict__`` an offered step whose
edit does not compile. Kernels written here, in the shapes seen.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.builtins import is_atomic_builtin, is_load_builtin
from htam_core.transforms.registry import propose

HELPER = r"""
__device__ int atomicTicket(const int slot, int *tickets) { return atomicAdd(&tickets[slot], 1); }

__global__ void place(const int *keys, int *slots_out, int *tickets, const int n, const int slots) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int k = keys[i];
    if (k < slots) slots_out[atomicTicket(k, tickets)] = i;
  }
}
"""

REFERENCE = r"""
typedef unsigned int word;
__global__ void relabel(const word *from, const word *map, word *links, word count) {
  word t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < count) {
    word a = from[t];
    word &b = links[t];
    if (map[a] == map[b]) b = 0xffffffffu;
  }
}

__global__ void peek(const word *src, word *dst, word count) {
  word t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < count) {
    const word &v = src[t];
    dst[t] = v + 1u;
  }
}
"""


def _modes(src: str, name: str) -> dict[str, str]:
    model = parse_text(src, "cuda")
    kernel = next(k for k in model.kernels if k.name == name)
    return {p.name: p.mode for p in analyze(model, kernel).pointers}


def test_builtin_names() -> None:
    assert is_atomic_builtin("atomicAdd") and is_atomic_builtin("::atomicMax_block")
    assert is_atomic_builtin("atomicCAS") and is_atomic_builtin("atomicAdd<float>")
    assert not is_atomic_builtin("atomicTicket") and not is_atomic_builtin("atomicAggIncMulti")
    assert is_load_builtin("__ldg") and is_load_builtin("__ldcs") and not is_load_builtin("__ldWrapper")


def test_a_helper_named_like_an_atomic_is_not_one() -> None:
    modes = _modes(HELPER, "place")
    assert modes["keys"] == "read" and modes["slots_out"] == "write"
    assert modes["tickets"] == "unknown"  # the helper's use of it is not seen at the call


def test_a_real_atomic_still_reads_and_writes() -> None:
    src = HELPER.replace("slots_out[atomicTicket(k, tickets)] = i;", "slots_out[atomicAdd(&tickets[k], 1)] = i;")
    assert _modes(src, "place")["tickets"] == "readwrite"


def test_an_element_bound_to_a_mutable_reference_is_written() -> None:
    assert _modes(REFERENCE, "relabel")["links"] == "readwrite"
    assert _modes(REFERENCE, "peek")["src"] == "read"  # a const reference only reads


@pytest.mark.parametrize(("src", "name", "kept"), [(HELPER, "place", "tickets"), (REFERENCE, "relabel", "links")])
def test_restrict_leaves_those_pointers_alone(src: str, name: str, kept: str, tmp_path: Path) -> None:
    model = parse_text(src, "cuda")
    kernel = next(k for k in model.kernels if k.name == name)
    res = propose("cuda.restrict_const", model, kernel)
    assert isinstance(res, list) and res, res
    assert kept not in res[0].params["params"]
    if shutil.which("nvcc") is None:
        return
    f = tmp_path / "k.cu"
    f.write_text(res[0].new_text)
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", str(f), "-o", str(tmp_path / "k.ptx")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
