"""Where the CUDA toolchain is: one rule for every command that runs ``nvcc``.

The rule is PyTorch's (``torch.utils.cpp_extension``'s CUDA home): ``$CUDA_HOME/bin`` or ``$CUDA_PATH/bin`` when
set (a user who names a toolkit means that one), then ``nvcc`` on ``PATH``, then ``/usr/local/cuda/bin``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["find_nvcc"]


def find_nvcc() -> str | None:
    """Path of ``nvcc`` by the module's rule, or ``None`` when no toolkit is found (callers say so in one line).

    Reads ``CUDA_HOME``, ``CUDA_PATH`` and ``PATH`` at each call (tests and users may change them); never raises.
    """
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and Path(home, "bin", "nvcc").is_file():
            return str(Path(home, "bin", "nvcc"))
    found = shutil.which("nvcc")
    if found:
        return found
    return "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None
