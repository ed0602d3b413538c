"""A kernel's ``__launch_bounds__``, in every spelling, as one fact: the thread limit, whether it follows a template
parameter, and the bytes to rewrite when a step changes the block size.

Valid kernels write the bounds in several ways, and nvcc reads them all:

- ``__global__ void __launch_bounds__(256) k(...)`` and ``__launch_bounds__(256, 2)`` (with a minimum of
  blocks per SM), also before ``__global__`` or between the return type and the name;
- through a named constant or a template parameter: ``__launch_bounds__(BLOCK)``, ``template <int BLOCK>``;
- through a function-like macro of the file or its headers, as PyTorch's ATen does:
  ``#define C10_LAUNCH_BOUNDS_1(max_threads_per_block) __launch_bounds__((max_threads_per_block))`` and
  ``__global__ void C10_LAUNCH_BOUNDS_1(256) k(...)``;
- through an object-like macro: ``#define LB __launch_bounds__(128)``.

:func:`launch_bounds` reads the text before the kernel's declarator (where the grammar may have parsed the
specifier, left it in an error node or read a macro call as a type), finds the specifier or the macro call, and
evaluates its first argument with the unit's constants (:class:`~htam_core.source.analysis.constants.ConstEnv`).
A step that changes the block size (retiling, retuning) needs the limit to stay at least the new block's threads
(CUDA C++ Programming Guide, "Launch Bounds": a launch with more threads per block than the limit fails), so the
fact also says which literal sets it, where the kernel's own text holds that literal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.instantiations import template_param_names
from htam_core.source.analysis.macros import arg_spans, expansion, macro_table
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.unit import CudaSource

__all__ = ["LaunchBounds", "launch_bounds", "launch_bounds_node"]

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)([^\n]*)", re.MULTILINE)
_SPECIFIER = re.compile(r"__launch_bounds__\s*\(")
_INT = re.compile(r"^\(*\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)*$")


@dataclass(frozen=True)
class LaunchBounds:
    """The kernel's ``__launch_bounds__`` as one fact.

    Attributes:
        max_threads: the thread limit (threads per block), or ``None`` when it is not a compile-time integer of
            this unit (a template parameter: see ``template``; an unknown name).
        text: the limit's argument as written at the kernel (``"256"``, ``"BLOCK"``), or the macro call's text.
        template: the limit names a template parameter of the kernel, so it follows each instantiation's argument.
        literal_span: file bytes of an integer literal written at the kernel (or as the macro call's argument
            that becomes the limit) that sets ``max_threads``: the one place to rewrite it for this kernel alone;
            ``None`` when the limit comes from a named constant or a macro body shared with other code.
        min_blocks: the second argument (minimum resident blocks per SM) as written, or ``None``.
        macro: the macro through which the bounds are written, or ``None``.
    """

    max_threads: int | None
    text: str
    template: bool = False
    literal_span: tuple[int, int] | None = None
    min_blocks: str | None = None
    macro: str | None = None


def launch_bounds_node(source: CudaSource) -> Node | None:
    """The ``__launch_bounds__(...)`` node of the kernel, if any (also inside ERROR recovery); the kernel's
    ``function_definition`` when the bounds are written before the declarator in a form the grammar does not read,
    or through a macro of the file that stands for them (``#define C10_LAUNCH_BOUNDS_1(n) __launch_bounds__((n))``)."""
    func, src, declarator = source.func, source.src, source.declarator
    for c in func.children:
        if syn.is_launch_bounds(c) or (syn.is_error(c) and "__launch_bounds__" in source.t(c)):
            return c
    if b"__launch_bounds__" in src[func.start_byte : declarator.start_byte]:
        return func
    head = src[_head_start(source) : declarator.start_byte].decode("latin-1")
    if any(re.search(r"\b" + re.escape(n) + r"\b", head) for n in _bounds_macros(source)):
        return func
    return None


def _bounds_macros(source: CudaSource) -> list[str]:
    """Names of the macros (of the unit and the headers it includes) whose expansion holds ``__launch_bounds__``:
    those whose body writes it, and, transitively, those whose body calls such a macro, in name order."""
    bodies: dict[str, str] = {}
    for src in (*(h.src for h in source.env.headers()), source.src):
        for m in _DEFINE.finditer(src):
            bodies[m.group(1).decode("latin-1")] = m.group(2).decode("latin-1")
    found = {n for n, b in bodies.items() if "__launch_bounds__" in b}
    grew = True
    while grew:
        more = {n for n, b in bodies.items() if n not in found and any(re.search(r"\b" + re.escape(f) + r"\b", b)
                                                                      for f in found)}
        found |= more
        grew = bool(more)
    return sorted(found)


def _head_start(source: CudaSource) -> int:
    """Where the kernel's head text starts: its definition, or, when the file defines launch-bounds macros, the
    end of the previous statement, block or preprocessor line (the grammar may parse ``__global__ void LB(256)``
    apart from ``k(...)``)."""
    func, src = source.func, source.src
    if not _bounds_macros(source):
        return func.start_byte
    fs = func.start_byte
    back = [src.rfind(b";", 0, fs), src.rfind(b"}", 0, fs)]
    back += [m.end() - 1 for m in re.finditer(rb"(?m)^[ \t]*#[^\n]*$", src[:fs])][-1:]
    return min(fs, max(back) + 1)


def _arg_spans(code: str, open_at: int) -> list[tuple[int, int]] | None:
    """Offsets ``(start, end)`` in ``code`` of each argument of the call whose ``(`` is at ``open_at``
    (:func:`~htam_core.source.analysis.macros.arg_spans`); ``None`` when the parentheses do not close."""
    return arg_spans(code, open_at)[0]


def _bare(text: str) -> str:
    """``text`` without surrounding parentheses (``((n))`` is ``n``) and blanks."""
    t = text.strip()
    while t.startswith("("):
        spans, end = arg_spans(t, 0)
        if spans is None or len(spans) != 1 or end != len(t):
            break
        t = t[spans[0][0]:spans[0][1]]
    return t


def _value(source: CudaSource, text: str, at: int) -> int | None:
    v = source.env.value_of_text(text, at)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _specifier(source: CudaSource, head: str, base: int) -> LaunchBounds | None:
    """The fact of a ``__launch_bounds__(...)`` written in ``head`` (the kernel's head text starting at unit
    byte ``base``)."""
    m = _SPECIFIER.search(head)
    if m is None:
        return None
    spans = _arg_spans(head, m.end() - 1)
    if not spans:
        return LaunchBounds(None, head[m.start():].strip())
    s, e = spans[0]
    arg = head[s:e]
    tparams = template_param_names(source.func, source.src)
    template = _bare(arg) in tparams
    literal = (source.base + base + s, source.base + base + e) if _INT.match(arg) else None
    return LaunchBounds(None if template else _value(source, arg, base + s), arg, template, literal,
                        head[spans[1][0]:spans[1][1]] if len(spans) > 1 else None)


def _through_macro(source: CudaSource, head: str, base: int) -> LaunchBounds | None:
    """The fact of bounds written through a macro named in ``head``: a function-like macro whose expansion holds
    ``__launch_bounds__`` (the limit's literal is rewritable when it is the call's argument that becomes the
    limit), or an object-like one (read, never rewritten)."""
    table = macro_table(source.src, tuple(h.src for h in source.env.headers()))
    for name in _bounds_macros(source):
        use = re.search(r"\b" + re.escape(name) + r"\b", head)
        if use is None:
            continue
        at = base + use.start()
        fm = table.at(name, at)
        rest = head[use.end():]
        if fm is None or not rest.lstrip().startswith("("):
            body = source.env.define_text(name)
            inner = _specifier(source, body, at) if body else None
            return LaunchBounds(inner.max_threads if inner else None, name, macro=name,
                                min_blocks=inner.min_blocks if inner else None)
        open_at = use.end() + len(rest) - len(rest.lstrip())
        spans = _arg_spans(head, open_at) or []
        args = [head[s:e] for s, e in spans]
        text = head[use.start(): spans[-1][1] + 1] if spans else name
        expanded = expansion(fm, args, table, at) if fm is not None else None
        inner = _specifier(source, expanded, at) if expanded else None
        if inner is None:
            return LaunchBounds(None, text, macro=name)
        body_spec = _SPECIFIER.search(fm.body)
        body_spans = _arg_spans(fm.body, body_spec.end() - 1) if body_spec else None
        first = _bare(fm.body[body_spans[0][0]:body_spans[0][1]]) if body_spans else ""
        literal = None
        if first in fm.params and fm.params.index(first) < len(spans):
            s, e = spans[fm.params.index(first)]
            if _INT.match(head[s:e]):
                literal = (source.base + base + s, source.base + base + e)
        return LaunchBounds(inner.max_threads, text, inner.template, literal, inner.min_blocks, name)
    return None


def launch_bounds(source: CudaSource) -> LaunchBounds | None:
    """The kernel's ``__launch_bounds__`` (:class:`LaunchBounds`) in any spelling the module docstring lists, or
    ``None`` when it has none.

    Args:
        source: the kernel's parsed unit.

    Returns:
        The fact; its ``max_threads`` is ``None`` when the limit is not a compile-time integer here (a template
        parameter sets ``template``). Never raises on half-typed text: an unreadable specifier gives a fact with
        ``max_threads`` ``None``.
    """
    if launch_bounds_node(source) is None:
        return None
    start = _head_start(source)
    head = source.src[start : source.declarator.start_byte].decode("latin-1")
    return _specifier(source, head, start) or _through_macro(source, head, start) or LaunchBounds(None, head.strip())
