"""Statement macros that open a loop, read as the loop they expand to.

Framework CUDA spells its grid-stride loop through a statement macro: ATen's
``#define CUDA_KERNEL_LOOP_TYPE(i, n, T) int64_t _i_n_d_e_x = blockIdx.x * blockDim.x + threadIdx.x; for (T i =
_i_n_d_e_x; _i_n_d_e_x < (n); _i_n_d_e_x += blockDim.x * gridDim.x, i = _i_n_d_e_x)``, Caffe's and mmcv's
``#define CUDA_1D_KERNEL_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x *
gridDim.x)``, used as ``CUDA_KERNEL_LOOP(index, numel) { ... }`` or ``KERNEL_LOOP(i, n) y[i] = x[i];``. tree-sitter
reads such a use as a nested function definition or garbage, so the kernel had no loop and its index was an unknown
name. :func:`expanded_view` gives the kernel's file with every such use inside the kernel's body replaced by its
expansion (what nvcc compiles: the macro's body with the arguments substituted, nested macro calls expanded,
:func:`~htam_core.source.analysis.macros.replacement`), written on the use's own line so that every line number
stays the user's. The analysis reads the kernel's facts there (:func:`htam_core.source.analysis.analyze`), and a
step is made on that view and written back to the user's file as line edits: the macro's use becomes the loop it
stands for, written out.

A macro counts when its replacement, after the expansion of the statement macros it calls in turn (``CUDA_KERNEL_LOOP``
calling ``CUDA_KERNEL_LOOP_TYPE``), is zero or more declarations or expression statements followed by one ``for``
header with nothing after its closing parenthesis (C11 6.10.3: the use is replaced by that text, and the statement
that follows the use becomes the loop's body). Other statement macros (``do { } while (0)``, a body with braces) are
left as they are.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from htam_core.source.analysis.includes import local_headers
from htam_core.source.analysis.macros import MAX_DEPTH, MacroTable, arg_spans, macro_table, replacement
from htam_core.source.api import parse_text
from htam_core.source.model import Kernel, SourceModel

__all__ = ["ExpandedView", "expand_loop_macros", "expanded_view", "loop_macro_text"]

_IDENT = re.compile(r"[A-Za-z_]\w*")
_BLANK = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_FOR = re.compile(r"\bfor\s*\(")
_CALL = re.compile(r"^([A-Za-z_]\w*)\s*\(")
#: What may come before a statement: the end of another statement, a block's start or end, a label or `else`.
_STATEMENT_START = re.compile(r"(?:[;{}:)]|\belse)\s*$")


def loop_macro_text(table: MacroTable, name: str, args: list[str], at: int) -> str | None:
    """The text a use ``name(args)`` at byte ``at`` of its unit stands for when ``name`` is a statement macro that
    expands to a ``for`` header (optionally after declarations), on one line; else ``None``.

    Args:
        table: the unit's function-like macros (:func:`~htam_core.source.analysis.macros.macro_table`).
        name: the macro's name.
        args: the use's argument texts.
        at: byte offset of the use in the unit (the definition in effect there is used).
    """
    for _ in range(MAX_DEPTH):
        d = table.at(name, at)
        if d is None or not d.substitutable:
            return None
        text = replacement(d, args, table, at)
        if text is None:
            return None
        text = " ".join(text.split())
        call = _CALL.match(text)
        call = call if call is not None and table.at(call.group(1), at) is not None else None
        spans, end = arg_spans(text, call.end() - 1) if call is not None else (None, 0)
        if call is None or spans is None or end != len(text):
            return text if _ends_in_for_header(text) else None
        name, args = call.group(1), [text[s:e] for s, e in spans]  # a statement macro calling another one
    return None


def _ends_in_for_header(text: str) -> bool:
    """Whether ``text`` is statements followed by one ``for (...)`` header that ends it."""
    code = _BLANK.sub(lambda m: " " * len(m.group(0)), text)
    fors = list(_FOR.finditer(code))
    if not fors:
        return False
    head = fors[-1]
    before = code[:head.start()].strip()
    if before and not before.endswith(";"):
        return False
    spans, end = arg_spans(code, head.end() - 1)
    return spans is not None and not code[end:].strip() and "{" not in before and "}" not in before


def expand_loop_macros(text: str, start: int, end: int, table: MacroTable) -> tuple[str, int] | None:
    """``text`` with each use of a loop macro between bytes ``start`` and ``end`` (a kernel's body) replaced by
    its expansion, and how many uses were replaced; ``None`` when there is none.

    Offsets are UTF-8 bytes of ``text``; the expansion is written on one line (no line numbers move).
    """
    data = text.encode("utf-8")
    # scanned as latin-1 (one character per byte), comments and literals blanked: offsets are the unit's bytes
    code = _BLANK.sub(lambda m: " " * len(m.group(0)), data[:end].decode("latin-1"))
    names = table.names()
    out: list[bytes] = []
    pos, count = 0, 0
    for m in _IDENT.finditer(code, start):
        if m.group(0) not in names or m.start() < pos or not _STATEMENT_START.search(code[start:m.start()]):
            continue
        j = m.end()
        while j < len(code) and code[j] in " \t\r\n":
            j += 1
        if j >= len(code) or code[j] != "(":
            continue
        spans, close = arg_spans(code, j)
        if spans is None:
            continue
        args = [data[a:b].decode("utf-8", "replace") for a, b in spans]
        exp = loop_macro_text(table, m.group(0), args if args != [""] else [], m.start())
        if exp is None:
            continue
        out += [data[pos:m.start()], exp.encode("utf-8"), b"\n" * data[m.start():close].count(b"\n")]
        pos, count = close, count + 1
    if not count:
        return None
    out.append(data[pos:])
    return b"".join(out).decode("utf-8", "surrogatepass"), count


@dataclass(frozen=True)
class ExpandedView:
    """A kernel's file with the loop macros of the kernel's body expanded (:func:`expanded_view`).

    Attributes:
        model: the file read with the uses expanded (same path and language; every line number the user's).
        kernel: the kernel in ``model``.
        uses: how many macro uses were expanded.
    """

    model: SourceModel
    kernel: Kernel
    uses: int


_MAX = 64
_views: OrderedDict[tuple, ExpandedView | None] = OrderedDict()
_lock = threading.Lock()


def expanded_view(model: SourceModel, kernel: Kernel) -> ExpandedView | None:
    """The :class:`ExpandedView` of ``kernel`` (one of ``model.kernels``) when its body uses a statement macro that
    opens a loop, else ``None`` (also for a kernel the expanded text no longer gives back). Cached per file text and
    kernel position. Errors: none."""
    if "define" not in model.text or kernel.incomplete:
        return None
    key = (model.path, model.text, kernel.name, kernel.name_span.start)
    with _lock:
        if key in _views:
            return _views[key]
    view = _build(model, kernel)
    with _lock:
        _views[key] = view
        while len(_views) > _MAX:
            _views.popitem(last=False)
    return view


def _build(model: SourceModel, kernel: Kernel) -> ExpandedView | None:
    data = model.text.encode("utf-8")
    headers = tuple(h.src for h in local_headers(data, model.path)) if model.path else ()
    table = macro_table(data, headers)
    if not any(d.refusal.startswith("the macro's body is a statement") for d in table.defs):
        return None
    done = expand_loop_macros(model.text, kernel.body_span.start, kernel.body_span.end, table)
    if done is None:
        return None
    text, uses = done
    m2 = parse_text(text, model.file_language, model.path)
    k2 = next((k for k in m2.kernels if k.name == kernel.name and k.name_span.start == kernel.name_span.start
               and not k.incomplete), None)
    return ExpandedView(m2, k2, uses) if k2 is not None else None
