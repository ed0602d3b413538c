"""Run a CUDA file's host launcher on the GPU, to compare a transform's output with its input numerically.

The whole file is built with ``nvcc -shared`` together with a small ``extern "C"`` entry that calls one of its
host functions (``run_bmm_nn(A, B, C, ...)``, which launches the kernel as the file does); the entry is loaded
with :mod:`ctypes` and called with device pointers of torch CUDA tensors. Used by the ``gpu``-marked transform
tests only; they skip cleanly without nvcc or a CUDA device.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

#: source hash -> built library, for the session (the libraries stay in their tests' tmp folders)
_BUILT: dict[str, Path] = {}


def have_nvcc() -> bool:
    """True when ``nvcc`` is on ``PATH``."""
    return shutil.which("nvcc") is not None


def call_host(text: str, signature: str, call: str, args: list, tmp: Path, tag: str) -> None:
    """Build ``text`` with the entry ``extern "C" void htam_entry(<signature>) { <call>; cudaDeviceSynchronize(); }``
    and call it with ``args`` (torch CUDA tensors become device pointers, ints ``c_int``, floats ``c_float``).

    Raises:
        AssertionError: nvcc fails (its message is in the assertion).
    """
    full = text + f'\nextern "C" void htam_entry({signature}) {{ {call}; cudaDeviceSynchronize(); }}\n'
    key = hashlib.sha256(full.encode()).hexdigest()[:16]
    lib = _BUILT.get(key)
    if lib is None:  # one build per distinct source in a session (parametrized cases share the original)
        src = tmp / f"{tag}-{key}.cu"
        src.write_text(full)
        lib = tmp / f"{tag}-{key}.so"
        p = subprocess.run(["nvcc", "-O2", "-arch=native", "-shared", "-Xcompiler", "-fPIC", str(src), "-o",
                            str(lib)], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        _BUILT[key] = lib
    fn = ctypes.CDLL(str(lib)).htam_entry
    cargs = []
    for a in args:
        if hasattr(a, "data_ptr"):
            cargs.append(ctypes.c_void_p(a.data_ptr()))
        elif isinstance(a, float):
            cargs.append(ctypes.c_float(a))
        else:
            cargs.append(ctypes.c_int(a))
    fn(*cargs)


def torch_cuda():
    """``torch`` when a CUDA device is usable, else skip the test."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    if not have_nvcc():
        pytest.skip("nvcc is not installed")
    return torch
