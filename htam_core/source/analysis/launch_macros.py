"""Launches written through a function-like macro: ``#define LAUNCH(k, n, ...) k<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)``
used as ``LAUNCH(l1_err, n, a, b, s, n);``.

tree-sitter parses the use as a call of an unknown function, so the launch it stands for (kernel, grid, block,
arguments) is invisible. :func:`launch_macro_uses` takes the unit's function-like macros from
:func:`~htam_core.source.analysis.macros.macro_table` (variadic ones and statement bodies included), keeps those
whose body holds a ``<<<...>>>`` launch of one of their parameters (:func:`launch_macros`), and gives the text
each use in code expands to (:func:`~htam_core.source.analysis.macros.replacement`): the named parameters
replaced by their arguments and ``__VA_ARGS__`` (or a GNU ``args...``) by the remaining arguments joined with
``", "`` (C11 6.10.3.1; a variadic macro called with no variadic argument gets an empty one). Expression macros
called in the arguments or in the body are expanded in turn where they can be; others are left as written
(nvcc compiles the same text).

:func:`launch_view` is the text with every such use replaced by its expansion on the same line (line breaks of
a use that spans lines are kept after it), so a reader that works by lines (the harness inference from
``main()``) sees the launch itself. Byte offsets after a use shift; nothing that edits the user's text reads
this view.

Given up (the use stays an opaque call): a body that stringizes or pastes tokens (``#``, ``##``), a use with
fewer arguments than named parameters or extra arguments to a non-variadic macro, and a macro defined after the
use or ``#undef``-ed (or redefined) before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from htam_core.source.analysis.macros import FunctionMacro, arg_spans, macro_table, replacement

__all__ = ["LaunchMacroUse", "launch_macro_uses", "launch_macros", "launch_view"]

_PREPROC_LINE = re.compile(rb"^[ \t]*#[^\n]*(?:\\\r?\n[^\n]*)*", re.M)
_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_CALLEE = re.compile(r"([A-Za-z_][\w:]*(?:\s*<[^<>;]*>)?)\s*<<<")


@dataclass(frozen=True)
class LaunchMacroUse:
    """One use of a launch macro (:func:`launch_macros`) in code.

    Attributes:
        macro: the macro used (its definition in the unit's macro table).
        start, end: the use's bytes in the unit (the name to the closing parenthesis).
        text: what the use expands to (``l1_err<<<((n) + 255) / 256, 256>>>(a, b, s, n)``), on one line.
        callee: the launched function as written in the expansion (``l1_err``, ``k<float>``).
        kernel: its unqualified name without template arguments (``l1_err``).
        args: the use's argument texts.
        arg_spans: the unit bytes ``(start, end)`` of each argument of the use, in order (blanks around left out).
    """

    macro: FunctionMacro
    start: int
    end: int
    text: str
    callee: str
    kernel: str
    args: tuple[str, ...]
    arg_spans: tuple[tuple[int, int], ...] = ()


def _launches(d: FunctionMacro) -> bool:
    """Whether ``d``'s body launches a kernel named by one of its parameters (a body that names its kernel is read
    as a launcher of its own: the workspace's fragments) and can be substituted."""
    c = _CALLEE.search(d.body) if d.substitutable and "<<<" in d.body else None
    return c is not None and c.group(1).split("<")[0].strip() in d.named()


@lru_cache(maxsize=16)
def launch_macros(src: bytes) -> tuple[FunctionMacro, ...]:
    """The launch macros of ``src`` (a unit's UTF-8 bytes): its function-like macros (each with where an
    ``#undef`` or redefinition ends it) whose body launches a kernel that is one of their parameters. Errors:
    none; a definition that cannot be read is left out."""
    if b"<<<" not in src or b"define" not in src:
        return ()
    return tuple(d for d in macro_table(src).defs if _launches(d))


def _code(src: bytes) -> bytes:
    """``src`` with comments, literals and preprocessor lines blanked at equal length."""
    def blank(m: re.Match[bytes]) -> bytes:
        return re.sub(rb"[^\n]", b" ", m.group(0))
    return _PREPROC_LINE.sub(blank, _NOISE.sub(blank, src))


@lru_cache(maxsize=16)
def launch_macro_uses(src: bytes) -> tuple[LaunchMacroUse, ...]:
    """Every use in code of a launch macro of ``src`` (:func:`launch_macros`) in effect there, with its
    expansion, in source order.

    Args:
        src: a unit's UTF-8 bytes (a ``.cu`` file).

    Errors: none; a use that cannot be read (unbalanced parentheses, wrong argument count) is left out.
    """
    macros = launch_macros(src)
    if not macros:
        return ()
    text = _code(src).decode("latin-1")  # one character per byte: offsets are the unit's
    out = []
    table = macro_table(src)
    names = "|".join(re.escape(d.name) for d in {d.name: d for d in macros}.values())
    for m in re.finditer(r"\b(" + names + r")\s*\(", text):
        d = table.at(m.group(1), m.start())
        use = _use(d, src, text, m) if d is not None and d in macros else None
        if use is not None:
            out.append(use)
    return tuple(out)


def _use(d: FunctionMacro, src: bytes, code: str, m: re.Match[str]) -> LaunchMacroUse | None:
    """The use of ``d`` whose name and ``(`` ``m`` matched in ``code`` (blanked ``src``), or ``None``."""
    spans, end = arg_spans(code, m.end() - 1)
    if spans is None:
        return None
    args = [" ".join(src[s:e].decode("utf-8", "replace").split()) for s, e in spans]
    full = replacement(d, args, macro_table(src), m.start())
    exp = " ".join(full.split()) if full is not None else ""
    c = _CALLEE.search(exp)
    if c is None:
        return None
    callee = " ".join(c.group(1).split())
    kernel = callee.split("<")[0].split("::")[-1].strip()
    return LaunchMacroUse(d, m.start(), end, exp, callee, kernel, tuple(args), tuple(spans))


def launch_view(src: bytes) -> bytes:
    """``src`` with every launch macro use (:func:`launch_macro_uses`) replaced by its expansion, each on the line
    the use starts on (the line breaks inside a use follow it): line numbers are the user's, byte offsets after
    a use are not. ``src`` itself when it has none."""
    uses = launch_macro_uses(src)
    if not uses:
        return src
    out, pos = [], 0
    for u in uses:
        out += [src[pos:u.start], u.text.encode("utf-8"), b"\n" * src.count(b"\n", u.start, u.end)]
        pos = u.end
    return b"".join(out) + src[pos:]
