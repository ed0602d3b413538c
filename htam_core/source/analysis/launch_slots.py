"""Which arguments of a launch macro's use are the launch's grid, block, shared bytes, stream and kernel arguments.

A launch written through a generic macro (``#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)`` used as
``LAUNCH(scale, blocks, 256, x, y, n);``; :mod:`~htam_core.source.analysis.launch_macros`) can be edited at the use
when each launch-configuration slot of the body's ``<<<...>>>`` is exactly one parameter of the macro (``g``, or
``(g)``) used nowhere else in the body, and the kernel's argument list is a list of parameters, the variadic one
(``__VA_ARGS__``, GNU ``args...``) last: then the use's argument bound to ``g`` *is* the grid, and changing its
text changes the launch, and nothing else (C11 6.10.3.1: an argument is substituted as written).

:func:`macro_slots` reads a macro's body into :class:`MacroSlots` (or says in one line why its launch is not
editable at a use: a body that computes the grid, ``k<<<(n + 255) / 256, 256>>>``, owns it). :func:`use_slots`
maps a use's argument spans onto the slots; :func:`macro_launch_calls` gives each such use in a parsed unit as a
:class:`~htam_core.source.analysis.launch.LaunchCall` whose configuration nodes are the use's argument nodes, so
every reader and editor of launches reads and edits the use itself.

Idea source: the C preprocessor's argument substitution (C11 6.10.3.1); the launch macros of CUDA code bases
(``LAUNCH_KERNEL(kernel, grid, block, smem, stream, ...)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from tree_sitter import Node

from htam_core.source.analysis.launch import LaunchCall, host_of
from htam_core.source.analysis.launch_macros import launch_macro_uses
from htam_core.source.analysis.macros import arg_spans

__all__ = ["SLOTS", "MacroSlots", "UseSlots", "macro_launch_calls", "macro_slots", "macro_use_refusal", "use_slots"]

#: the ``<<<...>>>`` slots, in order
SLOTS = ("grid", "block", "smem", "stream")

_CALLEE = re.compile(r"([A-Za-z_][\w:]*)\s*<<<")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')


class _Macro(Protocol):
    """What this module reads of a launch macro's definition."""

    name: str
    params: tuple[str, ...]
    variadic: bool
    body: str

    def named(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class MacroSlots:
    """Where a launch macro's body puts each of its parameters.

    Attributes:
        kernel: index (among the macro's parameters) of the launched kernel.
        config: index of the parameter each ``<<<...>>>`` slot is, in :data:`SLOTS` order (2 to 4 entries: a
            shared-bytes ``0`` or a stream fixed by the body ends them).
        args: index of the parameter each kernel argument is, in order; the variadic parameter (last) stands for
            every remaining argument of a use.
    """

    kernel: int
    config: tuple[int, ...]
    args: tuple[int, ...]


@dataclass(frozen=True)
class UseSlots:
    """The argument positions of one use of a launch macro that are the launch's parts.

    Attributes:
        kernel: position of the kernel's name among the use's arguments.
        config: position of each ``<<<...>>>`` slot's argument, in :data:`SLOTS` order.
        args: positions of the kernel's arguments, in order.
    """

    kernel: int
    config: tuple[int, ...]
    args: tuple[int, ...]


def _split(text: str) -> list[str]:
    """``text`` split at its top-level commas (none inside ``()``, ``[]``, ``{}``), each part stripped: the
    argument reader of the macro table (:func:`~htam_core.source.analysis.macros.arg_spans`) on ``(text)``."""
    call = f"({text})"
    spans, _ = arg_spans(call, 0)
    out = [call[a:b] for a, b in spans] if spans is not None else [text.strip()]
    return [] if out == [""] else out


def _bare(text: str) -> str:
    """``text`` without the parentheses wrapped around all of it (``((g))`` -> ``g``)."""
    while text.startswith("(") and text.endswith(")") and _split(text[1:-1]) == [text[1:-1].strip()] \
            and text.count("(") == text.count(")"):
        text = text[1:-1].strip()
    return text


def _launch_parts(code: str) -> tuple[str, list[str], list[str]] | None:
    """``(callee, slots, arguments)`` of the first ``callee<<<slots>>>(arguments)`` of a body, or ``None``."""
    c = _CALLEE.search(code)
    close = code.find(">>>", c.end()) if c is not None else -1
    if c is None or close < 0:
        return None
    rest = code[close + 3:].lstrip()
    if not rest.startswith("("):
        return None
    depth = 0
    for i, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return c.group(1), _split(code[c.end():close]), _split(rest[1:i])
    return None


def _config_slots(d: _Macro, config: list[str], index: dict[str, int]) -> list[int] | str:
    """The parameter index of each leading ``<<<...>>>`` slot of ``d``'s body that is one parameter, or why not. The
    grid and block must be; a shared-bytes slot written ``0`` and a stream slot that reads no parameter
    (``k<<<g, b, 0, 0>>>``) are fixed by the body, and end the editable slots."""
    out: list[int] = []
    for k, (name, text) in enumerate(zip(SLOTS, config, strict=False)):
        bare = _bare(text)
        if bare in index and not (d.variadic and bare == d.params[-1]):
            out += [index[bare]] if len(out) == k else []  # after a fixed slot: passed as written, not edited
            continue
        fixed = (name == "smem" and bare == "0") or (name == "stream" and not set(_IDENT.findall(text)) & set(index))
        if not fixed:
            what = "dynamic shared-memory size" if name == "smem" else name
            return f"the #define of {d.name} computes the {what} (`{text}`) instead of passing one of its parameters"
    return out


def macro_slots(d: _Macro) -> MacroSlots | str:
    """The slots of launch macro ``d`` (its ``name``, ``params`` with the variadic one last, ``variadic``,
    ``body`` and ``named()``), or one line saying why a use's launch cannot be edited at the use: a slot or a
    kernel argument that the body computes instead of passing one parameter, or a parameter the body reads twice.
    Errors: none."""
    code = _LITERAL.sub(lambda m: " " * len(m.group(0)), d.body)
    parts = _launch_parts(code)
    if parts is None or parts[0] not in d.params:
        return f"the #define of {d.name} does not launch one of its parameters in one <<<...>>> launch"
    callee, config, args = parts
    index = {p: k for k, p in enumerate(d.params)}
    if len(config) not in (2, 3, 4):
        return f"the #define of {d.name} has {len(config)} launch-configuration slots"
    slots = _config_slots(d, config, index)
    if isinstance(slots, str):
        return slots
    kargs = [_bare(a) for a in args]
    rest = d.params[-1] if d.variadic else None
    if any(a not in index for a in kargs) or (rest in kargs and kargs.index(rest) != len(kargs) - 1):
        return f"the #define of {d.name} computes the kernel's arguments instead of passing its parameters"
    used = [m.group(0) for m in _IDENT.finditer(code)]
    twice = next((d.params[k] for k in slots if used.count(d.params[k]) != 1), None)
    if twice is not None:
        return f"the #define of {d.name} reads its parameter {twice} more than once"
    return MacroSlots(index[callee], tuple(slots), tuple(index[a] for a in kargs))


def use_slots(d: _Macro, n_args: int) -> UseSlots | str:
    """The argument positions of a use of ``d`` with ``n_args`` arguments (:class:`UseSlots`), or one line why
    its launch is not editable at the use (:func:`macro_slots`). Errors: none."""
    s = macro_slots(d)
    if isinstance(s, str):
        return s
    named = len(d.named())
    extra = tuple(range(named, n_args)) if d.variadic else ()
    args: list[int] = []
    for k in s.args:
        args += list(extra) if d.variadic and k == len(d.params) - 1 else [k]
    return UseSlots(s.kernel, s.config, tuple(args))


def _use_node(root: Node, start: int, end: int) -> Node | None:
    """The call node (``NAME(args)``) that spans exactly ``[start, end)`` of the tree, or ``None``."""
    node = root.descendant_for_byte_range(start, end)
    while node is not None and not (node.start_byte == start and node.end_byte == end):
        node = node.parent
    while node is not None and node.type != "call_expression" and node.start_byte == start:
        node = node.parent
    return node if node is not None and node.type == "call_expression" and node.end_byte == end else None


def macro_launch_calls(root: Node, src: bytes, kernel_name: str | None = None) -> list[LaunchCall]:
    """Every use of a launch macro in ``src`` (a unit's bytes; ``root`` its tree) whose launch can be edited at
    the use (:func:`use_slots`), of ``kernel_name`` only when given, as a :class:`LaunchCall`: ``call`` is the use,
    ``fn`` its kernel argument, ``config`` its slot arguments and ``kernel_args`` its kernel arguments (nodes of
    ``root``). A use whose arguments the tree does not read one for one is left out. Errors: none."""
    out = []
    for u in launch_macro_uses(src):
        if kernel_name is not None and u.kernel != kernel_name:
            continue
        call = _use_node(root, u.start, u.end)
        alist = call.child_by_field_name("arguments") if call is not None else None
        nodes = [c for c in alist.named_children if c.type != "comment"] if alist is not None else []
        slots = use_slots(u.macro, len(u.args))
        if call is None or isinstance(slots, str) or [(n.start_byte, n.end_byte) for n in nodes] != list(u.arg_spans):
            continue
        out.append(LaunchCall(call, nodes[slots.kernel], tuple(nodes[k] for k in slots.config), host_of(call),
                              kernel_args=tuple(nodes[k] for k in slots.args), macro=u.macro.name))
    return out


def macro_use_refusal(src: bytes, start: int) -> str | None:
    """Why the launch of the launch macro use starting at byte ``start`` of ``src`` (a ``.cu`` unit's bytes) is not
    editable at the use (:func:`use_slots`): ``"the #define of LAUNCH computes the grid (...) ..."``; ``None`` when
    it is, or when no use of a launch macro starts there. Errors: none."""
    u = next((x for x in launch_macro_uses(src) if x.start == start), None)
    slots = use_slots(u.macro, len(u.args)) if u is not None else None
    return slots if isinstance(slots, str) else None
