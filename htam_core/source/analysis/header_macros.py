"""Launch macros a file gets from the headers it includes: ``#include "common.cuh"`` holding
``#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)``, used as ``LAUNCH(scale, blocks, threads, x, y, n);``.

A launch written through a macro is read from the macro table of the unit (:mod:`.launch_macros`); a macro
defined in a header is not in the text of the file that uses it. :func:`included_launch_macros` follows the
file's quoted includes (:func:`~htam_core.source.analysis.includes.header_paths`: each name looked up in the
folder of the file that holds the ``#include`` line, then in the given ``-I`` folders such as the workspace
root, nested includes followed a few levels deep, each header once, so include cycles end; ``<...>`` system
headers are skipped) and keeps the launch macros still defined at each header's end (an ``#undef`` in the
header ends one). :func:`define_lines` writes them back as one ``#define`` line each, the text a joint unit
puts before the including file's text so that the same macro table reads the uses: the use's arguments stay
the user's text, so a step edits them where they are written.

Idea source: the C preprocessor's quoted ``#include`` search ([cpp.include]) and macro scope (C11 6.10.3.5: a
definition holds from its ``#define`` to the end of the translation unit or an ``#undef``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from htam_core.source.analysis.includes import MAX_BYTES, header_paths
from htam_core.source.analysis.launch_macros import launch_macros
from htam_core.source.analysis.macros import FunctionMacro

__all__ = ["define_lines", "included_launch_macros"]


def _header_bytes(path: Path) -> bytes:
    """The bytes of header ``path``; ``b""`` when it cannot be read or is larger than :data:`MAX_BYTES`."""
    try:
        return path.read_bytes() if path.stat().st_size <= MAX_BYTES else b""
    except OSError:
        return b""


def included_launch_macros(src: bytes, path: str | Path, include_dirs: Iterable[str | Path] = ()
                           ) -> tuple[FunctionMacro, ...]:
    """The launch macros (:func:`~htam_core.source.analysis.launch_macros.launch_macros`) of the local headers
    file ``path`` includes, innermost header first, each still defined at the end of its header.

    Args:
        src: the including file's bytes (UTF-8).
        path: its file path (quoted includes resolve against its folder first).
        include_dirs: further folders to look in, in order (the workspace root, ``-I`` folders).

    Returns:
        The macros, their ``start`` ``-1`` (from a header); ``()`` when ``src`` has no quoted include or no
        header found holds a launch macro. Errors: none (an unreadable header is skipped).
    """
    if b"include" not in src:
        return ()
    out: list[FunctionMacro] = []
    for p in header_paths(src, path, include_dirs)[0]:
        out.extend(d for d in launch_macros(_header_bytes(p)) if d.end is None)
    return tuple(out)


def _param_list(d: FunctionMacro) -> str:
    """``d``'s parameter list as written in a ``#define`` (``k, g, b, ...`` or GNU ``k, args...``)."""
    params = list(d.params)
    if d.variadic:
        params[-1] = "..." if params[-1] == "__VA_ARGS__" else params[-1] + "..."
    return ", ".join(params)


def define_lines(macros: Iterable[FunctionMacro]) -> str:
    """One ``#define NAME(params) body`` line per macro of ``macros`` (bodies are kept joined on one line by the
    macro table), joined with newlines; ``""`` for none. Reading the lines with
    :func:`~htam_core.source.analysis.macros.macro_table` gives the same macros back."""
    return "\n".join(f"#define {d.name}({_param_list(d)}) {d.body}" for d in macros)
