"""The compiler's word on a file the parser cannot read: is a kernel half-typed, or is it valid code htam misreads?

tree-sitter's grammar is not the compiler: valid CUDA (macros it does not expand, constructs it does not know) can
leave ERROR nodes. The compiler decides what is valid, so before a command calls a kernel *incomplete* it asks
:func:`compiler_verdict`: for CUDA, nvcc's front end (``nvcc -x cu --cuda``: preprocessing, parsing and
semantic checks, no code generation), with ``-I`` for the file's folder and the include folders of
:mod:`htam_core.runtime.include_dirs`; for Python (Triton kernels), Python's own
compiler (``compile()``, nothing is run). :func:`settle_incomplete` records the verdict on each incomplete kernel
(:attr:`Kernel.compiles`); :func:`~htam_core.source.api.incomplete_reason` then says "htam could not read it"
instead of "finish or fix it". Without nvcc the verdict is ``None`` and the message stays the parser's.

Asked once per file text (cached by content), only when a kernel does not parse, and only by the commands (the
editor does not wait for a compiler on each keystroke). nvcc runs as its own process with a timeout.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from functools import lru_cache

from htam_core.runtime.children import one_shot_kwargs
from htam_core.runtime.include_dirs import include_dirs
from htam_core.runtime.toolchain import find_nvcc
from htam_core.source.model import SourceModel

__all__ = ["NVCC_TIMEOUT_S", "compiler_verdict", "settle_incomplete"]

#: Longest nvcc front-end run waited for, seconds (a slower answer counts as no answer).
NVCC_TIMEOUT_S = 60.0


def compiler_verdict(text: str, file_language: str, path: str | None = None) -> bool | None:
    """Whether the compiler accepts ``text``: ``True``/``False``, or ``None`` when there is no compiler to ask
    (nvcc not on ``PATH``), it timed out or could not be run.

    Args:
        text: the whole file.
        file_language: the file's language (``SourceModel.file_language``): ``"cuda"`` (nvcc front end) or
            ``"python"`` (Python's compiler).
        path: the file's path, for its folder's local headers (``-I``); ``None`` for unsaved text.
    """
    if file_language == "python":
        try:
            compile(text, path or "<text>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
        return True
    folders: tuple[str, ...] = ()
    if path:  # its own folder, then those its build files name or that hold a header it includes from elsewhere
        folders = (os.path.dirname(os.path.abspath(path)), *(str(d.path) for d in include_dirs(path, text)))
    return _nvcc(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), text, folders)


@lru_cache(maxsize=64)
def _nvcc(digest: str, text: str, folders: tuple[str, ...]) -> bool | None:
    nvcc = find_nvcc()
    if nvcc is None:
        return None
    with tempfile.TemporaryDirectory(prefix="htam-nvcc-") as tmp:
        src = os.path.join(tmp, "unit.cu")
        with open(src, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        cmd = [nvcc, "-x", "cu", "--cuda", "-w", "-std=c++17", "-o", os.path.join(tmp, "unit.ii"), src]
        cmd[1:1] = [f"-I{d}" for d in folders]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=NVCC_TIMEOUT_S, check=False,
                                  **one_shot_kwargs())
        except (OSError, subprocess.TimeoutExpired):
            return None
    return proc.returncode == 0


def settle_incomplete(model: SourceModel) -> SourceModel:
    """Ask the compiler once about ``model``'s file when one of its kernels is incomplete, and record the answer on
    each incomplete kernel (:attr:`~htam_core.source.model.Kernel.compiles`). Returns ``model`` (changed in
    place)."""
    todo = [k for k in model.kernels if k.incomplete and k.compiles is None]
    if todo:
        verdict = compiler_verdict(model.text, model.file_language, model.path)
        for k in todo:
            k.compiles = verdict
    return model
