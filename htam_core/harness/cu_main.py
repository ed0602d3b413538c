"""A ``.cu`` program with ``main()``: build it with nvcc, run it under ncu filtered to one kernel.

Detection uses a tree-sitter query (a ``function_definition`` whose declarator is ``main``).
Builds are cached by the hash of the source, the flags and nvcc's fingerprint, so a repeated
profile of an unchanged file does not rebuild.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from htam_core.harness.base import HarnessError, cuda_include_dirs, include_flags
from htam_core.runtime.cache import cache_root, content_key, file_fingerprint
from htam_core.runtime.children import one_shot_kwargs
from htam_core.runtime.toolchain import find_nvcc
from htam_core.source.analysis.includes import headers_digest
from htam_core.source.parsing import captures, new_parser, node_text

_MAIN_QUERY = """
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def
"""


def has_main(text: str) -> bool:
    """True when the CUDA/C++ source ``text`` defines a function called ``main``."""
    tree = new_parser("cuda").parse(text.encode("utf-8"))
    return any(node_text(n) == "main" for n in captures("cuda", _MAIN_QUERY, tree.root_node).get("name", []))


def build_program(path: str | os.PathLike, *, arch: str = "sm_90", out_dir: str | os.PathLike | None = None,
                  extra_flags: list[str] | None = None, timeout_s: float = 300.0) -> Path:
    """Build the program ``path`` with ``nvcc -O3 -lineinfo -arch=<arch>``, cached by content hash.

    Args:
        path: the ``.cu`` file (must define ``main``).
        arch: target, e.g. ``"sm_90"``, or ``"native"``.
        out_dir: where binaries are kept; default ``<htam cache>/programs``.
        extra_flags: further nvcc flags.
        timeout_s: limit for nvcc, seconds.

    Returns:
        Path of the executable.

    Raises:
        HarnessError: nvcc is missing or the build failed (the message holds nvcc's errors).
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise HarnessError("nvcc was not found: install the CUDA toolkit or set CUDA_HOME, then profile again")
    src = Path(path).resolve()
    flags = ["-O3", "-lineinfo", f"-arch={arch}", *include_flags(src), *(extra_flags or [])]
    text = src.read_text(encoding="utf-8", errors="replace")
    key = content_key(kind="cu-main", source=text, flags=flags, nvcc=file_fingerprint(nvcc),
                      headers=headers_digest(text, src, cuda_include_dirs(src)))
    out = Path(out_dir) if out_dir is not None else cache_root() / "programs"
    out.mkdir(parents=True, exist_ok=True)
    exe = out / f"{src.stem}-{key[:16]}"
    if exe.is_file():
        return exe
    tmp = exe.with_name(exe.name + f".tmp{os.getpid()}")
    proc = subprocess.run([nvcc, *flags, str(src), "-o", str(tmp)], capture_output=True, text=True,
                          timeout=timeout_s, cwd=str(src.parent), **one_shot_kwargs())
    if proc.returncode != 0:
        errs = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()][:40]
        raise HarnessError(f"nvcc could not build {src.name} (exit {proc.returncode}):\n" + "\n".join(errs))
    os.replace(tmp, exe)
    return exe
