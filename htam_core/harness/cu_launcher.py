"""Call an ``extern "C"`` host launcher of a ``.cu`` file: the launch configuration stays in the user's code.

A spec harness may name ``launcher = "launch_transpose"`` for a ``.cu`` file. The file is then built with
``nvcc -shared -Xcompiler -fPIC`` into a shared library (cached by content hash), loaded with :mod:`ctypes`,
and the launcher is called with the harness inputs in order: tensors as device pointers, scalars as C values
of their spec dtype. Because the ``<<<grid, block>>>`` launch lives in the file, transforms that retune the
block size or the grid (``cuda.block_size``, ``cuda.transpose_smem_tile``, ``cuda.smem_tiling_matmul``) act
on what is actually run. The launcher should launch on the default stream (torch's current stream unless a
caller changed it), so CUDA-event timing covers it.

Runs **inside a worker process** (needs nvcc and a GPU). Idea source: the usual ctypes + ``nvcc -shared``
pattern for calling CUDA host code from Python.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from htam_core.harness.base import HarnessError

_CTYPES: dict[str, Any] = {
    "float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int, "int64": ctypes.c_longlong,
    "int16": ctypes.c_short, "int8": ctypes.c_byte, "uint8": ctypes.c_ubyte, "bool": ctypes.c_bool,
}
_LIBS: dict[tuple[str, str], Any] = {}


def build_shared_library(path: str | Path, arch: str) -> Path:
    """Build ``path`` into ``<htam cache>/cu_launchers/<hash>.so`` (cached by content, arch and nvcc).

    Raises:
        HarnessError: nvcc is missing or the file does not compile (nvcc's errors are in the message).
    """
    from htam_core.harness.cu_main import find_nvcc
    from htam_core.profile.cache import cache_root, content_key

    nvcc = find_nvcc()
    if nvcc is None:
        raise HarnessError("a .cu host launcher needs nvcc to build a shared library, and nvcc was not found")
    src = Path(path)
    key = content_key(source=src.read_text(encoding="utf-8", errors="replace"), arch=arch, nvcc=nvcc)
    out_dir = cache_root() / "cu_launchers"
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / f"{key[:24]}.so"
    if lib.is_file():
        return lib
    tmp = lib.with_name(f"{lib.stem}.{os.getpid()}.tmp.so")  # one per process: pool workers may race
    proc = subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3", "-lineinfo", f"-arch={arch}",
                           "-std=c++17", f"-I{src.parent}", str(src), "-o", str(tmp)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise HarnessError(f"nvcc could not build {src.name} as a shared library:\n{proc.stderr[-3000:]}")
    tmp.replace(lib)
    return lib


def host_launcher(path: str | Path, launcher: str, arch: str, dtypes: Sequence[str | None]
                  ) -> Callable[[Sequence[Any]], Callable[[], None]]:
    """A binder for the ``extern "C"`` function ``launcher`` of the ``.cu`` file ``path``.

    Args:
        path: the ``.cu`` file.
        launcher: name of an ``extern "C"`` host function taking the harness inputs in order.
        arch: ``sm_90`` etc.
        dtypes: per input, the spec dtype of a scalar, or ``None`` for a tensor (passed as ``void*``).

    Returns:
        ``bind(inputs) -> launch()``: arguments are converted once, ``launch`` only calls the function.

    Raises:
        HarnessError: build failure, or no exported function of that name (``extern "C"`` missing).
    """
    lib_path = build_shared_library(path, arch)
    key = (str(lib_path), launcher)
    lib = _LIBS.get(key)
    if lib is None:
        lib = _LIBS[key] = ctypes.CDLL(str(lib_path))
    try:
        fn = getattr(lib, launcher)
    except AttributeError:
        raise HarnessError(f"{Path(path).name} exports no function {launcher!r}: declare the host launcher "
                           f'`extern "C" void {launcher}(...)` so its name is not mangled') from None
    argtypes = [ctypes.c_void_p if d is None else _CTYPES.get(d, ctypes.c_float) for d in dtypes]
    fn.argtypes = argtypes
    fn.restype = None

    def bind(inputs: Sequence[Any]) -> Callable[[], None]:
        args = [ctypes.c_void_p(x.data_ptr()) if t is ctypes.c_void_p else t(x) for x, t in zip(inputs, argtypes,
                                                                                                  strict=True)]
        keep = list(inputs)  # the tensors must outlive the raw pointers in args (a graph capture empties
        # torch's allocator cache, so a freed tensor's memory would be unmapped under the launcher)

        def launch() -> None:
            fn(*args)
        launch.inputs = keep  # type: ignore[attr-defined]
        return launch

    return bind
