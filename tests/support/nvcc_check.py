"""One way for the tests to ask "does nvcc accept this CUDA file?", at the cost the test suite can afford.

What it runs: ``nvcc -arch=sm_90 -cubin [flags] [-I dir ...] -o <tmp>/<name>.cubin <source>``. That is

* the preprocessor and the whole EDG C++ front end (cudafe) over the whole translation unit, host functions
  included: an undeclared identifier, a wrong argument count in ``k<<<grid, block>>>(...)``, a type error in host
  code or in a template instantiated from host code are all reported, exactly as ``nvcc -c`` reports them;
* the device compile of every kernel and ``__device__`` function (cicc to PTX, then ptxas for sm_90), so what
  ptxas rejects, and what ``-Xptxas -v`` prints, is there too.

What it leaves out: the host compiler's own pass (nvcc hands the host side to gcc/clang after the front end).
So errors only the host compiler finds are not seen: its own warnings-as-errors and ``-Xcompiler`` flags,
inline ``asm`` of host code, and the lines under ``#if !defined(__CUDA_ARCH__)`` (the front end reads the file with
``__CUDA_ARCH__`` defined, the host pass without it). The reason is time: on the 2-core CI machine this check
takes about 0.6 s a file where ``nvcc -c`` takes about 1.9 s, and the suite runs it hundreds of times. A test
whose point is the host compiler, or that links or runs what it builds, calls nvcc itself with ``-c``.

``HTAM_NVCC_CHECK=full`` in the environment makes the same calls run ``nvcc -c`` (host pass included), to recover
the full check locally when a host-side doubt comes up.

Callers skip without nvcc as before (:func:`have_nvcc`, or ``shutil.which("nvcc")``); these functions assume it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

#: The target of every check: the architecture the project's static profile compiles for.
ARCH = "sm_90"
#: How much of nvcc's output an error message keeps (its end, where the errors are summed up).
TAIL_CHARS = 3000


def have_nvcc() -> bool:
    """True when ``nvcc`` is on ``PATH`` (the condition every compile check skips on)."""
    return shutil.which("nvcc") is not None


def _command(src: Path, out_dir: Path, flags: Sequence[str], includes: Sequence[str | Path]) -> list[str]:
    """The nvcc command line checking ``src``, its output written under ``out_dir``."""
    head = ["nvcc", f"-arch={ARCH}"]
    if os.environ.get("HTAM_NVCC_CHECK") == "full":
        mode = ["-c", "-o", str(out_dir / f"{src.name}.o")]
    else:
        mode = ["-cubin", "-o", str(out_dir / f"{src.name}.cubin")]
    return [*head, *map(str, flags), *(f"-I{d}" for d in includes), *mode, str(src)]


def nvcc_check(source: str | Path, *, flags: Sequence[str] = (), includes: Sequence[str | Path] = (),
               name: str = "cand.cu", tmp: Path | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the check (module docstring) on ``source`` and return nvcc's completed process, for a test that reads
    its output (``-Xptxas -v``) as well as its exit status.

    ``source``: a :class:`~pathlib.Path` is compiled where it lies; a ``str`` is source text, written to
    ``tmp / name`` (``tmp`` is made when missing) or, without ``tmp``, to a temporary folder removed afterwards.
    ``flags``: extra nvcc arguments placed before the mode (``-std=c++17``, ``-x cu``, ``-DN=4``,
    ``-Xptxas -v`` as two items). ``includes``: folders passed as ``-I``. ``timeout`` in seconds; raises
    :class:`subprocess.TimeoutExpired` past it and :class:`FileNotFoundError` without nvcc."""
    with tempfile.TemporaryDirectory(prefix="htam-nvcc-") as scratch:
        out_dir = Path(tmp) if tmp is not None else Path(scratch)
        out_dir.mkdir(parents=True, exist_ok=True)
        if isinstance(source, Path):
            src = source
        else:
            src = out_dir / name
            src.write_text(source, encoding="utf-8")
        return subprocess.run(_command(src, out_dir, flags, includes), capture_output=True, text=True,
                              timeout=timeout, check=False)


def nvcc_error(source: str | Path, *, flags: Sequence[str] = (), includes: Sequence[str | Path] = (),
               name: str = "cand.cu", tmp: Path | None = None, timeout: float = 600) -> str:
    """``""`` when nvcc accepts ``source`` (the check of the module docstring), else the end of its output
    (at most :data:`TAIL_CHARS` characters, never empty). Arguments as in :func:`nvcc_check`."""
    p = nvcc_check(source, flags=flags, includes=includes, name=name, tmp=tmp, timeout=timeout)
    if p.returncode == 0:
        return ""
    out = (p.stdout + p.stderr).strip()
    return out[-TAIL_CHARS:] if out else f"nvcc exited with status {p.returncode} and printed nothing"


def assert_compiles(source: str | Path, *, flags: Sequence[str] = (), includes: Sequence[str | Path] = (),
                    name: str = "cand.cu", tmp: Path | None = None, timeout: float = 600,
                    context: object = None) -> None:
    """Fail the test, with the end of nvcc's output (and ``context``, when given, in front of it), unless nvcc
    accepts ``source``. Arguments as in :func:`nvcc_check`."""
    err = nvcc_error(source, flags=flags, includes=includes, name=name, tmp=tmp, timeout=timeout)
    assert not err, err if context is None else f"{context}: {err}"
