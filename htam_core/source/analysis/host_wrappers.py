"""A launch's arguments read at the calls of the host function that holds it (a launch wrapper).

``void run(float *out, const float *in, int n) { k<<<g, b>>>(out, in, n); }`` launches ``k`` with the wrapper's
parameters; which buffers they are is decided where ``run`` is called: ``run(x, x, n)`` passes one buffer as both.
:func:`wrapper_calls` maps each launch argument that is (or was read as) a parameter of the launching function to
the argument of every call of that function: in the unit that holds the launch and in the other files it is given
(the workspace's C/C++/CUDA files that name the function), each argument read as the buffer it names by the
caller's ``resolve`` (its casts, host variables given one value). A call inside a function whose parameters it
passes on is followed in turn, up to :data:`MAX_LEVELS` wrappers deep (``main`` calls ``outer(x, x)`` that calls
``run(a, b)`` that launches). An argument that is no parameter (a local of the wrapper, an expression) is read as a
buffer of its own at the call, never the same as another: aliasing among those is the launch's own business.

Left out (nothing claimed, as for a wrapper whose callers are not found): calls through a function pointer or a
member, overloads with another number of parameters, and calls of a function-template specialization.

Idea source: interprocedural alias analysis by binding formal to actual parameters at each call site (Aho, Lam,
Sethi, Ullman, "Compilers", 12.4, context-insensitive, depth-bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from tree_sitter import Node, Tree

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.instantiations import called_name, function_name
from htam_core.source.analysis.launch import host_of
from htam_core.source.analysis.syntax import parse

__all__ = ["MAX_LEVELS", "Callers", "Resolve", "WrapperCall", "wrapper_calls"]

#: how many host functions between a launch and the call that passes its buffers are followed
MAX_LEVELS = 3

#: ``(function, its file's bytes, byte, argument node) -> buffers``: the buffers an argument written at byte ``byte``
#: of ``function`` may name (casts dropped, a host variable followed to its value)
Resolve = Callable[[Node, bytes, int, Node], frozenset[str]]
#: ``function name -> [(path, bytes)]``: other files that may call the function (the workspace's that name it)
Callers = Callable[[str], Sequence[tuple[str, bytes]]]


@dataclass(frozen=True)
class WrapperCall:
    """The launch's arguments as one call of its wrapper passes them.

    Attributes:
        args: the buffers each launch argument may name: the caller's where the argument is a wrapper parameter,
            else a text of its own that equals no other (``{"\\0<k>"}``).
        wrapper: the host function called (``run``).
        line: 1-based line of the call in its file (the outermost call followed).
        path: the file of the call; ``""`` for the unit that holds the launch.
    """

    args: tuple[frozenset[str], ...]
    wrapper: str
    line: int
    path: str = ""


@dataclass(frozen=True)
class _File:
    """One text searched for calls: its bytes, its tree and its path (``""``: the unit's own)."""

    src: bytes
    root: Node = field(compare=False)
    path: str = ""


@lru_cache(maxsize=64)
def _parsed(data: bytes) -> Tree:
    return parse(data, "cuda")


def _calls(f: _File, name: str, nparams: int, skip: Node | None) -> list[tuple[Node, list[Node]]]:
    """``(call, argument nodes)`` of each call of ``name`` in ``f`` with ``nparams`` arguments, outside ``skip``."""
    out = []
    for c in syn.calls(f.root):
        if called_name(c.child_by_field_name("function"), f.src) != name:
            continue
        if skip is not None and skip.start_byte <= c.start_byte < skip.end_byte:
            continue
        alist = c.child_by_field_name("arguments")
        args = [a for a in (alist.named_children if alist is not None else []) if not syn.is_comment(a)]
        if len(args) == nparams:
            out.append((c, args))
    return out


def _param(a: frozenset[str], params: list[str]) -> str | None:
    """The parameter of ``params`` that argument ``a`` (the buffers it may name) is, or ``None``."""
    name = next(iter(a)) if len(a) == 1 else None
    return name if name and name in params else None


def _bound(args: Sequence[frozenset[str]], params: list[str], f: _File, call: Node, values: list[Node],
           resolve: Resolve) -> tuple[frozenset[str], ...]:
    """The launch's ``args`` at one call: each parameter of ``params`` replaced by the caller's buffers."""
    caller = host_of(call)
    out = []
    for k, a in enumerate(args):
        p = _param(a, params)
        if p is not None and caller is not None:
            out.append(resolve(caller, f.src, call.start_byte, values[params.index(p)]))
        else:
            out.append(frozenset({f"\0{k}"}))
    return tuple(out)


def _follow(host: Node, home: _File, args: Sequence[frozenset[str]], unit: _File, callers: Callers,
            resolve: Resolve, level: int) -> list[tuple[tuple[frozenset[str], ...], str, Node, _File]]:
    """``(args at the call, wrapper name, call, file)`` of each call of ``host`` (a function of ``home``) in the
    unit and the files ``callers`` gives, and of the calls of its callers that pass their own parameters on,
    ``level`` wrappers deep at most."""
    name = function_name(host, home.src) if syn.is_function_definition(host) else None
    params = syn.function_parameter_names(host, home.src) if name else []
    if not name or level <= 0 or not any(_param(a, params) for a in args):
        return []
    files = [unit, *(_File(d, _parsed(d).root_node, p) for p, d in callers(name) if d not in unit.src)]
    out = []
    for f in files:
        for call, values in _calls(f, name, len(params), host if f == home else None):
            bound = _bound(args, params, f, call, values, resolve)
            out.append((bound, name, call, f))
            caller = host_of(call)
            if caller is not None:
                out.extend(_follow(caller, f, bound, unit, callers, resolve, level - 1))
    return out


def wrapper_calls(host: Node, src: bytes, args: Sequence[frozenset[str]], resolve: Resolve,
                  callers: Callers = lambda name: ()) -> tuple[WrapperCall, ...]:
    """The launch's arguments as each call of its wrapper passes them (module docstring).

    Args:
        host: the function definition that holds the launch (a node of the tree of ``src``).
        src: the bytes of the unit that holds it (its tree's text).
        args: the launch's arguments as the buffers each may name in ``host`` (a parameter of ``host``: its name).
        resolve: how an argument text at a call reads as a buffer (:data:`Resolve`).
        callers: the other files that may call a function of a given name (:data:`Callers`; the workspace's);
            a file whose whole text is in ``src`` (a launcher the joint unit holds) is skipped. Default: none.

    Returns:
        One :class:`WrapperCall` per call found (each direct call, then the calls of its caller that pass its
        parameters on, up to :data:`MAX_LEVELS` levels); ``()`` when no launch argument is a parameter of
        ``host`` or no call is found. Errors: none; a file that does not parse is read as far as it does.
    """
    root = host
    while root.parent is not None:
        root = root.parent
    unit = _File(src, root, "")
    out = []
    for bound, name, call, f in _follow(host, unit, args, unit, callers, resolve, MAX_LEVELS):
        out.append(WrapperCall(bound, name, f.src.count(b"\n", 0, call.start_byte) + 1, f.path))
    return tuple(out)
