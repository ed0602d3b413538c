"""The kernels a CUDA file reaches through its local headers: ``naive.cu`` with ``#include "dwconv.cuh"``, whose
kernel lives in the header.

A program often keeps its kernel in a header (``.cuh``) and only ``main()`` and the launch in the ``.cu`` file. A
command given the ``.cu`` file finds no kernel in it; :func:`included_kernels` says where they are: the quoted
``#include "x.cuh"`` files of the unit (never ``<...>`` system headers), resolved relative to the folder of the file
that holds the line (sub-folders too, ``#include "ops/conv.cuh"``) and followed transitively
(:func:`~htam_core.source.analysis.includes.header_paths`, the one reader of local includes), each read with its own
kernels. :func:`included_kernel_hint` is the one line the commands print.

Idea source: the C preprocessor's lookup of the quoted include form ([cpp.include]: the including file's folder
first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from htam_core.source.analysis.includes import header_paths
from htam_core.source.api import load
from htam_core.source.errors import SourceError
from htam_core.source.model import SourceModel

__all__ = ["IncludedKernels", "included_kernel_hint", "included_kernels"]


@dataclass(frozen=True)
class IncludedKernels:
    """The kernels one local header of a file defines.

    Attributes:
        path: the header, as a path from the including file's folder joined to that folder as the user named the
            file (``bench/pairs/dw/dwconv.cuh`` for ``bench/pairs/dw/naive.cu``), so that it can be passed back to a
            command as it is.
        included_as: the header's path from the including file's folder (``dwconv.cuh``, ``ops/conv.cuh``).
        names: the kernels it defines (their identities, in file order).
    """

    path: str
    included_as: str
    names: tuple[str, ...]


def included_kernels(model: SourceModel) -> tuple[IncludedKernels, ...]:
    """The local headers ``model``'s file includes (transitively, innermost first) that define kernels, each with
    its kernels; ``()`` for in-memory text or a file with no such header. Headers that cannot be read or parsed
    are skipped.

    Args:
        model: a loaded CUDA or Python file (its ``path`` locates the headers).
    """
    if not model.path:
        return ()
    found, _ = header_paths(model.text, model.path)
    folder = os.path.dirname(model.path)
    here = Path(model.path).resolve().parent
    out: list[IncludedKernels] = []
    for p in found:
        try:
            names = tuple(dict.fromkeys(k.identity for k in load(p).kernels))
        except SourceError:
            continue
        if names:
            rel = os.path.relpath(p, here)
            out.append(IncludedKernels(os.path.normpath(os.path.join(folder, rel)) if folder else rel, rel, names))
    return tuple(out)


def included_kernel_hint(model: SourceModel, command: str = "suggest", name: str | None = None) -> str:
    """The clause that says where the kernels of ``model``'s included headers are (``"; it includes dwconv.cuh,
    which defines dwconv3x3: run htam suggest dwconv.cuh"``), ``""`` when no local header defines a kernel (or,
    with ``name``, none defines ``name``).

    Args:
        model: the loaded file.
        command: the ``htam`` subcommand to suggest.
        name: only headers that define this kernel (``--kernel dwconv3x3``).
    """
    got = [h for h in included_kernels(model) if name is None or name in h.names
           or any(n.split("(")[0].split("::")[-1] == name for n in h.names)]
    if not got:
        return ""
    parts = [f"{h.included_as}, which defines {', '.join(h.names)}" for h in got]
    return f"; it includes {' and '.join(parts)}: run htam {command} {got[0].path}" + (
        " (or another of them)" if len(got) > 1 else "")
