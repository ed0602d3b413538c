"""A kernel launched from another file: the program that runs it, found in the workspace, read as one pair.

A kernel file often holds no ``main()``: ``vectorAdd.cu`` defines the kernel, ``main.cu`` (or ``host.cu``,
``main.cpp``) launches it, through a declared prototype (``vectorAdd<<<blocks, threads>>>(...)``), through a
wrapper of the kernel's file (``void launch_add(...)`` called from ``main.cpp``), or by including the kernel's
header (``#include "transpose.cuh"``). The compiler sees the pair as one program; so does this module:

1. **Discovery** (:func:`host_programs`): the workspace search of launch sites
   (:func:`htam_core.source.workspace.launcher_files`, the search behind ``htam kernels``' launches elsewhere)
   lists the files that name the kernel or a host function of its file that launches it; the C/C++/CUDA ones that
   define ``main()`` are the programs. When none does, one hop further: a file without ``main()`` whose host
   function launches the kernel (``ops.cu``), and the program that calls that function.
2. **The rule when several programs run it**: the nearest first (the kernel's own folder, then its sub-folders by
   depth, then the rest of the workspace), then by path; each is tried in that order and the first whose launch
   can be read is used. The harness's notes name the program used and the others.
3. **Inference**: the kernel's file followed by the program's text (after the hop's file, if any) is read as one
   unit by
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
from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.harness.spec import table_header
from htam_core.source.analysis.api_launch import api_launch_calls
from htam_core.source.analysis.launch import launch_calls
from htam_core.source.api import parse_text
from htam_core.source.cuda import _enclosing_function as enclosing_function  # the source layer's
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.workspace import launcher_files

__all__ = ["PROGRAM_SUFFIXES", "HostProgram", "host_programs", "infer_cuda", "infer_from_program", "own_binding",
           "python_launchers"]

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
        how: ``"launches <kernel>"`` or ``"calls <wrapper>"`` (a host function of the kernel's file, or of
            ``via``).
        via: a third file without ``main()`` whose host function (called by the program) launches the kernel
            (``ops.cu`` between ``kernel.cuh`` and ``main.cpp``), else ``None``.
    """

    path: Path
    how: str
    via: Path | None = None


def wrappers(model: SourceModel, kernel: Kernel) -> list[str]:
    """The host functions of the kernel's own file that launch it (``launch_add``), in file order."""
    if not kernel.launch_sites:
        return []
    return _launching_functions(model.text, kernel.name, Path(model.path) if model.path else None)


def _launching_functions(text: str, kernel: str, path: Path | None = None) -> list[str]:
    """The host functions of ``text`` (other than ``main``) holding a launch of ``kernel`` (``<<<>>>`` or through the
    runtime API, :mod:`~htam_core.source.analysis.api_launch`)."""
    prog = Program(text, path)
    out: list[str] = []
    root = prog.tree.root_node
    for lc in launch_calls(root, prog.src, kernel) + api_launch_calls(root, prog.src, kernel):
        fn = enclosing_function(lc.call)
        name = function_name(fn) if fn is not None else None
        if name and name != "main" and name not in out:
            out.append(name)
    return out


def _calls(text: str, names: list[str]) -> str | None:
    """The first of ``names`` that ``text`` calls."""
    return next((n for n in names if re.search(r"\b" + re.escape(n) + r"\s*(<[^<>;]*>)?\s*\(", text)), None)


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
    launch = re.compile(r"\b" + re.escape(kernel.name) + r"\s*(<[^<>;]*>)?\s*<<<")
    texts: dict[Path, str] = {}
    for p in launcher_files(model, kernel, names):
        if p.suffix in PROGRAM_SUFFIXES + (".cuh", ".h", ".hpp"):
            try:
                texts[p.resolve()] = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
    mains = {p for p, t in texts.items() if p.suffix in PROGRAM_SUFFIXES and has_main(t)}
    out = []
    for p in sorted(mains):
        called = _calls(texts[p], names)
        if launch.search(texts[p]) or called:
            out.append(HostProgram(p, f"launches {kernel.name}" if launch.search(texts[p]) else f"calls {called}"))
    # one hop further: a file without main() whose host function launches the kernel, called by a program
    bridges = {p: _launching_functions(t, kernel.name) for p, t in texts.items()
               if p not in mains and launch.search(t)}
    hop = [n for fns in bridges.values() for n in fns]
    if not out and hop:
        for p in launcher_files(model, kernel, hop):
            rp = p.resolve()
            if rp.suffix not in PROGRAM_SUFFIXES or rp in bridges:
                continue
            text = texts.get(rp) or p.read_text(encoding="utf-8", errors="replace")
            via = next((b for b, fns in bridges.items() if _calls(text, fns)), None)
            if via is not None and has_main(text):
                out.append(HostProgram(rp, f"calls {_calls(text, bridges[via])} of {via.name}", via))
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


def own_binding(model: SourceModel, kernel: Kernel) -> str | None:
    """``"its PYBIND11_MODULE binding of bias_add"`` when the kernel's own file binds a host function of the file
    that launches the kernel (:func:`wrappers`) for Python (``PYBIND11_MODULE``, ``TORCH_LIBRARY``,
    ``TORCH_LIBRARY_IMPL``): the kernel is run from Python through that binding, not by a program; else ``None``."""
    names = wrappers(model, kernel)
    for m in re.finditer(r"\b(PYBIND11_MODULE|TORCH_LIBRARY(?:_IMPL)?)\s*\(", model.text):
        named = [w for w in names if re.search(rf"\b{re.escape(w)}\b", model.text[m.end():])]
        if named:
            return f"its {m.group(1)} binding of {named[0]}"
    return None


def _relabel(message: str, own: Path, parts: list[tuple[Path, int]]) -> str:
    """``message`` with the unit's lines that lie in an appended file written as that file's own: ``parts`` holds
    each appended file with the unit's line its text starts on (``vectorAdd.cu:57`` -> ``main.cu:12``, ``line 57``
    -> ``line 12 of main.cu``)."""
    def where(n: int) -> tuple[str, int] | None:
        part = next(((f, first) for f, first in reversed(parts) if n >= first), None)
        return None if part is None else (part[0].name, n - part[1] + 1)

    def at(m: re.Match[str]) -> str:
        w = where(int(m.group(1)))
        return m.group(0) if w is None else f"{w[0]}:{w[1]}"

    def line(m: re.Match[str]) -> str:
        w = where(int(m.group(1)))
        return m.group(0) if w is None else f"line {w[1]} of {w[0]}"

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
        py, own = python_launchers(model, kernel), own_binding(model, kernel)
        if py or own:
            names = ", ".join(([f"{p.name} ({own})"] if own else []) +
                              sorted({q.name for q in py} - {p.name}, key=lambda n: (not n.endswith(".py"), n)))
            raise HarnessError(f"{kernel_name} is run from {names}, which htam does not run as a program; describe "
                               f"the call in a {table_header(kernel_name)} table of htam.toml (inputs, sizes, launcher or "
                               "grid/block)", missing=True)
        raise HarnessError(f"no main() in {p.name} or in a file of its workspace launches {kernel_name} (searched "
                           "for files that launch it or call a host function of this file that does)", missing=True)
    errors: list[str] = []
    for prog in programs:
        unit, parts = text, []
        for f in ([prog.via] if prog.via else []) + [prog.path]:
            parts.append((f, unit.count("\n") + 2))  # the text joined after a newline starts on this line
            unit += "\n" + f.read_text(encoding="utf-8", errors="replace")
        try:
            h = infer_cuda_harness(p, kernel_name, parse_text(unit, "cuda", str(p)), unit,
                                   own_bytes=len(text.encode("utf-8")))
        except HarnessError as e:
            errors.append(_relabel(e.message, p, parts))
            continue
        h.source = _relabel(h.source.replace(f"main() of {p.name}", f"main() of {prog.path.name}"), p, parts)
        h.notes = [_relabel(n, p, parts) for n in h.notes]
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
