"""Pointer parameters that receive the same buffer at a launch: ``k<<<g, b>>>(d_x, d_x, n)`` (an in-place launch).

A kernel's ``const``/``__restrict__`` qualifiers and its ``__ldg`` loads promise that an input is not written
through another pointer during the launch. The kernel's text alone cannot tell; its launches in the same file can:
two pointer parameters that receive the same buffer at some launch alias there. This module reads, per launch of
the kernel in its file, each pointer argument as the buffer it names:

* the expression as written, parentheses, C casts and C++ named casts dropped (``(float *)d_x``,
  ``reinterpret_cast<const float *>(d_x)``), ``&p[0]`` read as ``p``, whitespace collapsed;
* a name of the launching function followed to the one value it is given before the launch (``float *d_out =
  d_x;``, ``out = in;``), a few steps deep; a name given two values, or none there, stands for itself.

* an argument that is a parameter of the launching function (a launch wrapper, ``void run(float *out, const float
  *in, int n)``) read at each call of that function, in the file and in the workspace files the caller gives,
  a few wrappers deep (:mod:`~htam_core.source.analysis.host_wrappers`): ``run(x, x, n)`` passes one buffer twice.

Two pointer parameters alias at a launch when their arguments name the same buffer (a null pointer is none).
Anything else (``d_x`` and
``d_x + n``, two distinct names) is not claimed to alias: the reading is simple and may miss aliasing built
elsewhere; a kernel with no launch in its file gives nothing (the caller keeps its behaviour).

Idea source: C99's ``restrict`` (6.7.3.1: no object accessed through one restrict pointer is modified through
another) and the CUDA C++ Programming Guide, "__restrict__" and "Read-Only Data Cache Load Function".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import param_names
from htam_core.source.analysis.host_wrappers import Callers, wrapper_calls
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import text as node_text
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.model import Kernel, SourceModel
from htam_core.types.language import traits

__all__ = ["LaunchAlias", "aliased_with", "launch_aliases"]

#: ``reinterpret_cast<T>(x)`` and its kin, or a C cast ``(T *)x``, around a buffer expression.
_NAMED_CAST = re.compile(r"^(?:static|reinterpret|const)_cast\s*<.*>\s*\((.*)\)$", re.S)
_C_CAST = re.compile(r"^\(\s*(?:const\s+)?[A-Za-z_][\w:<>\s]*\*+\s*(?:const\s*)?(?:__restrict__\s*)?\)\s*(.+)$", re.S)
_FIRST_ELEMENT = re.compile(r"^&\s*\(?\s*([A-Za-z_][\w.]*)\s*\)?\s*\[\s*0\s*\]$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
#: A null pointer or a number: no buffer (two null arguments do not share data).
_NO_BUFFER = re.compile(r"^(?:nullptr|NULL|0[xX]?[0-9a-fA-F]*[uUlL]*|\d+[uUlL]*)$")


@dataclass(frozen=True)
class LaunchAlias:
    """Two pointer parameters of a kernel given the same buffer at one launch.

    Attributes:
        first, second: the parameters, in parameter order (``x``, ``y``).
        line: 1-based line of the launch.
        buffer: the buffer both receive, as read (``d_x``: names followed to their value).
        via: where the launch's host function is called with that buffer twice, when it is (``through run()
            called on line 12``, or ``... at main.cu:12`` in another file); ``""`` for the launch itself.
    """

    first: str
    second: str
    line: int
    buffer: str
    via: str = ""


def _strip(text: str) -> str:
    """``text`` without outer parentheses, casts and ``&p[0]``, whitespace collapsed."""
    prev = None
    text = " ".join(text.split())
    while prev != text:
        prev = text
        if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
            text = text[1:-1].strip()
        for pat in (_NAMED_CAST, _C_CAST, _FIRST_ELEMENT):
            m = pat.match(text)
            if m is not None:
                text = m.group(1).strip()
    return text


def _balanced(text: str) -> bool:
    """The parentheses of ``text`` close in order (``a) + (b`` does not)."""
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _values(src: CudaSource | _Text, host: Node, before: int) -> dict[str, list[str]]:
    """Each name of the function ``host`` with the values it is given before byte ``before``: declarations with an
    initializer (``float *d_out = d_x;``) and plain assignments (``out = in;``)."""
    out: dict[str, list[str]] = {}
    for d in syn.init_declarators(host):
        name = syn.declared_identifier(d.child_by_field_name("declarator"))
        value = d.child_by_field_name("value")
        if d.start_byte < before and name is not None and value is not None:
            out.setdefault(src.t(name), []).append(src.t(value))
    for a in syn.assignments(host):
        left, op = a.child_by_field_name("left"), a.child_by_field_name("operator")
        if a.start_byte < before and left is not None and syn.is_identifier(left) and src.t(op) == "=":
            out.setdefault(src.t(left), []).append(src.t(a.child_by_field_name("right")))
    return out


def _buffer(text: str, values: dict[str, list[str]], depth: int = 0) -> str:
    """The buffer the argument ``text`` names, following a name given one value (:func:`_values`)."""
    text = _strip(text)
    given = values.get(text, [])
    if _NAME.match(text) and len(given) == 1 and depth < 6:
        return _buffer(given[0], values, depth + 1)
    return text


def launch_aliases(model: SourceModel, kernel: Kernel, callers: Callers | None = None) -> tuple[LaunchAlias, ...]:
    """The pairs of pointer parameters of CUDA ``kernel`` that receive the same buffer at some launch in its file
    (:class:`LaunchAlias`, module docstring), in launch then parameter order; ``()`` for a kernel of another
    language, one that cannot be located, or one with no launch in its file. A launch whose arguments are
    parameters of its host function is read at that function's calls too (:func:`_through_wrappers`), in the
    unit and in the files ``callers`` gives for a function name (the workspace's; none when ``None``)."""
    if traits(kernel.language).tiles:
        return ()
    src = cuda_source(model, kernel)
    if isinstance(src, str):
        return ()
    names = param_names(src)
    pointers = {p.name for p in kernel.params if p.is_pointer}
    out: list[LaunchAlias] = []
    for sl in src.sites:
        args_node = sl.call.child_by_field_name("arguments")
        if args_node is None:
            continue
        values = _values(src, sl.host, sl.call.start_byte) if sl.host is not None else {}
        args = [_buffer(src.t(a), values) for a in args_node.named_children if not syn.is_comment(a)]
        found = _pairs(args, names, pointers, sl.site.line)
        out.extend(found)
        if sl.host is not None:
            out.extend(_through_wrappers(src.src, sl.host, args, (names, pointers, sl.site.line), found, callers))
    return tuple(out)


def _pairs(args: list[str], names: list[str], pointers: set[str], line: int) -> list[LaunchAlias]:
    """The pointer parameter pairs of ``names`` that buffer texts ``args`` (one per launch argument) give the same
    buffer (a null pointer or a number is none)."""
    out = []
    for i, a in enumerate(args[:len(names)]):
        for j in range(i + 1, min(len(args), len(names))):
            if a == args[j] and names[i] in pointers and names[j] in pointers and not _NO_BUFFER.match(a):
                out.append(LaunchAlias(names[i], names[j], line, a))
    return out


@dataclass(frozen=True)
class _Text:
    """The bytes of a file other than the kernel's unit, read as :meth:`CudaSource.t` reads the unit's."""

    src: bytes

    def t(self, node: Node | None) -> str:
        """Source text of ``node`` (a node of a tree of ``src``)."""
        return node_text(node, self.src)


def _resolve(host: Node, data: bytes, before: int, arg: str) -> str:
    """The buffer argument text ``arg`` names at byte ``before`` of function ``host`` of the text ``data``."""
    return _buffer(arg, _values(_Text(data), host, before))


def _through_wrappers(data: bytes, host: Node, args: list[str], params: tuple[list[str], set[str], int],
                      found: list[LaunchAlias], callers: Callers | None) -> list[LaunchAlias]:
    """The pairs a launch in ``host`` (of unit text ``data``) gets at the calls of ``host``: ``run(x, x, n)`` of
    ``void run(float *out, const float *in, int n) { k<<<g, b>>>(out, in, n); }``
    (:func:`~htam_core.source.analysis.host_wrappers.wrapper_calls`), each pair once, those ``found`` at the
    launch itself left out. ``params``: the kernel's parameter names, its pointer ones and the launch's line."""
    have = {(al.first, al.second) for al in found}
    out = []
    for wc in wrapper_calls(host, data, args, _resolve, callers or (lambda name: ())):
        where = f"at {wc.path.rsplit('/', 1)[-1]}:{wc.line}" if wc.path else f"on line {wc.line}"
        for al in _pairs(list(wc.args), *params):
            if (al.first, al.second) not in have:
                have.add((al.first, al.second))
                out.append(replace(al, via=f"through {wc.wrapper}() called {where}"))
    return out


def aliased_with(aliases: tuple[LaunchAlias, ...], name: str, others: set[str]) -> LaunchAlias | None:
    """The first pair of ``aliases`` that gives parameter ``name`` the same buffer as one of ``others`` (the
    kernel's written pointers), or ``None``."""
    return next((al for al in aliases if (al.first == name and al.second in others)
                 or (al.second == name and al.first in others)), None)
