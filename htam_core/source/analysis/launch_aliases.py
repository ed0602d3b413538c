"""Pointer parameters that receive the same buffer at a launch: ``k<<<g, b>>>(d_x, d_x, n)`` (an in-place launch).

A kernel's ``const``/``__restrict__`` qualifiers and its ``__ldg`` loads promise that an input is not written
through another pointer during the launch. The kernel's text alone cannot tell; its launches in the same file can:
two pointer parameters that receive the same buffer at some launch alias there. This module reads, per launch of
the kernel in its file, each pointer argument as the buffer it names:

* the expression as written, read on its syntax node: parentheses, C casts and C++ named casts dropped
  (``(float *)d_x``, ``reinterpret_cast<const float *>(d_x)``), ``&p[0]`` and ``p + 0`` read as ``p``
  (:func:`~htam_core.source.analysis.syntax.strip_pointer`), ``c ? a : b`` as either, whitespace collapsed;
* a name of the launching function followed to the value it holds at the launch, its nearest dominating
  definition (:func:`~htam_core.source.analysis.reaching.reaching_value`: ``float *d_out = d_x;``,
  ``out = in;``), chained a few steps deep;
* a name that no single definition reaches (one given a value in an ``if`` branch, in a loop around the launch,
  on some paths only) stands for itself *and* every value it is given anywhere in the function
  (:func:`~htam_core.source.analysis.reaching.assigned_values`): it MAY be any of them, and an input that may
  be a written buffer is treated as one (the conservative rule: ``__ldg`` and ``__restrict__`` are promises, so a
  may-alias refuses them);
* a member ``buf.data`` stands for itself, the values assigned to it in the function, and the same member of
  what its base name holds (``Buf b2 = buf;``: ``b2.data`` is ``buf.data``). A member set out of sight (by a
  called function, an aggregate initializer) is not seen.
* an argument that is a parameter of the launching function (a launch wrapper, ``void run(float *out, const float
  *in, int n)``) read at each call of that function, in the file and in the workspace files the caller gives,
  a few wrappers deep (:mod:`~htam_core.source.analysis.host_wrappers`): ``run(x, x, n)`` passes one buffer twice.

Two pointer parameters alias at a launch when the buffers their arguments may name meet (a null pointer or a
number is none); ``LaunchAlias.certain`` tells whether each argument names one buffer only. Anything else
(``d_x`` and ``d_x + n``, two distinct names never given the same value) is not claimed to alias: a pointer set
out of sight (``cudaMalloc(&d, ...)``, ``get(&d)``) stands for itself; a kernel with no launch in its file gives
nothing (the caller keeps its behaviour).

Idea source: C99's ``restrict`` (6.7.3.1: no object accessed through one restrict pointer is modified through
another) and the CUDA C++ Programming Guide, "__restrict__" and "Read-Only Data Cache Load Function".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import param_names
from htam_core.source.analysis.host_wrappers import Callers, wrapper_calls
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.reaching import assigned_values, reaching_value
from htam_core.source.analysis.syntax import strip_pointer, text
from htam_core.source.analysis.unit import CudaSource, SiteLaunch, cuda_source
from htam_core.source.model import Kernel, SourceModel
from htam_core.types.language import traits

__all__ = ["LaunchAlias", "aliased_with", "argument_buffers", "launch_aliases"]

#: How many names deep a buffer is followed (``in = out; out = d_x;`` is two).
_DEPTH = 6


@dataclass(frozen=True)
class LaunchAlias:
    """Two pointer parameters of a kernel given the same buffer at one launch.

    Attributes:
        first, second: the parameters, in parameter order (``x``, ``y``).
        line: 1-based line of the launch.
        buffer: the buffer both receive, as read (``d_x``: names followed to their value).
        certain: both arguments name that buffer on every path (``False``: one may name another).
        via: where the launch's host function is called with that buffer twice, when it is (``through run()
            called on line 12``, or ``... at main.cu:12`` in another file); ``""`` for the launch itself.
    """

    first: str
    second: str
    line: int
    buffer: str
    certain: bool = True
    via: str = ""


def _spelled(node: Node, src: bytes) -> str:
    """The text of ``node`` with whitespace collapsed."""
    return " ".join(text(node, src).split())


def _no_buffer(node: Node) -> bool:
    """``node`` is a null pointer or a number (``nullptr``, ``NULL``, ``0``): no buffer."""
    return syn.is_number(node) or node.type == "null"


class _Reader:
    """The buffers the arguments of one launch may name (module docstring): ``host`` the launching function,
    ``at`` the launch's first byte, ``src`` the unit's bytes."""

    def __init__(self, host: Node | None, at: int, src: bytes) -> None:
        self.host, self.at, self.src = host, at, src

    def buffers(self, node: Node, depth: int = 0) -> frozenset[str]:
        """The buffers expression ``node`` may name at the launch (``frozenset()``: none, a null pointer)."""
        node = strip_pointer(node)
        if syn.is_brace_or_call_list(node) and node.named_child_count == 1:
            node = node.named_children[0]  # `float *o{d_x};`
        if _no_buffer(node):
            return frozenset()
        if syn.is_conditional(node):
            return self._either(node, depth)
        if depth >= _DEPTH or self.host is None or not (syn.is_identifier(node) or syn.is_field(node)):
            return frozenset({_spelled(node, self.src)})
        if syn.is_identifier(node):
            return self._name(node, depth)
        return self._member(node, depth)

    def _either(self, node: Node, depth: int) -> frozenset[str]:
        """``c ? a : b`` may name what ``a`` or ``b`` does."""
        out: frozenset[str] = frozenset()
        for f in ("consequence", "alternative"):
            branch = node.child_by_field_name(f)
            if branch is not None:
                out |= self.buffers(branch, depth + 1)
        return out

    def _name(self, node: Node, depth: int) -> frozenset[str]:
        """A name: its reaching value's buffers, or itself and every value it is given (it may hold any)."""
        assert self.host is not None
        name = _spelled(node, self.src)
        value = reaching_value(self.host, name, self.at, self.src)
        if value is not None:
            return self.buffers(value, depth + 1)
        return self._may(name, depth)

    def _may(self, target: str, depth: int) -> frozenset[str]:
        """``target`` itself and the buffers of every value the function gives it anywhere."""
        assert self.host is not None
        out = frozenset({target})
        for v in assigned_values(self.host, target, self.src):
            out |= self.buffers(v, depth + 1)
        return out

    def _member(self, node: Node, depth: int) -> frozenset[str]:
        """``buf.data``: the same member of what ``buf`` holds (``Buf b2 = buf;``: ``b2.data`` is ``buf.data``);
        when the function assigns the member, also itself and each value assigned (it may hold any)."""
        spelled = _spelled(node, self.src).replace(" ", "")
        base, field = node.child_by_field_name("argument"), node.child_by_field_name("field")
        if base is None or field is None or not syn.is_identifier(strip_pointer(base)):
            return self._may(spelled, depth)
        op = "->" if "->" in spelled else "."
        held = frozenset(f"{b}{op}{text(field, self.src)}" for b in self.buffers(base, depth + 1))
        if assigned_values(self.host, spelled, self.src) or not held:  # type: ignore[arg-type]
            return held | self._may(spelled, depth)
        return held


def argument_buffers(src: CudaSource, sl: SiteLaunch) -> list[frozenset[str]]:
    """The buffers each argument of launch ``sl`` (of unit ``src``) may name, in argument order (module docstring;
    one set per argument, ``frozenset()`` for a null pointer). The one reader of "the buffer a launch argument
    names". Errors: none (a launch without an argument list gives ``[]``)."""
    args_node = sl.call.child_by_field_name("arguments")
    if args_node is None:
        return []
    reader = _Reader(sl.host, sl.call.start_byte, src.src)
    return [reader.buffers(a) for a in args_node.named_children if not syn.is_comment(a)]


def _pairs(args: list[frozenset[str]], names: list[str], pointers: set[str], line: int) -> list[LaunchAlias]:
    """The pointer parameter pairs of ``names`` whose arguments (the buffers each may name, one set per launch
    argument) may share a buffer, each with whether it surely does (each argument names one buffer only)."""
    texts = [min(a) if len(a) == 1 else "" for a in args]
    out = []
    for i in range(min(len(args), len(names))):
        for j in range(i + 1, min(len(args), len(names))):
            common = args[i] & args[j] if names[i] in pointers and names[j] in pointers else frozenset()
            if common:
                buffer = texts[i] if texts[i] in common else min(common)
                out.append(LaunchAlias(names[i], names[j], line, buffer, len(args[i]) == 1 and len(args[j]) == 1))
    return out


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
        args = argument_buffers(src, sl)
        found = _pairs(args, names, pointers, sl.site.line)
        out.extend(found)
        if sl.host is not None:
            out.extend(_through_wrappers(src.src, sl.host, args, (names, pointers, sl.site.line), found, callers))
    return tuple(out)


def _resolve(host: Node, data: bytes, before: int, arg: Node) -> frozenset[str]:
    """The buffers argument ``arg`` may name at byte ``before`` of function ``host`` of the text ``data``."""
    return _Reader(host, before, data).buffers(arg)


def _through_wrappers(data: bytes, host: Node, args: list[frozenset[str]], params: tuple[list[str], set[str], int],
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
