"""Compile-time constants, resolved in scope: the one constant evaluator of the project.

:func:`evaluate` computes the value of a C/C++ constant expression tree (literals, ``+ - * / % << >>``,
unary ``-``/``+``, parentheses, C casts, ``static_cast``, ``sizeof(<basic type>)``, the ternary
operator and ``min``/``max``) and asks a *lookup* for names. :class:`ConstEnv` is the lookup of one
CUDA unit: names resolve through, in order,

1. bindings given by the caller (template arguments at the launch site, ``template <int B>`` -> ``B=256``);
2. declarations in the enclosing function (``const int``, ``constexpr``, or any ``int x = ...`` that
   has exactly one definition before the use and is never reassigned or address-taken);
   then the enumerators of an ``enum`` declared in that function;
3. the non-type template parameters of the host function template holding the use (``template <int BX> void
   launch(...)``), bound from the uses of that function in the unit when every one gives the same constant
   (:mod:`~htam_core.source.analysis.host_templates`; :meth:`ConstEnv.refusal` says why one is not);
4. declarations at file or namespace scope, then enumerators at file, namespace or class scope
   (``enum { BLOCK = 256 };``, ``Cfg::BLOCK``, ``E::K`` of an ``enum class``, implicit values counting on from the
   previous one: :mod:`~htam_core.source.analysis.enums`);
5. object-like ``#define``s (their value parsed as an expression);
6. the same file-scope declarations, enumerators and ``#define``s of the local headers the unit includes
   (``#include "helpers.h"`` next to the file, :func:`htam_core.source.analysis.includes.local_headers`);
7. the device runtime's built-in constants (:data:`BUILTIN_CONSTANTS`: ``warpSize`` is 32).

A qualified name (``ns::kB``, ``Cfg::BLOCK``, ``::BLOCK``) is looked up as written, without spaces.

A name of a ``dim3`` variable evaluates to the product of its components (threads per block).
:func:`python_constants` does the same job for Python (module constants and assignments in the
enclosing function, read with :func:`ast.literal_eval`, never executed).
The scoping rules are those of C++ ([basic.scope]) restricted to what is knowable without
preprocessing system includes.
"""

from __future__ import annotations

import ast
import math
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from htam_core.source.analysis.enums import Enumerator, enumerators, namespace_path
from htam_core.source.analysis.host_templates import (
    TemplateParam,
    enclosing_function,
    template_parameter,
    template_uses,
)
from htam_core.source.analysis.includes import Header, local_headers
from htam_core.source.analysis.syntax import node_text, of_type, parse, unwrap_parens
from htam_core.types.constexpr import UNKNOWN, read_constexpr

Value = int | float
#: identifier node -> its value, or ``None`` when it is not a compile-time constant
Lookup = Callable[[Node], "Value | None"]

_INT_SUFFIXES = "uUlL"
#: The CUDA device runtime's built-in integer variables that have one value on every NVIDIA GPU, read as that
#: value where nothing in the unit defines the name: ``warpSize`` is 32 on every compute capability (CUDA C++
#: Programming Guide, "Built-in Variables: warpSize", and its table of technical specifications per compute
#: capability, "Warp size: 32").
BUILTIN_CONSTANTS: dict[str, int] = {"warpSize": 32}
#: ``sizeof`` of the C/CUDA basic and vector types, bytes (the one table: the host-code evaluator reads it too).
SIZEOF: dict[str, int] = {
    "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4, "half2": 4, "__half2": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8,
    "size_t": 8, "double": 8, "float2": 8, "int2": 8, "float4": 16, "int4": 16, "double2": 16,
}


def to_half(x: Value) -> float:
    """``x`` rounded to the nearest IEEE binary16 value, ties to even (``__float2half``; past the largest finite
    half, 65504, the infinity of its sign, as round-to-nearest gives)."""
    try:
        return struct.unpack("<e", struct.pack("<e", float(x)))[0]
    except OverflowError:
        return math.copysign(math.inf, float(x))


def to_bfloat16(x: Value) -> float:
    """``x`` rounded to the nearest bfloat16 value (the upper 16 bits of its float32), ties to even
    (``__float2bfloat16``); infinities and NaN stay."""
    try:
        bits = struct.unpack("<I", struct.pack("<f", float(x)))[0]
    except OverflowError:
        return math.copysign(math.inf, float(x))
    if bits & 0x7F800000 == 0x7F800000:
        return float(x)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _int_rn(x: Value) -> int:
    return round(x)  # Python rounds ties to even, as the _rn intrinsics do


def _to_float(x: Value) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", float(x)))[0]
    except OverflowError:
        return math.copysign(math.inf, float(x))


#: CUDA's conversion intrinsics of one argument, folded where the argument is a constant: name -> (the C type of
#: the result, the conversion). From the CUDA Math API's "Half Precision Conversion", "Bfloat16 Precision
#: Conversion", "Type Casting Intrinsics" sections (``_rn``: to nearest, ties to even; ``_rz`` toward zero,
#: ``_rd`` down, ``_ru`` up); a conversion from an integer type is exact below 2^24 (float) or 2^11 (half). The
#: type constructors ``__half(x)`` and ``__nv_bfloat16(x)`` round the same way. The one table: :func:`evaluate` and
#: the host-code evaluator (:mod:`htam_core.harness.cu_eval`) both read it.
CONVERSIONS: dict[str, tuple[str, Callable[[Value], Value]]] = {
    **dict.fromkeys(("__float2half", "__float2half_rn", "__double2half", "__int2half_rn", "__uint2half_rn",
                     "__ll2half_rn", "__ull2half_rn", "__short2half_rn", "__ushort2half_rn", "__half", "half"),
                    ("__half", to_half)),
    **dict.fromkeys(("__float2bfloat16", "__float2bfloat16_rn", "__double2bfloat16", "__int2bfloat16_rn",
                     "__uint2bfloat16_rn", "__ll2bfloat16_rn", "__short2bfloat16_rn", "__nv_bfloat16"),
                    ("__nv_bfloat16", to_bfloat16)),
    **dict.fromkeys(("__half2float", "__bfloat162float", "__low2float", "__int2float_rn", "__uint2float_rn",
                     "__ll2float_rn", "__ull2float_rn", "__double2float_rn"), ("float", _to_float)),
    **dict.fromkeys(("__int2double_rn", "__uint2double_rn", "__ll2double_rn", "__ull2double_rn"),
                    ("double", float)),
    **dict.fromkeys(("__float2int_rn", "__double2int_rn", "__half2int_rn", "__float2ll_rn"), ("int", _int_rn)),
    **dict.fromkeys(("__float2int_rz", "__double2int_rz", "__half2int_rz", "__float2ll_rz"), ("int", math.trunc)),
    **dict.fromkeys(("__float2int_rd", "__double2int_rd", "__half2int_rd", "__float2ll_rd"), ("int", math.floor)),
    **dict.fromkeys(("__float2int_ru", "__double2int_ru", "__half2int_ru", "__float2ll_ru"), ("int", math.ceil)),
}


def convert(name: str, v: Value) -> Value | None:
    """The value of conversion intrinsic ``name`` (a key of :data:`CONVERSIONS`) applied to
    ``v``, or ``None`` when ``name`` is none or the conversion has no value (an infinity to an integer)."""
    entry = CONVERSIONS.get(name)
    if entry is None:
        return None
    try:
        return entry[1](v)
    except (OverflowError, ValueError, TypeError):
        return None


def literal_value(text: str) -> Value | None:
    """Value of a C or Python numeric literal (``256``, ``0x100``, ``4u``, ``(32)``, ``1_024``, ``1.5f``), else None."""
    t = text.strip()
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    t = t.replace("_", "").replace("'", "") if t[:1].isdigit() else t
    if not t or not (t[0].isdigit() or (t[0] in "+-" and t[1:2].isdigit())):
        return None
    digits = t.rstrip(_INT_SUFFIXES)
    if len(digits) > 1 and digits[0] == "0" and digits.isdigit():  # C octal: 017 == 15
        return int(digits, 8) if set(digits) <= set("01234567") else None
    try:
        return int(digits, 0)
    except ValueError:
        pass
    if t[:2].lower() == "0x":
        return None
    try:
        return float(t.rstrip("fFlL"))
    except ValueError:
        return None


def int_literal(text: str) -> int | None:
    """Value of an integer literal (``256``, ``0x100``, ``256u``, ``1_024``), else ``None`` (also for floats)."""
    v = literal_value(text)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def c_div(a: Value, b: Value) -> Value | None:
    """``a / b`` as C computes it: integers truncate toward zero; ``None`` for a division by zero."""
    if not b:
        return None
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q  # C truncates toward zero
    return a / b


def _c_mod(a: Value, b: Value) -> Value | None:
    if not (isinstance(a, int) and isinstance(b, int) and b):
        return None
    return a - c_div(a, b) * b  # type: ignore[operator]


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": c_div, "%": _c_mod,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b, "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b), "&&": lambda a, b: int(bool(a) and bool(b)),
    "||": lambda a, b: int(bool(a) or bool(b)),
}
#: ``min``/``max`` spellings the evaluators fold (two arguments).
MINMAX: dict[str, Callable[..., Any]] = {"min": min, "max": max, "std::min": min, "std::max": max, "fmin": min,
                                         "fmax": max, "fminf": min, "fmaxf": max}


def binary_op(op: str, a: Value, b: Value) -> Value | None:
    """``a op b`` with C semantics (``/`` and ``%`` truncate toward zero, comparisons give 0/1), or ``None``
    when ``op`` is not an arithmetic/logical operator or the result is undefined (division by zero). The one
    operator table of the project: :func:`evaluate` and the host-code evaluator
    (:mod:`htam_core.harness.cu_eval`) both apply it."""
    fn = _BINOPS.get(op)
    if fn is None:
        return None
    try:
        return fn(a, b)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        return None


def unary_op(op: str, v: Value) -> Value | None:
    """``op v`` for ``- + ! ~`` (``~`` on integers only), else ``None``."""
    if op == "-":
        return -v
    if op == "+":
        return v
    if op == "!":
        return int(not v)
    if op == "~" and isinstance(v, int):
        return ~v
    return None


def evaluate(node: Node | None, lookup: Lookup, depth: int = 0) -> Value | None:  # noqa: C901 - one case per node
    """Value of the C/C++ constant expression ``node`` (see module docstring), or ``None`` when any part is
    not constant. ``lookup`` resolves identifiers (``type_identifier`` too: template arguments)."""
    if node is None or depth > 40:
        return None
    t = node.type
    if t == "number_literal":
        return literal_value(node_text(node))
    if t in ("identifier", "type_identifier", "qualified_identifier"):
        return lookup(node)
    if t in ("parenthesized_expression", "expression_statement"):
        inner = [c for c in node.named_children if c.type != "comment"]
        return evaluate(inner[0], lookup, depth + 1) if len(inner) == 1 else None
    if t == "binary_expression":
        op = node_text(node.child_by_field_name("operator"))
        a = evaluate(node.child_by_field_name("left"), lookup, depth + 1)
        if a is None or op not in _BINOPS:
            return None
        b = evaluate(node.child_by_field_name("right"), lookup, depth + 1)
        return None if b is None else binary_op(op, a, b)
    if t == "unary_expression":
        op = node_text(node.child_by_field_name("operator"))
        v = evaluate(node.child_by_field_name("argument"), lookup, depth + 1)
        return None if v is None else unary_op(op, v)
    if t == "conditional_expression":
        c = evaluate(node.child_by_field_name("condition"), lookup, depth + 1)
        if c is None:
            return None
        return evaluate(node.child_by_field_name("consequence" if c else "alternative"), lookup, depth + 1)
    if t == "sizeof_expression":
        ty = node.child_by_field_name("type")
        return SIZEOF.get(" ".join(node_text(ty).split())) if ty is not None else None
    if t == "cast_expression":
        v = evaluate(node.child_by_field_name("value"), lookup, depth + 1)
        ty = " ".join(node_text(node.child_by_field_name("type")).split())
        if v is not None and ty in ("int", "unsigned", "unsigned int", "size_t", "int64_t", "long", "long long"):
            return int(v)
        return float(v) if v is not None and ty in ("float", "double") else v
    if t == "call_expression":
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        name = node_text(fn)
        vals = [evaluate(a, lookup, depth + 1) for a in (args.named_children if args is not None else [])]
        if fn is not None and fn.type == "template_function":
            inner = fn.child_by_field_name("name")
            if node_text(inner) == "static_cast" and len(vals) == 1:
                return vals[0]
        if name == "dim3" and vals and None not in vals:  # threads in a dim3(x, y, z)
            out: Value = 1
            for v in vals:
                out *= v  # type: ignore[operator]
            return out
        if name in MINMAX and len(vals) == 2 and None not in vals:
            return MINMAX[name](vals)  # type: ignore[type-var]
        if name in CONVERSIONS and len(vals) == 1 and vals[0] is not None:
            return convert(name, vals[0])
        return None
    if t == "preproc_arg":
        return evaluate_text(node_text(node), lookup, depth + 1)
    return None


def evaluate_text(expr: str, lookup: Lookup, depth: int = 0) -> Value | None:
    """:func:`evaluate` for an expression given as text (a ``#define`` value, a launch-bounds argument)."""
    tree = parse(f"int __htam_v = ({expr});".encode(), "cuda")
    root = tree.root_node
    if root.has_error or not root.named_children or root.named_children[0].type != "declaration":
        return None
    init = next((d for d in root.named_children[0].children_by_field_name("declarator")
                 if d.type == "init_declarator"), None)
    return evaluate(init.child_by_field_name("value") if init is not None else None, lookup, depth)


def dict_lookup(consts: Mapping[str, str | Value]) -> Lookup:
    """A lookup over a fixed ``name -> value`` (or value text) table."""
    def look(n: Node) -> Value | None:
        v = consts.get(node_text(n))
        return literal_value(v) if isinstance(v, str) else v
    return look


@dataclass(frozen=True)
class Const:
    """An integer constant as used at some point: its value and how to rewrite it.

    Attributes:
        value: the integer value.
        literal: the literal node to rewrite to change the value (the ``256`` in ``const int threads = 256;``
            or an inline ``256``), or ``None`` when the value is computed or comes from a ``#define``.
        name: the identifier used, when the value came through a name.
        preproc_range: for a ``#define N 256``, the byte range of ``256`` in the unit.
    """

    value: int
    literal: Node | None = None
    name: str | None = None
    preproc_range: tuple[int, int] | None = None


class ConstEnv:
    """Constants of one parsed CUDA unit (see module docstring).

    Args:
        src: the unit's bytes (the text that was parsed).
        root: the tree's root node.
        bindings: extra names with values (template arguments at a launch site), looked up first.
        path: the unit's file, whose local ``#include "..."`` headers are read for names the unit does not
            define (``None``: in-memory text, no headers).
        headers: the headers to read instead of those found from ``path`` (already resolved).
    """

    def __init__(self, src: bytes, root: Node, bindings: Mapping[str, int] | None = None,
                 path: str | None = None, headers: tuple[Header, ...] | None = None) -> None:
        self.src = src
        self.root = root
        self.bindings = dict(bindings or {})
        self.path = path
        self._headers = headers
        self._header_envs: list[ConstEnv] | None = None
        self._defines: dict[str, Node] | None = None
        self._file: dict[str, list[Node]] | None = None
        self._enums: dict[str, list[Enumerator]] | None = None
        #: (function start byte, parameter position) -> the host template parameter's constant, or why it is none
        self._templates: dict[tuple[int, int], tuple[Const | None, str]] = {}

    def t(self, node: Node | None) -> str:
        """Source text of ``node``."""
        if node is None:
            return ""
        return self.src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    # --------------------------------------------------------------- declarations
    def local_inits(self, scope: Node, name: str) -> list[Node]:
        """Initializer expressions of declarations of ``name`` inside ``scope`` (``dim3 b{..}``: the list). A
        lambda that declares no ``name`` sees the locals of the function around it (a launch in
        ``AT_DISPATCH_*(..., [&] { k<<<blocks, threads>>>(...); })`` reads ``threads`` of the host function)."""
        out = []
        for d in of_type(scope, "init_declarator"):
            decl = d.child_by_field_name("declarator")
            if decl is not None and decl.type == "identifier" and self.t(decl) == name:
                v = d.child_by_field_name("value")
                if v is not None:
                    out.append(v)
        if not out and scope.type == "lambda_expression":
            outer = scope.parent
            while outer is not None and outer.type not in ("function_definition", "lambda_expression"):
                outer = outer.parent
            if outer is not None:
                return self.local_inits(outer, name)
        return out

    def assigned_in(self, scope: Node, name: str) -> bool:
        """True when ``name`` is assigned, incremented or address-taken in ``scope``."""
        for a in of_type(scope, ("assignment_expression", "update_expression")):
            target = a.child_by_field_name("left") or a.child_by_field_name("argument")
            if target is not None and target.type == "identifier" and self.t(target) == name:
                return True
        for u in of_type(scope, "pointer_expression"):
            arg = u.child_by_field_name("argument")
            if self.t(u).startswith("&") and arg is not None and self.t(arg) == name:
                return True
        return False

    def file_inits(self, name: str) -> list[Node]:
        """Initializers of ``name`` declared at file or namespace scope."""
        if self._file is None:
            self._file = {}
            for decl in of_type(self.root, "declaration"):
                p = decl.parent
                if p is None or p.type not in ("translation_unit", "declaration_list", "preproc_if",
                                               "preproc_ifdef", "preproc_else", "linkage_specification"):
                    continue
                spaces = namespace_path(decl, self.src)
                for d in decl.named_children:
                    if d.type == "init_declarator":
                        dn, v = d.child_by_field_name("declarator"), d.child_by_field_name("value")
                        if dn is not None and dn.type == "identifier" and v is not None:
                            for k in range(len(spaces) + 1):  # kB, and n::kB for one in namespace n
                                self._file.setdefault("::".join((*spaces[k:], self.t(dn))), []).append(v)
        return self._file.get(name, [])

    def enumerator(self, name: str, scope: Node | None, before: int | None = None) -> Enumerator | None:
        """The enumerator a use of ``name`` (``BLOCK``, ``Cfg::BLOCK``, ``E::K``) at byte ``before`` in ``scope``
        sees: one declared in the function holding ``scope`` (before the use) first, else one at file, namespace
        or class scope, the one in the innermost namespace around the use when several share the name (the first
        when none encloses it: a ``using`` brings it in). ``None`` when no enumerator has that name."""
        if self._enums is None:
            self._enums = enumerators(self.root, self.src)
        found = self._enums.get(_plain(name), [])
        fn = enclosing_function(scope) if scope is not None else None
        local = [e for e in found if e.function is not None and fn is not None
                 and fn.start_byte <= e.node.start_byte < fn.end_byte and (before is None or e.node.end_byte <= before)]
        if local:
            return local[-1]
        outer = [e for e in found if e.function is None]
        if len(outer) <= 1:
            return outer[0] if outer else None
        at = before if before is not None else scope.start_byte if scope is not None else None
        use = self.root.descendant_for_byte_range(at, at) if at is not None else None
        path = namespace_path(use, self.src) if use is not None else ()
        inner = [e for e in outer if path[:len(e.namespaces)] == e.namespaces]
        return max(inner, key=lambda e: len(e.namespaces)) if inner else outer[0]

    def enumerator_value(self, name: str, at_byte: int | None = None) -> int | None:
        """The value of the enumerator a use of ``name`` (``BLOCK``, ``cfg::BLOCK``, ``Hist::Threads``) at byte
        ``at_byte`` of the unit sees (:meth:`enumerator`: one of the function holding the use first; ``None``: a use
        at file scope), else the one of that name in the local headers (nearest include first). ``None`` when no
        enumerator answers to ``name`` or its value is not a constant. The host-code evaluator of the harness
        (:mod:`htam_core.harness.cu_eval`) reads enumerators through it, so both read them by the same rules."""
        scope = self.function_at(at_byte) if at_byte is not None else None
        e = self.enumerator(name, scope, at_byte)
        if e is not None:
            c = self._enum_const(e, frozenset())
            return c.value if c is not None else None
        for env in reversed(self._header_consts()):
            v = env.enumerator_value(name)
            if v is not None:
                return v
        return None

    def _enum_const(self, e: Enumerator, seen: frozenset[str]) -> Const | None:
        """The value of enumerator ``e``: its ``= value`` read in its enum's scope (its siblings visible by their
        plain names), or the previous enumerator's plus one, 0 for the first ([dcl.enum] 2); rewritable through
        the value's literal when it is one."""
        key = f"enum@{e.node.start_byte}"
        if key in seen:
            return None
        seen = seen | {key}
        if e.value is None:
            if e.previous is None:
                return Const(0, None, e.name)
            prev = self._enum_const(e.previous, seen)
            return Const(prev.value + 1, None, e.name) if prev is not None else None
        v = unwrap_parens(e.value)
        if v.type == "number_literal":
            lit = int_literal(self.t(v))
            return Const(lit, v, e.name) if lit is not None else None
        outer = self.lookup(e.function, seen)

        def look(n: Node) -> Value | None:
            t = node_text(n)
            if n.type == "identifier" and t in e.siblings:
                sib = next((s for s in self._enums_of(e) if s.name == t), None)
                c = self._enum_const(sib, seen) if sib is not None else None
                return c.value if c is not None else None
            return outer(n)
        out = evaluate(v, look)
        return Const(out, None, e.name) if isinstance(out, int) and not isinstance(out, bool) else None

    @staticmethod
    def _enums_of(e: Enumerator) -> list[Enumerator]:
        """The enumerators of ``e``'s enum up to ``e`` (itself included), first to last."""
        out = [e]
        while out[-1].previous is not None:
            out.append(out[-1].previous)  # type: ignore[arg-type]
        return out[::-1]

    def template_const(self, tp: TemplateParam, name: str) -> tuple[Const | None, str]:
        """The constant host template parameter ``name`` (``tp``) has in every instantiation the unit makes, or
        ``(None, why)`` when it has none: the template is not used, a use deduces it or takes the function as a
        value, an argument is not a constant, or the uses give several values (several instantiations
        disagree). The constant is rewritable through the argument's literal when the template is used once."""
        key = (tp.function.start_byte, tp.position)
        if key not in self._templates:
            self._templates[key] = (None, f"{name} is bound through itself")  # a cycle of uses reads no value
            self._templates[key] = self._bind_template(tp, name)
        return self._templates[key]

    def _bind_template(self, tp: TemplateParam, name: str) -> tuple[Const | None, str]:
        uses = template_uses(self.root, self.src, tp.name)
        if not uses:
            return None, f"{tp.name} is not called in this file, so its template argument {name} is unknown"
        values: list[Const] = []
        for u in uses:
            line = self.src.count(b"\n", 0, u.node.start_byte) + 1
            if u.args is None:
                return None, f"{tp.name} is used on line {line} without template arguments"
            if tp.position < len(u.args):
                arg = u.args[tp.position]
                arg = arg.named_children[0] if arg.type == "type_descriptor" and arg.named_child_count == 1 else arg
                c = self.const(arg, enclosing_function(u.node) or _lambda_of(u.node))
            elif tp.default is not None:
                c = self.const(tp.default, tp.function)
            else:
                return None, f"the call of {tp.name} on line {line} deduces {name}"
            if c is None:
                return None, f"{tp.name}'s argument {name} on line {line} is not a compile-time constant"
            values.append(c)
        distinct = sorted({c.value for c in values})
        if len(distinct) > 1:
            return None, (f"{tp.name} is instantiated with {name} = {', '.join(map(str, distinct))}: several "
                          "instantiations disagree")
        first = values[0]
        same = len({(c.literal.start_byte if c.literal is not None else None, c.preproc_range) for c in values}) == 1
        return (Const(first.value, first.literal, name, first.preproc_range) if same else Const(first.value, None, name),
                "")

    def refusal(self, name: str, scope: Node | None) -> str:
        """Why ``name`` read in ``scope`` has no constant value when that is more than "not a constant": the reason
        of :meth:`template_const` for a host template parameter (``""`` otherwise, or when it has a value)."""
        tp = template_parameter(scope, _plain(name), self.src)
        return self.template_const(tp, _plain(name))[1] if tp is not None else ""

    def define(self, name: str) -> Node | None:
        """The value node of the object-like ``#define name value``, if any."""
        if self._defines is None:
            self._defines = {}
            for pd in of_type(self.root, "preproc_def"):
                n, v = pd.child_by_field_name("name"), pd.child_by_field_name("value")
                if n is not None and v is not None:
                    self._defines.setdefault(self.t(n), v)
        return self._defines.get(name)

    def define_text(self, name: str) -> str:
        """The value text of the object-like ``#define name value`` (``""`` when there is none)."""
        return self.t(self.define(name))

    def headers(self) -> tuple[Header, ...]:
        """The local headers this unit reads names from (innermost first)."""
        if self._headers is None:
            self._headers = local_headers(self.src, self.path)
        return self._headers

    def _header_consts(self) -> list[ConstEnv]:
        """The constant environments of the local headers, in include order (the nearest include last)."""
        if self._header_envs is None:
            hs = self.headers()
            self._header_envs = [ConstEnv(h.src, h.root, headers=hs[:i]) for i, h in enumerate(hs)]
        return self._header_envs

    def _from_headers(self, name: str, seen: frozenset[str]) -> Value | None:
        """Value of file-scope ``name`` as the included local headers define it (nearest include first)."""
        for env in reversed(self._header_consts()):
            v = env._name(name, None, None, seen)
            if v is not None:
                return v
        return None

    # --------------------------------------------------------------- evaluation
    def lookup(self, scope: Node | None, seen: frozenset[str] = frozenset()) -> Lookup:
        """The identifier lookup used by :func:`evaluate` inside ``scope`` (a function or block, or None)."""
        def look(n: Node) -> Value | None:
            return self._name(node_text(n), scope, n.start_byte, seen)
        return look

    def value(self, node: Node | None, scope: Node | None = None) -> Value | None:
        """Value (int or float) of ``node`` in ``scope``, or ``None``."""
        return evaluate(node, self.lookup(scope))

    def value_of_text(self, expr: str, at_byte: int | None = None) -> Value | None:
        """Value of expression text ``expr`` as seen at byte ``at_byte`` (in the enclosing function)."""
        scope = self.function_at(at_byte) if at_byte is not None else None

        def look(n: Node) -> Value | None:
            return self._name(node_text(n), scope, at_byte, frozenset())
        return evaluate_text(expr, look)

    def function_at(self, at_byte: int) -> Node | None:
        """The innermost function definition containing byte ``at_byte``."""
        n: Node | None = self.root.descendant_for_byte_range(at_byte, at_byte)
        while n is not None and n.type != "function_definition":
            n = n.parent
        return n

    def definition(self, name: str, scope: Node | None, before: int | None = None) -> tuple[str, Node | None]:
        """Where ``name`` gets its value at a use at byte ``before`` in ``scope``: ``("binding", None)``,
        ``("local", init)``, ``("local enum", enumerator)``, ``("template", host function)`` (a host template
        parameter, :meth:`template_const`), ``("file", init)``, ``("enum", enumerator)``, ``("define", value)``, or
        ``("none", None)`` (also when a local is declared more than once, reassigned, or declared after the use)."""
        name = _plain(name)
        if name in self.bindings:
            return "binding", None
        if scope is not None:
            decls = self.local_inits(scope, name)
            if decls:
                if len(decls) != 1 or self.assigned_in(scope, name):
                    return "none", None
                if before is not None and decls[0].start_byte > before:
                    return "none", None
                return "local", decls[0]
            e = self.enumerator(name, scope, before)
            if e is not None and e.function is not None:
                return "local enum", e.node
            tp = template_parameter(scope, name, self.src)
            if tp is not None:
                return "template", tp.function
        inits = self.file_inits(name)
        if inits:
            return "file", inits[0]
        e = self.enumerator(name, scope, before)
        if e is not None and e.function is None:
            return "enum", e.node
        d = self.define(name)
        return ("define", d) if d is not None else ("none", None)

    def _name(self, name: str, scope: Node | None, before: int | None, seen: frozenset[str]) -> Value | None:
        name = _plain(name)
        if name in seen:
            return None
        where, node = self.definition(name, scope, before)
        if where in ("enum", "local enum", "template"):
            c = self._special_const(where, name, scope, before, seen | {name})
            return c.value if c is not None else None
        if node is None and where == "none":  # the header evaluates it (and guards its own cycles)
            v = self._from_headers(name, seen)
            return BUILTIN_CONSTANTS.get(name) if v is None else v
        seen = seen | {name}
        if where == "binding":
            return self.bindings[name]
        if node is None:
            return None
        if where == "define":
            return evaluate_text(self.t(node), self.lookup(None, seen))
        return self._init_value(node, scope if where == "local" else None, seen)

    def _special_const(self, where: str, name: str, scope: Node | None, before: int | None,
                       seen: frozenset[str]) -> Const | None:
        """The constant of an enumerator or a host template parameter (``where`` as :meth:`definition` says)."""
        if where == "template":
            tp = template_parameter(scope, name, self.src)
            return self.template_const(tp, name)[0] if tp is not None else None
        e = self.enumerator(name, scope, before)
        return self._enum_const(e, seen) if e is not None else None

    def _init_value(self, v: Node, scope: Node | None, seen: frozenset[str]) -> Value | None:
        if v.type in ("initializer_list", "argument_list"):  # dim3 b{16, 16}: threads per block
            vals = [evaluate(c, self.lookup(scope, seen)) for c in v.named_children if c.type != "comment"]
            if not vals or any(x is None for x in vals):
                return None
            out = 1
            for x in vals:
                out *= x  # type: ignore[operator]
            return out
        return evaluate(v, self.lookup(scope, seen))

    def const(self, node: Node | None, scope: Node | None = None) -> Const | None:
        """The integer constant ``node`` evaluates to in ``scope``, with how to rewrite it; ``None`` when it is
        not a compile-time integer."""
        if node is None:
            return None
        node = unwrap_parens(node)
        if node.type == "number_literal":
            v = int_literal(self.t(node))
            return Const(v, node) if v is not None else None
        if node.type in ("identifier", "type_identifier", "qualified_identifier"):
            return self.const_name(self.t(node), scope, before=node.start_byte)
        v = self.value(node, scope)
        return Const(v) if isinstance(v, int) else None

    def const_name(self, name: str, scope: Node | None, before: int | None = None) -> Const | None:
        """Resolve identifier ``name`` to an integer :class:`Const` (see :meth:`const`)."""
        name = _plain(name)
        where, node = self.definition(name, scope, before)
        if where in ("enum", "local enum", "template"):
            return self._special_const(where, name, scope, before, frozenset({name}))
        if where == "binding":
            return Const(self.bindings[name], None, name)
        if node is None:  # from a header: the value, but nothing in this unit to rewrite
            v = self._from_headers(name, frozenset()) if where == "none" else None
            v = BUILTIN_CONSTANTS.get(name) if v is None and where == "none" else v
            return Const(v, None, name) if isinstance(v, int) and not isinstance(v, bool) else None
        if where != "define":
            inner = self.const(node, scope if where == "local" else None) if node.type != "identifier" else None
            return Const(inner.value, inner.literal, name, inner.preproc_range) if inner else None
        raw = self.t(node).strip()
        stripped = raw.strip("()").strip()
        v = int_literal(stripped)
        if v is not None:
            off = node.start_byte + self.t(node).index(stripped)
            return Const(v, None, name, (off, off + len(stripped.encode())))
        computed = evaluate_text(raw, self.lookup(None, frozenset({name})))
        return Const(computed, None, name) if isinstance(computed, int) else None


def _plain(name: str) -> str:
    """A name as looked up: whitespace removed, a leading ``::`` (the global namespace) dropped."""
    return "".join(name.split()).removeprefix("::")


def _lambda_of(node: Node) -> Node | None:
    """The lambda holding ``node`` (a use at file scope inside one), or ``None``."""
    while node is not None and node.type != "lambda_expression":
        node = node.parent  # type: ignore[assignment]
    return node


# ----------------------------------------------------------------------------------------- Python


def python_literal(text: str | None) -> bool | int | float | None:
    """Value of a Python literal number or bool (read with :func:`ast.literal_eval`, never executed)."""
    if text is None:
        return None
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return v if isinstance(v, bool | int | float) else None


def python_int(text: str) -> int | None:
    """Value of a Python integer literal (``1024``, ``1_024``, ``0x400``), else ``None``."""
    v = python_literal(text)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def python_constants(text: str | bytes, at_byte: int | None, root: Node | None = None, *,
                     any_literal: bool = False) -> dict[str, Any]:
    """Names bound to a literal (``BLOCK_SIZE = 64``) visible at byte ``at_byte`` of Python ``text``.

    Module-level assignments, then assignments earlier in the enclosing function(s) (the last
    one before ``at_byte`` wins; an assignment of a non-literal removes the name). ``root`` is the
    already parsed tree, when there is one. A literal is a number or a bool; with ``any_literal`` it is any value
    a Triton constexpr takes (also a string, ``None``, a dtype ``tl.float16``:
    :func:`htam_core.types.constexpr.read_constexpr`).
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    if root is None:
        root = parse(data, "python").root_node
    out: dict[str, Any] = {}

    def read(text: str) -> Any:
        if any_literal:
            return read_constexpr(text)
        v = python_literal(text)
        return UNKNOWN if v is None else v

    def grab(block: Node, stop: int | None) -> None:
        for st in block.named_children:
            if stop is not None and st.start_byte >= stop:
                break
            node = st.named_children[0] if st.type == "expression_statement" and st.named_children else st
            if node.type == "assignment":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is not None and left.type == "identifier" and right is not None:
                    v = read(data[right.start_byte:right.end_byte].decode("utf-8", "replace"))
                    name = data[left.start_byte:left.end_byte].decode()
                    if v is not UNKNOWN:
                        out[name] = v
                    else:
                        out.pop(name, None)
            elif stop is not None and st.start_byte <= stop < st.end_byte:
                body = st.child_by_field_name("body") or st.child_by_field_name("consequence")
                if st.type in ("function_definition", "decorated_definition"):
                    fn = st if st.type == "function_definition" else st.child_by_field_name("definition")
                    body = fn.child_by_field_name("body") if fn is not None else None
                if body is not None:
                    grab(body, stop)

    grab(root, at_byte)
    return out


_ZERO_WRAPPERS = (
    re.compile(r"^\([A-Za-z_][\w:<>]*\)(?P<v>[^()]+)$"),  # (T)0, (float) 0
    re.compile(r"^static_cast<[^<>]+>\((?P<v>[^()]+)\)$"),  # static_cast<T>(0)
    re.compile(r"^[A-Za-z_][\w:]*(?:<[^<>]*>)?[({](?P<v>[^(){}]+)[)}]$"),  # T(0), T{0}, scalar_t(0.0f)
)


def is_zero_value(text: str) -> bool:
    """True when the initializer ``text`` is the value zero as an accumulator's start is written: a literal
    (``0``, ``0.0f``, ``0.``, ``0u``) or one wrapped in a functional cast, a C cast or a ``static_cast``
    (``T(0)``, ``T{0}``, ``(float)0``, ``static_cast<T>(0)``). Any other expression is not read as zero."""
    t = "".join(text.split())
    while t.startswith("(") and t.endswith(")") and t.count("(") == 1:
        t = t[1:-1]
    for rx in _ZERO_WRAPPERS:
        m = rx.match(t)
        if m is not None:
            t = m.group("v")
            break
    v = literal_value(t)
    return v is not None and v == 0
