"""Launches written through a function-like macro: ``#define LAUNCH(k, n, ...) k<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)``
used as ``LAUNCH(l1_err, n, a, b, s, n);``.

tree-sitter parses the use as a call of an unknown function, so the launch it stands for (kernel, grid, block,
arguments) is invisible. :func:`launch_macro_uses` reads every ``#define NAME(params) body`` whose body holds a
``<<<...>>>`` launch and every use of it in code, and gives the text the use expands to: the named parameters
replaced by their arguments and ``__VA_ARGS__`` by the remaining arguments joined with ``", "`` (C11 6.10.3.1;
a variadic macro called with no variadic argument gets an empty ``__VA_ARGS__``). Expression macros called in the
arguments or in the body are expanded in turn (:func:`~htam_core.source.analysis.macros.expansion`) where they
can be; others are left as written (nvcc compiles the same text).

:func:`launch_view` is the text with every such use replaced by its expansion on the same line (line breaks of
a use that spans lines are kept after it), so a reader that works by lines (the harness inference from
``main()``) sees the launch itself. Byte offsets after a use shift; nothing that edits the user's text reads
this view.

Given up (the use stays an opaque call): a body that stringizes or pastes tokens (``#``, ``##``), a use with fewer arguments than named parameters or extra arguments to a non-variadic
macro, and a macro defined after the use or ``#undef``-ed before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from htam_core.source.analysis.macros import FunctionMacro, arg_spans, expansion, macro_table

__all__ = ["LaunchMacro", "LaunchMacroUse", "launch_macro_uses", "launch_macros", "launch_view"]

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)\n]*)\)((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_UNDEF = re.compile(rb"^[ \t]*#[ \t]*undef[ \t]+([A-Za-z_]\w*)", re.M)
_PREPROC_LINE = re.compile(rb"^[ \t]*#[^\n]*(?:\\\r?\n[^\n]*)*", re.M)
_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_CALLEE = re.compile(r"([A-Za-z_][\w:]*(?:\s*<[^<>;]*>)?)\s*<<<")


@dataclass(frozen=True)
class LaunchMacro:
    """One ``#define NAME(params) body`` whose body launches a kernel.

    Attributes:
        name: the macro's name.
        params: its parameters, in order; a variadic one last, as ``__VA_ARGS__`` for ``...`` or ``args`` for a GNU
            ``args...``.
        variadic: whether it ends in ``...`` or ``name...`` (its last parameter takes the remaining arguments).
        body: the replacement text, continuation lines joined and comments removed.
        start: byte offset of the ``#define``; end: of the ``#undef`` or redefinition that ends it, or ``None``.
        line: 1-based line of the ``#define``.
    """

    name: str
    params: tuple[str, ...]
    variadic: bool
    body: str
    start: int
    end: int | None
    line: int

    def named(self) -> tuple[str, ...]:
        """The parameters a use must give one argument each (the variadic one left out)."""
        return self.params[:-1] if self.variadic else self.params


@dataclass(frozen=True)
class LaunchMacroUse:
    """One use of a :class:`LaunchMacro` in code.

    Attributes:
        macro: the macro used.
        start, end: the use's bytes in the unit (the name to the closing parenthesis).
        text: what the use expands to (``l1_err<<<((n) + 255) / 256, 256>>>(a, b, s, n)``), on one line.
        callee: the launched function as written in the expansion (``l1_err``, ``k<float>``).
        kernel: its unqualified name without template arguments (``l1_err``).
        args: the use's argument texts.
        arg_spans: the unit bytes ``(start, end)`` of each argument of the use, in order (blanks around left out).
    """

    macro: LaunchMacro
    start: int
    end: int
    text: str
    callee: str
    kernel: str
    args: tuple[str, ...]
    arg_spans: tuple[tuple[int, int], ...] = ()


def _clean(raw: bytes) -> str:
    """A ``#define`` body with continuation lines joined and comments removed, on one line."""
    text = re.sub(rb"\\\r?\n", b" ", raw).decode("utf-8", "replace")
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    return " ".join(text.split())


def _macro(m: re.Match[bytes], src: bytes) -> LaunchMacro | None:
    """The launch macro a ``#define`` match defines, or ``None`` (not a launch whose kernel is a parameter, or a
    form given up)."""
    body = _clean(m.group(3))
    if "<<<" not in body or "#" in _LITERAL.sub('""', body):
        return None
    raw = [p.strip() for p in m.group(2).decode("utf-8", "replace").split(",")] if m.group(2).strip() else []
    variadic = bool(raw) and raw[-1].endswith("...")
    named = raw[:-1] if variadic else raw
    rest = (raw[-1][:-3].strip() or "__VA_ARGS__") if variadic else ""
    c = _CALLEE.search(body)
    if not all(_IDENT.fullmatch(p) for p in [*named, rest or "_"]) or c is None or c.group(1).split("<")[0].strip() not in named:
        return None  # a body that names its kernel is read as a launcher of its own (the workspace's fragments)
    return LaunchMacro(m.group(1).decode(), tuple(named) + ((rest,) if rest else ()), variadic, body, m.start(), None,
                       src.count(b"\n", 0, m.start()) + 1)


@lru_cache(maxsize=16)
def launch_macros(src: bytes) -> tuple[LaunchMacro, ...]:
    """The launch macros of ``src`` (a unit's UTF-8 bytes), each with where an ``#undef`` or redefinition ends
    it. Errors: none; a definition that cannot be read is left out."""
    if b"<<<" not in src or b"define" not in src:
        return ()
    out: list[LaunchMacro] = []
    ends = sorted([(m.start(), m.group(1).decode()) for m in _UNDEF.finditer(src)]
                  + [(m.start(), m.group(1).decode()) for m in _DEFINE.finditer(src)])
    for m in _DEFINE.finditer(src):
        d = _macro(m, src)
        if d is None:
            continue
        end = next((at for at, name in ends if name == d.name and at > d.start), None)
        out.append(LaunchMacro(d.name, d.params, d.variadic, d.body, d.start, end, d.line))
    return tuple(out)


def _bind(d: LaunchMacro, args: list[str]) -> dict[str, str] | None:
    """Parameter -> argument text for a use of ``d`` with ``args`` (``__VA_ARGS__`` the rest), or ``None``."""
    named = d.named()
    if args == [""] and not named:
        args = []
    if len(args) < len(named) or (len(args) > len(named) and not d.variadic):
        return None
    bind = dict(zip(named, args[:len(named)], strict=True))
    if d.variadic:
        bind[d.params[-1]] = ", ".join(args[len(named):])
    return bind


def _expand(text: str, src: bytes, at: int) -> str:
    """``text`` with the expression macros of ``src`` it calls expanded where they can be (else as written)."""
    table = macro_table(src)
    if not table.defs:
        return text
    wrapper = FunctionMacro("__htam_launch_arg", (), text, -1, None)
    out = expansion(wrapper, [], table, at)
    return text if out is None else out


def _substitute(d: LaunchMacro, bind: dict[str, str], src: bytes, at: int) -> str:
    """``d``'s body with each parameter (and ``__VA_ARGS__``) replaced by its bound, expanded argument."""
    code = _LITERAL.sub(lambda m: " " * len(m.group(0)), d.body)
    out, pos = [], 0
    for m in _IDENT.finditer(code):
        if m.group(0) in bind:
            out += [d.body[pos:m.start()], _expand(bind[m.group(0)], src, at)]
            pos = m.end()
    return _expand("".join(out) + d.body[pos:], src, at)


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
    names = "|".join(re.escape(d.name) for d in {d.name: d for d in macros}.values())
    for m in re.finditer(r"\b(" + names + r")\s*\(", text):
        d = next((x for x in reversed(macros) if x.name == m.group(1) and x.start < m.start()
                  and (x.end is None or m.start() < x.end)), None)
        use = _use(d, src, text, m) if d is not None else None
        if use is not None:
            out.append(use)
    return tuple(out)


def _use(d: LaunchMacro, src: bytes, code: str, m: re.Match[str]) -> LaunchMacroUse | None:
    """The use of ``d`` whose name and ``(`` ``m`` matched in ``code`` (blanked ``src``), or ``None``."""
    spans, end = arg_spans(code, m.end() - 1)
    if spans is None:
        return None
    args = [" ".join(src[s:e].decode("utf-8", "replace").split()) for s, e in spans]
    bind = _bind(d, args)
    if bind is None:
        return None
    exp = " ".join(_substitute(d, bind, src, m.start()).split())
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
