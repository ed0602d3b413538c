"""Which definition of a CUDA kernel name a host file's launch binds to: the one its translation unit sees.

Two kernels of one name often live side by side in one project (a naive and a tuned ``binarize_kernel``, each in
its own header, each launched by its own ``launch.cu``). A ``name<<<...>>>(...)`` launch binds to the definition
the compiler sees in that translation unit: the file's own text and every header it includes, transitively. So a
launch of the user's kernel is one whose unit sees the user's definition; a file whose unit sees only another
definition of that name launches that other kernel, not the user's.

:func:`binding` answers for one file, reading its quoted ``#include "..."`` closure
(:func:`~htam_core.source.analysis.includes.header_paths`: each name looked up in the folder of the file that holds
the line, then in the given ``-I`` folders; ``<...>`` system headers are never read). A file whose unit sees no
definition at all (a separately compiled file with a declaration, or a fragment such as ``launch.cu`` that is
itself ``#include``d after the kernel's header) is decided by the files that include it
(:func:`binding_through_includers`): the translation units it is part of.

Idea source: the C++ one-definition rule and name lookup ([basic.def.odr], [basic.lookup]): a call names the
declaration visible at its point in its translation unit; the C preprocessor's quoted ``#include`` search
([cpp.include]).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from htam_core.source.analysis.includes import MAX_BYTES, MAX_DEPTH, header_paths

__all__ = ["OTHER", "OURS", "UNSEEN", "binding", "binding_through_includers", "defines_kernel"]

#: the unit sees the user's definition (the kernel's own file)
OURS = "ours"
#: the unit sees another definition of that name, not the user's
OTHER = "other"
#: the unit sees no definition of that name (separate compilation: the link decides)
UNSEEN = "unseen"


def defines_kernel(data: bytes, name: str) -> bool:
    """Whether ``data`` (a file's bytes) defines a CUDA kernel ``name`` itself: a ``__global__`` definition with a
    body (``__global__ void name(...) {``, templates and qualifiers between allowed)."""
    n = re.escape(name.encode())
    return re.search(rb"__global__[^;{}]*\b" + n + rb"\s*(?:<[^;{}]*>\s*)?\([^;{}]*\)[^;{}]*\{", data) is not None


def _bytes(path: Path) -> bytes:
    """The bytes of ``path``; ``b""`` when unreadable or larger than :data:`MAX_BYTES`."""
    try:
        return path.read_bytes() if path.stat().st_size <= MAX_BYTES else b""
    except OSError:
        return b""


def binding(path: str | Path, data: bytes, own: str | Path, name: str,
            include_dirs: Iterable[str | Path] = ()) -> str:
    """Which definition of kernel ``name`` the translation unit of file ``path`` sees.

    Args:
        path: the file that may launch the kernel; data: its bytes (an editor's text may differ from disk).
        own: the file that holds the user's definition.
        name: the kernel's name.
        include_dirs: the ``-I`` folders to look in after the including file's own folder.

    Returns:
        :data:`OURS` when the file is ``own`` or includes it (transitively), :data:`OTHER` when it defines
        ``name`` itself or includes another file that does (and not ``own``), else :data:`UNSEEN`. Never raises.
    """
    own_p = Path(own).resolve()
    if Path(path).resolve() == own_p:
        return OURS
    if defines_kernel(data, name):
        return OTHER
    found = header_paths(data, path, include_dirs)[0] if b"include" in data else ()
    if own_p in found:
        return OURS
    return OTHER if any(defines_kernel(_bytes(p), name) for p in found) else UNSEEN


def _includes_name(data: bytes, file_name: str) -> bool:
    """Whether ``data`` has a quoted ``#include`` whose path ends in ``file_name``."""
    return re.search(rb'#[ \t]*include[ \t]*"(?:[^"\n]*/)?' + re.escape(file_name.encode()) + rb'"', data) is not None


def binding_through_includers(path: str | Path, own: str | Path, name: str, files: Sequence[Path],
                              read: Callable[[str], bytes | None],
                              include_dirs: Iterable[str | Path] = ()) -> str:
    """Which definition a file whose own unit sees none (:data:`UNSEEN`) is compiled with: the bindings of the
    files that include it, transitively (``naive.cu`` with ``#include "launch.cu"``), up to
    :data:`~htam_core.source.analysis.includes.MAX_DEPTH` levels.

    Args:
        path: the file; own, name, include_dirs: as for :func:`binding`.
        files: the workspace's files that may include it; read: their bytes by path (``None``: unreadable).

    Returns:
        :data:`OURS` when some including unit sees the user's definition, :data:`OTHER` when there are including
        units and every one that sees a definition sees another one, else :data:`UNSEEN` (no file includes it:
        compiled on its own). Never raises.
    """
    dirs = list(include_dirs)
    target = Path(path).resolve()
    frontier, seen, verdicts = [target], {target}, set()
    for _ in range(MAX_DEPTH):
        nxt = []
        for f in files:
            fp = f.resolve()
            if fp in seen:
                continue
            data = read(str(f))
            if not data or not any(_includes_name(data, t.name) for t in frontier):
                continue
            if not set(frontier) & set(header_paths(data, f, dirs)[0]):
                continue
            seen.add(fp)
            got = binding(f, data, own, name, dirs)
            if got == UNSEEN:
                nxt.append(fp)
            else:
                verdicts.add(got)
        if OURS in verdicts or not nxt:
            break
        frontier = nxt
    return OURS if OURS in verdicts else OTHER if verdicts else UNSEEN
