"""A kernel launched from another file: the program that runs it, found in the workspace, read as one pair.

A kernel file often holds no ``main()``: ``vectorAdd.cu`` defines the kernel, ``main.cu`` (or ``host.cu``,
``main.cpp``) launches it, through a declared prototype (``vectorAdd<<<blocks, threads>>>(...)``), through a
wrapper of the kernel's file (``void launch_add(...)`` called from ``main.cpp``), or by including the kernel's
header (``#include "transpose.cuh"``). The compiler sees the pair as one program; so does this module:

1. **Discovery** (:func:`host_programs`): the workspace search of launch sites
   (:func:`htam_core.source.workspace.launcher_files`, the search behind ``htam kernels``' launches elsewhere)
   lists the files that name the kernel or a host function of its file that launches it; the C/C++/CUDA ones that
   define ``main()`` are the programs.
2. **The rule when several programs run it**: the nearest first (the kernel's own folder, then its sub-folders by
   depth, then the rest of the workspace), then by path; each is tried in that order and the first whose launch
   can be read is used. The harness's notes name the program used and the others.
3. **Inference**: the kernel's file followed by the program's text is read as one unit by
   :func:`htam_core.harness.infer_cuda.infer_cuda_harness` (buffers, sizes, grid and block at the launch); the
   harness runs the kernel's own file (a direct launch, or a host launcher defined in the kernel's file), so every
   step the optimize loop makes in it is measured. A launcher defined in the program file is read as a direct
   launch (its grid and block at the launch).
4. **When no program runs it**: one line says where it is launched from (a Python launcher, a binding file) and
   what to write (a ``[kernel.<name>]`` table of ``htam.toml``, with the template the caller attaches).

Lines in messages and notes are the user's: a line of the program file is written ``main.cu:42``.

Where the idea comes from: separate compilation (the kernel's translation unit linked with the one holding
``main()``), and the launch-site search of the workspace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from htam_core.harness.base import Harness, HarnessError, include_notes
from htam_core.harness.cu_eval import Program, function_name
from htam_core.harness.cu_main import has_main
from htam_core.harness.infer_cuda import infer_cuda_harness, launch_call
from htam_core.source.api import parse_text
from htam_core.source.cuda import _enclosing_function as enclosing_function  # the source layer's
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.workspace import launcher_files

__all__ = ["PROGRAM_SUFFIXES", "HostProgram", "host_programs", "infer_cuda", "infer_from_program", "python_launchers"]

#: files that can hold the ``main()`` of a CUDA program
PROGRAM_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
#: what a Python file that runs CUDA code holds (cupy, torch's extension loaders)
_PY_LOADERS = ("RawKernel", "RawModule", "load_inline", "cpp_extension")
#: what a binding file holds (pybind11, a torch library)
_BINDINGS = ("PYBIND11_MODULE", "TORCH_LIBRARY")


@dataclass(frozen=True)
class HostProgram:
    """A workspace file with ``main()`` that runs a kernel of another file.

    Attributes:
        path: the file.
        how: ``"launches <kernel>"`` or ``"calls <wrapper>"`` (a host function of the kernel's file).
    """

    path: Path
    how: str


def wrappers(model: SourceModel, kernel: Kernel) -> list[str]:
    """The host functions of the kernel's own file that launch it (``launch_add``), in file order."""
    if not kernel.launch_sites:
        return []
    prog = Program(model.text, Path(model.path) if model.path else None)
    out: list[str] = []
    for site in kernel.launch_sites:
        call = launch_call(prog, site.line, kernel.name)
        fn = enclosing_function(call) if call is not None else None
        name = function_name(fn) if fn is not None else None
        if name and name != "main" and name not in out:
            out.append(name)
    return out


def _distance(kernel_dir: Path, p: Path) -> tuple[int, int, str]:
    """Sort key of the rule: the kernel's folder first, then its sub-folders by depth, then the rest, by path."""
    try:
        rel = p.parent.relative_to(kernel_dir)
        return (0, len(rel.parts), str(p))
    except ValueError:
        return (1, len(p.parts), str(p))


def host_programs(model: SourceModel, kernel: Kernel) -> list[HostProgram]:
    """The programs (files with ``main()``) of the workspace that run ``kernel``, in the order of the rule.

    Args:
        model: the kernel's file (its path locates the workspace).
        kernel: a CUDA kernel of ``model``.
    """
    names = wrappers(model, kernel)
    kdir = Path(model.path).resolve().parent if model.path else Path(".")
    out = []
    for p in launcher_files(model, kernel, names):
        if p.suffix not in PROGRAM_SUFFIXES:
            continue
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if not has_main(text):
            continue
        launches = re.search(r"\b" + re.escape(kernel.name) + r"\s*(<[^<>;]*>)?\s*<<<", text) is not None
        called = next((n for n in names if re.search(r"\b" + re.escape(n) + r"\s*\(", text)), None)
        if launches or called:
            out.append(HostProgram(p.resolve(), f"launches {kernel.name}" if launches else f"calls {called}"))
    return sorted(out, key=lambda h: _distance(kdir, h.path))


def python_launchers(model: SourceModel, kernel: Kernel) -> list[Path]:
    """Python files that run CUDA code (cupy ``RawKernel``/``RawModule``, torch's ``load``/``load_inline``) and
    binding files (``PYBIND11_MODULE``, ``TORCH_LIBRARY``) of the workspace that name the kernel or a wrapper of
    its file: launchers htam does not run as a program (a ``htam.toml`` table says how)."""
    out = []
    own_name = [Path(model.path).name] if model.path else []  # torch's load(sources=["add.cu", ...])
    for p in launcher_files(model, kernel, [*wrappers(model, kernel), *own_name]):
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if p.suffix == ".py":  # it names the kernel in a string (cupy) or the kernel's file (torch's load)
            named = re.search(r"[\"']" + re.escape(kernel.name) + r"[\"']", text) or \
                (model.path and Path(model.path).name in text)
            if named and any(m in text for m in _PY_LOADERS):
                out.append(p)
        elif any(m in text for m in _BINDINGS):
            out.append(p)
    return out


def _relabel(message: str, own: Path, other: Path, first_line: int) -> str:
    """``message`` with the pair's lines at or after ``first_line`` written as the program file's own
    (``vectorAdd.cu:57`` -> ``main.cu:12``, ``line 57`` -> ``line 12 of main.cu``)."""
    def at(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return f"{other.name}:{n - first_line + 1}" if n >= first_line else m.group(0)

    def line(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return f"line {n - first_line + 1} of {other.name}" if n >= first_line else m.group(0)

    message = re.sub(re.escape(own.name) + r":(\d+)", at, message)
    return re.sub(r"\bline (\d+)\b(?! of )", line, message)


def infer_from_program(path: str | Path, kernel_name: str, model: SourceModel | None = None,
                       text: str | None = None) -> Harness:
    """The harness of ``kernel_name`` of ``path`` read from the workspace program that runs it.

    Args:
        path: the kernel's file (``.cu``, ``.cuh``), which has no ``main()`` launching the kernel.
        kernel_name: the kernel.
        model: the file's source model (parsed when ``None``).
        text: the file's text (read when ``None``).

    Returns:
        A harness of kind ``"inferred"`` whose :attr:`Harness.path` is the kernel's file and whose
        :attr:`Harness.source` names the program; its notes say which program was picked and why.

    Raises:
        HarnessError: (``missing=True``) no program runs the kernel (the message names any Python or binding
            launcher found), or none of the programs' launches can be read (the first program's reason, in the
            program's lines).
    """
    p = Path(path).resolve()
    text = text if text is not None else p.read_text(encoding="utf-8", errors="replace")
    model = model or parse_text(text, "cuda", str(p))
    try:
        kernel = model.kernel(kernel_name)
    except KeyError:
        raise HarnessError(f"{p.name}: no kernel {kernel_name!r}", missing=True) from None
    programs = host_programs(model, kernel)
    if not programs:
        py = python_launchers(model, kernel)
        if py:
            names = ", ".join(sorted({q.name for q in py}, key=lambda n: (not n.endswith(".py"), n)))
            raise HarnessError(f"{kernel_name} is run from {names}, which htam does not run as a program; describe "
                               f"the call in a [kernel.{kernel_name}] table of htam.toml (inputs, sizes, launcher or "
                               "grid/block)", missing=True)
        raise HarnessError(f"no main() in {p.name} or in a file of its workspace launches {kernel_name} (searched "
                           "for files that launch it or call a host function of this file that does)", missing=True)
    own_lines = text.count("\n") + 1
    errors: list[str] = []
    for prog in programs:
        other = prog.path.read_text(encoding="utf-8", errors="replace")
        pair = text + "\n" + other
        pair_model = parse_text(pair, "cuda", str(p))
        try:
            h = infer_cuda_harness(p, kernel_name, pair_model, pair, own_bytes=len(text.encode("utf-8")))
        except HarnessError as e:
            errors.append(_relabel(e.message, p, prog.path, own_lines + 1))
            continue
        h.source = _relabel(h.source.replace(f"main() of {p.name}", f"main() of {prog.path.name}"), p, prog.path,
                            own_lines + 1)
        h.notes = [_relabel(n, p, prog.path, own_lines + 1) for n in h.notes]
        others = [q.path.name for q in programs if q is not prog]
        h.notes.insert(0, f"program: main() of {prog.path} ({prog.how})" + (
            f"; also run by {', '.join(others)}: the nearest program is used (the kernel's folder first, then by "
            "path)" if others else ""))
        return h
    raise HarnessError(errors[0] if len(errors) == 1 else "; ".join(errors), missing=True)


def infer_cuda(path: str | Path, kernel_name: str, model: SourceModel | None = None,
               text: str | None = None) -> Harness:
    """The one CUDA harness inference (``htam verify``/``optimize``/``profile``, the editor and ``htam harness
    infer``): from the file's own ``main()`` when it has one, else from the workspace program that runs the
    kernel (:func:`infer_from_program`); the harness's notes then name the include folders its builds use
    beyond the file's own (:func:`htam_core.harness.base.include_notes`).

    Raises:
        HarnessError: as :func:`~htam_core.harness.infer_cuda.infer_cuda_harness` or :func:`infer_from_program`
            (``missing=True``).
    """
    p = Path(path)
    text = text if text is not None else p.read_text(encoding="utf-8", errors="replace")
    h = infer_cuda_harness(p, kernel_name, model, text) if has_main(text) else \
        infer_from_program(p, kernel_name, model, text)
    h.notes.extend(n for n in include_notes(p) if n not in h.notes)
    return h
