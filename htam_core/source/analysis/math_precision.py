"""The precision an overloaded math call runs in: ``exp(x)``, ``log(s)``, ``std::pow(a, b)``.

C++ overloads ``exp``, ``log``, ``sin`` ... on the argument's type, and CUDA's device math library follows: with a
``float`` argument ``exp`` is ``expf``, with a ``double`` it is the double function (CUDA C++ Programming Guide,
"Mathematical Functions"; C++ [c.math]). Generic kernels write ``exp((acc_t)v)`` once for every instantiation:
the call is single precision exactly when every instantiation of the kernel in the file makes its argument a
``float``. :func:`generic_math_calls` reads each such call of a kernel's body and the set of types its argument
takes over the kernel's instantiations (:attr:`~htam_core.source.analysis.KernelFacts.type_instantiations`).

The argument's type is read from its spelling: a cast or ``static_cast<T>``, a literal (``1.0f`` float, ``1.0``
double, ``1`` int), a parameter or local declared in the kernel (an element of a pointer for ``p[i]``), a call of
a ``float`` function (``expf``, ``fmaxf`` ...), and the usual arithmetic conversions for ``+ - * /`` and ``?:``
(C++ [expr.arith.conv]: double wins over float, float over integers). A template parameter stands for each type
its launches bind it to; a ``typedef``/``using`` alias is followed (:func:`~.types.resolve_type`). Anything else
is unknown, and the call is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import product

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.types import resolve_type
from htam_core.source.analysis.unit import CudaSource

__all__ = ["GENERIC_MATH", "GenericMathCall", "generic_math_calls"]

#: overloaded math function -> its single-precision name
GENERIC_MATH = {"exp": "expf", "exp10": "exp10f", "log": "logf", "log2": "log2f", "log10": "log10f", "sin": "sinf",
                "cos": "cosf", "tan": "tanf", "tanh": "tanhf", "pow": "powf"}
_FLOAT_FUNCS = frozenset({*GENERIC_MATH.values(), "sqrtf", "rsqrtf", "fmaxf", "fminf", "fabsf", "__expf", "__logf",
                          "__sinf", "__cosf", "__powf", "__fdividef", "__exp10f", "__log2f", "__log10f", "__tanf",
                          "__int2float_rn", "__half2float", "__bfloat162float"})
_SAME_TYPE_FUNCS = frozenset({*GENERIC_MATH, "max", "min", "fmax", "fmin", "fabs", "abs", "sqrt"})
_INTS = frozenset({"int", "unsigned", "unsigned int", "long", "unsigned long", "long long", "unsigned long long",
                   "short", "char", "size_t", "int64_t", "int32_t", "uint32_t", "uint64_t", "bool"})
_RANK = {"double": 3, "float": 2, "int": 1}


@dataclass(frozen=True)
class GenericMathCall:
    """One call of an overloaded math function in a kernel's body.

    Attributes:
        function: the called function's node (``exp``, ``std::exp``): what a step renames.
        name: the function's plain name (``"exp"``).
        float_name: its single-precision name (``"expf"``).
        types: the argument types over the kernel's instantiations (``{"float"}``, ``{"float", "double"}``);
            the promoted type of all arguments for ``pow``.
        line: 1-based file line of the call.
    """

    function: Node
    name: str
    float_name: str
    types: frozenset[str]
    line: int

    @property
    def single(self) -> bool:
        """Whether the call runs in single precision in every instantiation."""
        return self.types == frozenset({"float"})


class _Typer:
    """Reads the type set of an expression of one kernel (see the module docstring)."""

    def __init__(self, source: CudaSource, inst: Mapping[str, frozenset[str]]) -> None:
        self.s, self.inst = source, inst
        self.decls: dict[str, tuple[str, bool]] = {}
        for d in [*source.params, *syn.declarations(source.body)]:
            self._declare(d)

    def _declare(self, d: Node) -> None:
        t = syn.declaration_type(d)
        if t is None:
            return
        for dn in d.children_by_field_name("declarator"):
            ptr = False
            while dn is not None and not syn.is_identifier(dn):
                ptr = ptr or dn.type in ("pointer_declarator", "array_declarator")
                dn = dn.child_by_field_name("declarator")
            if dn is None:
                continue
            name, seen = self.s.env.t(dn), (self.s.env.t(t), ptr)
            # a name declared twice with different types (shadowing in another scope) is not read
            self.decls[name] = seen if self.decls.get(name, seen) == seen else ("", False)

    def concrete(self, text: str, seen: frozenset[str] = frozenset()) -> frozenset[str] | None:
        """The concrete types type text ``text`` stands for, or ``None`` when unknown. ``seen``: the template
        parameters followed so far; one reached again (an instantiation that names a parameter of the kernel,
        ``k<scalar_t>`` launched where ``scalar_t`` is not resolved) is unknown, never followed in a cycle."""
        words = [w for w in text.replace("*", " ").split() if w not in ("const", "volatile", "__restrict__")]
        name = " ".join(words)
        if name in seen:
            return None
        if name in self.inst:
            out = set()
            for v in self.inst[name]:
                c = self.concrete(v, seen | {name})
                if c is None:
                    return None
                out |= c
            return frozenset(out) or None
        name = resolve_type(self.s.env, name) if name.replace("_", "").isalnum() else name
        if name in ("float", "double"):
            return frozenset({name})
        return frozenset({"int"}) if name in _INTS else frozenset({name}) if name else None

    def of(self, n: Node | None) -> frozenset[str] | None:
        """The type set of expression ``n``, or ``None`` when unknown."""
        if n is None:
            return None
        n = syn.unwrap_parens(n)
        if syn.is_number(n):
            return self._literal(self.s.env.t(n))
        if n.type == "cast_expression":
            return self.concrete(self.s.env.t(n.child_by_field_name("type")))
        if syn.is_identifier(n):
            d = self.decls.get(self.s.env.t(n))
            return self.concrete(d[0]) if d is not None and not d[1] else None
        if n.type == "subscript_expression":
            a = n.child_by_field_name("argument")
            d = self.decls.get(self.s.env.t(a)) if syn.is_identifier(a) else None
            return self.concrete(d[0]) if d is not None and d[1] else None
        if n.type == "unary_expression" and self.s.env.t(n.child_by_field_name("operator")) in "-+":
            return self.of(n.child_by_field_name("argument"))
        if syn.is_binary(n) and self.s.env.t(n.child_by_field_name("operator")) in ("+", "-", "*", "/"):
            return _promote([self.of(n.child_by_field_name("left")), self.of(n.child_by_field_name("right"))])
        if n.type == "conditional_expression":
            return _promote([self.of(n.child_by_field_name("consequence")),
                             self.of(n.child_by_field_name("alternative"))])
        return self._call(n) if syn.is_call(n) else None

    def _call(self, n: Node) -> frozenset[str] | None:
        fn = n.child_by_field_name("function")
        name = self.s.env.t(fn).removeprefix("std::") if fn is not None else ""
        args = n.child_by_field_name("arguments")
        if name in _FLOAT_FUNCS:
            return frozenset({"float"})
        if name.startswith("static_cast<") and name.endswith(">"):
            return self.concrete(name[len("static_cast<"):-1])
        if name in _SAME_TYPE_FUNCS and args is not None:
            return _promote([self.of(a) for a in args.named_children if a.type != "comment"])
        return None

    @staticmethod
    def _literal(text: str) -> frozenset[str]:
        t = text.lower()
        if t.startswith("0x"):
            return frozenset({"int"})
        if t.endswith("f") and ("." in t or "e" in t):
            return frozenset({"float"})
        return frozenset({"double"}) if "." in t or "e" in t else frozenset({"int"})


def _promote(parts: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """The usual arithmetic conversions over every combination of the parts' types (``None``: unknown)."""
    sets = list(parts)
    if not sets or any(s is None for s in sets):
        return None
    out = set()
    for combo in product(*[sorted(s) for s in sets if s is not None]):
        if any(c not in _RANK for c in combo):
            return None
        out.add(max(combo, key=lambda c: _RANK[c]))
    return frozenset(out)


def generic_math_calls(source: CudaSource, instantiations: Iterable[tuple[str, Iterable[str]]] = ()
                       ) -> tuple[GenericMathCall, ...]:
    """Every call of an overloaded math function (:data:`GENERIC_MATH`, also ``std::``-qualified) in the kernel
    body of ``source`` whose argument types are known, in source order.

    Args:
        source: the kernel's parsed unit.
        instantiations: each type template parameter with the types the file's launches bind it to (the kernel's
            :attr:`~htam_core.source.analysis.KernelFacts.type_instantiations`); a parameter without any is unknown.

    Errors: none; a call whose argument type is not read is left out.
    """
    typer = _Typer(source, {k: frozenset(v) for k, v in instantiations})
    out = []
    for call in syn.calls(source.body):
        fn = call.child_by_field_name("function")
        name = source.env.t(fn).removeprefix("std::") if fn is not None else ""
        args = call.child_by_field_name("arguments")
        if fn is None or name not in GENERIC_MATH or args is None:
            continue
        types = _promote([typer.of(a) for a in args.named_children if a.type != "comment"])
        if types:
            out.append(GenericMathCall(fn, name, GENERIC_MATH[name], types, source.lines.line(call.start_byte + source.base)))
    return tuple(out)
