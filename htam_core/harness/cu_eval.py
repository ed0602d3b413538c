"""Evaluate the host code of a ``.cu`` program as ``main()`` runs it with no arguments.

A small abstract interpreter over the tree-sitter CUDA tree, just enough to read a kernel launch the way
people write it: integer and floating constants (``#define N (1 << 20)``, ``const int``, ``constexpr``,
function-like macros such as ``CEIL_DIV(a, b)``, namespace constants), ``sizeof`` of the basic types,
casts, ``std::min``/``max``, ``dim3`` values, ``argc``/``argv`` (the program is taken as run without
arguments: ``argc == 1``, so ``int n = argc > 1 ? atoi(argv[1]) : 1 << 20`` gives ``1 << 20`` and
``if (argc == 4) M = atoi(argv[1]);`` keeps ``M``'s default), and the buffers: ``cudaMalloc`` /
``cudaMallocManaged`` sizes, ``malloc``/``new T[n]``/``std::vector<T> v(n)`` host buffers, and which device
buffers get data from the host (``cudaMemcpy``) or are cleared (``cudaMemset``) before the launch.

Values a statement cannot give (a loop that changes a variable, ``argv[1]`` with no default, a call to an
unknown function) are :class:`Unknown` with a reason that names the line, so the caller's message says
exactly what is missing. Nothing here runs user code: it only reads the tree.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tree_sitter as ts

from htam_core.harness.cu_preproc import blank_untaken
from htam_core.source.analysis.constants import (
    CONVERSIONS,
    MINMAX,
    SIZEOF,
    ConstEnv,
    binary_op,
    convert,
    literal_value,
    unary_op,
)
from htam_core.source.analysis.device_queries import (
    HELPERS,
    OCCUPANCY_FLAGS,
    PROPERTIES_CALLS,
    PROPERTY_FIELDS,
    OccupancyQuery,
    attribute_quantity,
    occupancy_expressions,
    occupancy_query,
    property_quantity,
)
from htam_core.source.analysis.includes import local_headers
from htam_core.source.analysis.launch_macros import launch_view
from htam_core.source.analysis.syntax import unwrap_parens
from htam_core.source.parsing import new_parser, node_text

#: harness dtype of an element type (vector types count their scalar: a ``float4*`` buffer is float32; an unsigned
#: integer is the signed dtype of its width, the same bits: ``uint16_t`` samples are int16, drawn by ``randint``).
DTYPE_OF: dict[str, str] = {
    "float": "float32", "float2": "float32", "float4": "float32", "double": "float64", "double2": "float64",
    "half": "float16", "__half": "float16", "__nv_bfloat16": "bfloat16", "int": "int32", "int2": "int32",
    "int4": "int32", "int32_t": "int32", "unsigned": "int32", "unsigned int": "int32", "uint32_t": "int32",
    "long": "int64", "long long": "int64", "int64_t": "int64", "size_t": "int64", "unsigned long": "int64",
    "unsigned long long": "int64", "uint64_t": "int64", "short": "int16", "short int": "int16", "int16_t": "int16",
    "unsigned short": "int16", "unsigned short int": "int16", "uint16_t": "int16",
    "char": "int8", "signed char": "int8", "int8_t": "int8", "unsigned char": "uint8", "uint8_t": "uint8",
    "bool": "bool",
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|static|constexpr|"
                         r"register|extern|inline|std::)\b\s*")


def base_type(type_text: str) -> str:
    """``"const float *__restrict__"`` -> ``"float"``: the element type without qualifiers and ``*``."""
    t = _QUALIFIERS.sub("", type_text.replace("std::", "")).replace("*", " ").replace("&", " ")
    return " ".join(t.split())


class Unknown(Exception):  # noqa: N818 - a value, raised while evaluating
    """A value the host code does not determine; ``reason`` says why, with the line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeviceValue:
    """A value the program reads from its device at run time (``sms`` after ``cudaDeviceGetAttribute(&sms,
    cudaDevAttrMultiProcessorCount, dev)``, ``prop.multiProcessorCount``), carried as a harness expression over
    the device quantities (``sm_count * 4``; :mod:`~htam_core.source.analysis.device_queries`), which the
    harness reads again on the device that runs the kernel. Arithmetic with numbers gives another such value
    (C's integer ``/`` as ``//``: the values are non-negative); anything that needs the number here (a buffer
    size, a condition, a comparison) raises :class:`Unknown` with the reason.

    Attributes:
        text: the harness expression.
        quantities: the device quantities it reads (``("sm_count",)``; ``("occupancy",)`` for
            ``blocks_per_sm(256, 0)``).
        line: the 1-based line where the program reads it.
        kernels: the kernels whose occupancy it reads (``{"fill"}`` after
            ``cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fill, 256, 0)``): the harness reads the
            occupancy of the kernel it launches, so a launch of another kernel cannot use it.
    """

    def __init__(self, text: str, quantities: tuple[str, ...], line: int,
                 kernels: frozenset[str] = frozenset()) -> None:
        self.text, self.quantities, self.line, self.kernels = text, quantities, line, kernels

    def _operand(self) -> str:
        return self.text if self.text.isidentifier() or re.fullmatch(r"\w+\([^()]*(\([^()]*\))?[^()]*\)", self.text) \
            else f"({self.text})"

    def combine(self, op: str, other: Any, swapped: bool = False) -> DeviceValue:
        """``self op other`` (``other op self`` when ``swapped``) as a new value."""
        kernels = self.kernels
        if isinstance(other, DeviceValue):
            o, q = other._operand(), tuple(sorted(set(self.quantities) | set(other.quantities)))
            kernels = kernels | other.kernels
        elif isinstance(other, int | float) and not isinstance(other, bool):
            o, q = repr(other), self.quantities
        else:
            raise self.unknown(f"combined with {other!r}")
        a, b = (o, self._operand()) if swapped else (self._operand(), o)
        return DeviceValue(f"{a} {op} {b}", q, self.line, kernels)

    def unknown(self, why: str = "used where htam needs its number") -> Unknown:
        """The :class:`Unknown` for a use that needs the number itself."""
        return Unknown(f"`{self.text}` is read from the device at run time (line {self.line}) and {why}")

    def __add__(self, o: Any) -> DeviceValue: return self.combine("+", o)  # noqa: D105, E704
    def __radd__(self, o: Any) -> DeviceValue: return self.combine("+", o, True)  # noqa: D105, E704
    def __sub__(self, o: Any) -> DeviceValue: return self.combine("-", o)  # noqa: D105, E704
    def __rsub__(self, o: Any) -> DeviceValue: return self.combine("-", o, True)  # noqa: D105, E704
    def __mul__(self, o: Any) -> DeviceValue: return self.combine("*", o)  # noqa: D105, E704
    def __rmul__(self, o: Any) -> DeviceValue: return self.combine("*", o, True)  # noqa: D105, E704
    def __truediv__(self, o: Any) -> DeviceValue: return self.combine("//", o)  # noqa: D105, E704
    def __rtruediv__(self, o: Any) -> DeviceValue: return self.combine("//", o, True)  # noqa: D105, E704
    def __floordiv__(self, o: Any) -> DeviceValue: return self.combine("//", o)  # noqa: D105, E704
    def __rfloordiv__(self, o: Any) -> DeviceValue: return self.combine("//", o, True)  # noqa: D105, E704
    def __mod__(self, o: Any) -> DeviceValue: return self.combine("%", o)  # noqa: D105, E704
    def __lshift__(self, o: Any) -> DeviceValue: return self.combine("<<", o)  # noqa: D105, E704
    def __rshift__(self, o: Any) -> DeviceValue: return self.combine(">>", o)  # noqa: D105, E704
    def __neg__(self) -> DeviceValue: return DeviceValue(f"-{self._operand()}", self.quantities, self.line, self.kernels)  # noqa: D105, E704

    def __int__(self) -> int:  # noqa: D105
        raise self.unknown()

    __float__ = __index__ = __int__

    def __bool__(self) -> bool:  # noqa: D105
        raise self.unknown("decides a condition")

    def __lt__(self, o: Any) -> bool:  # noqa: D105
        raise self.unknown("is compared")

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        """The harness expression (a launch's grid is written with ``repr``)."""
        return self.text


def _dim_part(v: Any) -> Any:
    """A ``dim3`` component: a whole number, or a :class:`DeviceValue` as it is (``dim3 grid(per_sm * sms)``)."""
    return v if isinstance(v, DeviceValue) else int(v)


def _joined(vals: list[Any]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The device quantities and the occupancy kernels of the :class:`DeviceValue` among ``vals``, together."""
    devs = [v for v in vals if isinstance(v, DeviceValue)]
    return tuple(sorted({q for v in devs for q in v.quantities})), frozenset(k for v in devs for k in v.kernels)


class Converted(float):
    """A number with the C type a conversion intrinsic gave it (``__float2half(2.0f)``: 2.0 as ``__half``), so
    that a kernel parameter of a template type (``T alpha`` launched as ``k<__half>``) is passed with that type.
    Arithmetic on it gives a plain ``float``.

    Attributes:
        ctype: the C type (``"__half"``, ``"__nv_bfloat16"``, ``"float"``, ``"double"``).
    """

    ctype: str

    def __new__(cls, value: float, ctype: str) -> Converted:  # noqa: D102
        obj = super().__new__(cls, value)
        obj.ctype = ctype
        return obj


@dataclass(frozen=True)
class DeviceProps:
    """A ``cudaDeviceProp`` filled by ``cudaGetDeviceProperties`` (line ``line``): its fields are read on the device."""

    var: str
    line: int


class Unreached(Exception):  # noqa: N818 - control flow of the evaluator
    """The launch is under a condition that is false for this call (try the next call site).

    Attributes:
        selector: for a ``switch`` whose value selects another case, the switch's value expression (an
            identifier can be traced to the variable that chooses the case), else ``None``.
        wanted: the case value that reaches the launch (with ``selector``).
    """

    def __init__(self, message: str, selector: ts.Node | None = None, wanted: Any = None) -> None:
        super().__init__(message)
        self.selector = selector
        self.wanted = wanted


@dataclass
class Buffer:
    """A buffer of the program.

    Attributes:
        var: the variable it was allocated into (``d_out``).
        elem: element type as written (``float``).
        line: 1-based line of the allocation.
        numel: elements, or ``None`` when the size is unknown (then :attr:`why` says why).
        device: allocated with ``cudaMalloc``/``cudaMallocManaged`` (host buffers are ``False``).
        filled: ``"host"`` (a ``cudaMemcpy`` from the host before the launch), ``"memset"`` (cleared with
            ``cudaMemset(.., 0, ..)``) or ``None`` (never written before the launch).
        fill_byte: the byte value of a ``cudaMemset`` with a value other than 0 (``cudaMemset(v, 1, ..)``: every
            byte 1), else ``None``.
    """

    var: str
    elem: str
    line: int
    numel: int | None = None
    why: str | None = None
    device: bool = True
    filled: str | None = None
    fill_byte: int | None = None


@dataclass(frozen=True)
class Ptr:
    """A pointer value: the start of a :class:`Buffer` (``offset`` elements in)."""

    buffer: Buffer
    offset: int = 0


@dataclass(frozen=True)
class Dim3:
    """A ``dim3`` value."""

    x: int
    y: int = 1
    z: int = 1

    def as_tuple(self) -> tuple[int, int, int]:
        """``(x, y, z)``."""
        return (self.x, self.y, self.z)


@dataclass(frozen=True)
class StructValue:
    """A value of a struct or class type the host code builds (``Weights w = {0.5f, 0.25f};``), passed to a kernel
    by value; ``fields`` are the brace initializer's values in order (``None``: no brace initializer; a value not
    read is ``None``, a nested brace list a tuple), ``assigned`` the designated initializers and field assignments
    that follow, ``(path, value)`` in program order (``("s.x", 1.0)`` for ``w.s.x = 1.0f;``)."""

    type: str
    fields: tuple[Any, ...] | None = None
    assigned: tuple[tuple[str, Any], ...] = ()


@dataclass
class PtrVar:
    """A declared pointer variable not yet pointing at a buffer (``float *d_a;``)."""

    elem: str
    line: int


@dataclass
class Scope:
    """Variables of one function as evaluated so far (``Unknown`` values hold their reason)."""

    values: dict[str, Any] = field(default_factory=dict)
    parent: Scope | None = None
    #: template type parameters bound in this function (``T`` -> ``float``), from the call that reached it
    types: dict[str, str] = field(default_factory=dict)

    def type_of(self, name: str) -> str | None:
        """The type bound to template parameter ``name`` here or in an enclosing scope, else ``None``."""
        s: Scope | None = self
        while s is not None:
            if name in s.types:
                return s.types[name]
            s = s.parent
        return None

    def get(self, name: str) -> Any:
        """The value of ``name`` here or in an enclosing scope; ``KeyError`` when undeclared."""
        s: Scope | None = self
        while s is not None:
            if name in s.values:
                return s.values[name]
            s = s.parent
        raise KeyError(name)

    def set(self, name: str, value: Any) -> None:
        """Assign ``name`` where it is declared (here when it is not)."""
        s: Scope | None = self
        while s is not None:
            if name in s.values:
                s.values[name] = value
                return
            s = s.parent
        self.values[name] = value


def line_of(node: ts.Node) -> int:
    """1-based line of a node."""
    return node.start_point[0] + 1


def parse_expression(text: str) -> ts.Node:
    """The tree of the C expression ``text`` (wrapped in a declaration and parsed alone)."""
    src = f"auto __htam_v = ({text});".encode()
    root = new_parser("cuda").parse(src).root_node
    for n in _walk(root):
        if n.type == "init_declarator":
            v = n.child_by_field_name("value")
            if v is not None:
                return v
    raise Unknown(f"`{text}` is not an expression")


def _walk(node: ts.Node) -> list[ts.Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out


#: C math functions host code computes sizes with (``(int)sqrtf(n)``, ``powf(2, k)``), beside ``MINMAX``.
_HOST_MATH: dict[str, Any] = {"abs": abs, "fabs": abs, "fabsf": abs, "pow": math.pow, "powf": math.pow,
                              "sqrt": math.sqrt, "sqrtf": math.sqrt, "exp": math.exp, "expf": math.exp,
                              "log": math.log, "logf": math.log}
#: the pitch htam gives a ``cudaMallocPitch`` buffer: the row's bytes rounded up to a multiple of this
PITCH_ALIGN = 512
#: the pitched allocation, copy and set calls of the CUDA runtime (:meth:`Program._pitched_call`)
_PITCHED = frozenset({"cudaMallocPitch", "cudaMemcpy2D", "cudaMemcpy2DAsync", "cudaMemset2D", "cudaMemset2DAsync"})
_ARGV_PARSERS = {"atoi", "atol", "atoll", "atof", "strtol", "strtoul", "strtoll", "strtof", "strtod", "stoi",
                 "stol", "stoul", "stoll", "stof", "stod"}


@dataclass
class Macro:
    """A ``#define``: object-like (``params is None``) or function-like."""

    name: str
    value: str
    params: list[str] | None
    line: int


class Program:
    """The host side of one ``.cu`` file: macros, global constants and functions, ready to evaluate.

    Args:
        text: the file's source.
        path: the file; the macros, constants, typedefs and functions of its local ``#include "..."``
            headers (:func:`htam_core.source.analysis.includes.local_headers`) are read first, as the
            preprocessor would paste them. ``None``: in-memory text, no headers.
    """

    def __init__(self, text: str, path: str | Path | None = None) -> None:
        self.text = text
        self.macros: dict[str, Macro] = {}
        self.functions: dict[str, list[ts.Node]] = {}
        #: ``typedef float floatX;`` / ``using floatX = float;``: alias -> element type (the last one read wins)
        self.typedefs: dict[str, str] = {}
        self.globals = Scope()
        #: values forced on a declared variable: ``(start byte of its function, name)`` -> value; set by the
        #: inference so that a ``switch (whichKernel)`` reaches the case launching the kernel asked for
        self.pins: dict[tuple[int, str], Any] = {}
        self._calls_depth = 0
        self.headers = local_headers(text.encode("utf-8"), path)
        self._aggregates: frozenset[str] | None = None
        self._consts: ConstEnv | None = None  # the analysis layer's constants of the parsed file (enumerators)
        for h in self.headers:
            self._collect(h.root, prefix="")
        #: the parsed bytes: the file with its decidable ``#if`` groups resolved (same length and lines;
        #: :func:`htam_core.harness.cu_preproc.blank_untaken`) and its launch macro uses expanded on their lines
        #: (:func:`~htam_core.source.analysis.launch_macros.launch_view`: ``LAUNCH(k, n, a)`` reads as the
        #: ``k<<<...>>>(a)`` it stands for; lines kept, offsets after a use shifted); node offsets index these (the
        #: root node's own ``text`` starts at its first token, so it must not be used to slice)
        self.src = launch_view(blank_untaken(text.encode("utf-8"), self._defined, self._macro_text,
                                             self._pp_evaluate))
        self.tree = new_parser("cuda").parse(self.src)
        self._collect(self.tree.root_node, prefix="")

    def aggregates(self) -> frozenset[str]:
        """The names of the structs, classes and unions the file (and its local headers) defines with a body:
        ``struct Weights { float wa, wb; };``, ``typedef struct { ... } Params;``. A kernel parameter of such a
        type is passed by value as a whole object, not as a number."""
        if self._aggregates is not None:
            return self._aggregates
        tree: ts.Tree | None = getattr(self, "tree", None)  # None while the headers' globals are read
        out: set[str] = set()
        for root in [h.root for h in self.headers] + ([tree.root_node] if tree is not None else []):
            stack = [root]
            while stack:
                n = stack.pop()
                stack.extend(n.named_children)
                if n.type not in ("struct_specifier", "class_specifier", "union_specifier") or \
                        n.child_by_field_name("body") is None:
                    continue
                name = n.child_by_field_name("name")
                if name is not None:
                    out.add(node_text(name).split("::")[-1])
                if n.parent is not None and n.parent.type == "type_definition":
                    out.update(node_text(d).strip("* ") for d in n.parent.children_by_field_name("declarator"))
        if tree is None:
            return frozenset(out)
        self._aggregates = frozenset(out)
        return self._aggregates

    def _macro_text(self, name: str) -> str | None:
        """The replacement text of an object-like macro of the headers read so far (``None``: none)."""
        m = self.macros.get(name)
        return m.value if m is not None and m.params is None and m.value else None

    def _pp_evaluate(self, expr: str) -> int | float | None:
        """The value of an ``#if`` expression with no identifiers left (``None`` when it has none)."""
        try:
            v = self.ev(parse_expression(expr), Scope())
        except Unknown:
            return None
        return v if isinstance(v, int | float) else None

    # -- collection --------------------------------------------------------------------------------
    def _collect(self, node: ts.Node | _OwnLines, prefix: str) -> None:
        for child in node.named_children:
            t = child.type
            if t in ("preproc_def", "preproc_function_def"):
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                params = child.child_by_field_name("parameters")
                if name is not None:
                    self.macros[node_text(name)] = Macro(
                        node_text(name), node_text(value).strip() if value is not None else "",
                        [node_text(p) for p in params.named_children] if params is not None else None,
                        line_of(child))
            elif t == "namespace_definition":
                nm = child.child_by_field_name("name")
                body = child.child_by_field_name("body")
                if body is not None:
                    self._collect(body, f"{prefix}{node_text(nm)}::" if nm is not None else prefix)
            elif t in ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef") and \
                    (taken := self._taken_branch(child)) is not None:
                if taken is not False:
                    self._collect(taken, prefix)
            elif t in ("template_declaration", "linkage_specification", "declaration_list", "ERROR",
                       "preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"):
                if t == "preproc_if" and _false_if(child):
                    continue
                self._collect(child if t != "linkage_specification" else (child.child_by_field_name("body")
                                                                          or child), prefix)
            elif t in ("type_definition", "alias_declaration"):
                ty = child.child_by_field_name("type")
                names = child.children_by_field_name("declarator") if t == "type_definition" else \
                    [child.child_by_field_name("name")]
                for d in names:
                    if ty is not None and d is not None and d.type == "type_identifier":
                        self.typedefs[node_text(d)] = self.resolve(base_type(node_text(ty)))
            elif t == "function_definition":
                name = function_name(child)
                if name:
                    self.functions.setdefault(name, []).append(child)
            elif t == "declaration":
                self.exec_declaration(child, self.globals)
                if prefix:  # namespace constants answer to mlp::kBlock as well as kBlock
                    for k in _declared_names(child):
                        if k in self.globals.values:
                            self.globals.values[prefix + k] = self.globals.values[k]

    def _taken_branch(self, node: ts.Node) -> ts.Node | _OwnLines | bool | None:
        """For ``#if defined(X)`` / ``#ifdef X`` / ``#ifndef X`` (and their ``#elif`` chain), decided by the
        macros defined above: a node whose children are the taken branch (a ``preproc_else``/``elif`` is
        collected as its own children; :class:`_OwnLines` when the ``#if``'s own lines are taken), ``False`` when no branch is taken, ``None`` when the condition is not a
        ``defined`` test (then every branch is read, as before)."""
        cond = node.child_by_field_name("condition")
        name = node.child_by_field_name("name")
        if cond is not None:
            m = re.fullmatch(r"(!?)\s*defined\s*\(?\s*(\w+)\s*\)?", node_text(cond).strip())
            if m is None:
                return None
            value = self._defined(m.group(2)) != bool(m.group(1))
        elif name is not None:
            value = self._defined(node_text(name)) != node_text(node.children[0]).endswith("ifndef")
        else:
            return None
        alt = node.child_by_field_name("alternative")
        if value:
            return _OwnLines(node, alt)
        if alt is None:
            return False
        if alt.type == "preproc_else":
            return alt
        taken = self._taken_branch(alt)
        return alt if taken is None else taken

    def _defined(self, name: str) -> bool:
        """``defined(name)`` in nvcc's host pass: a macro of the file, or one nvcc predefines there."""
        return name in self.macros or name in _HOST_PREDEFINED

    def resolve(self, elem: str, scope: Scope | None = None) -> str:
        """An element type through the template bindings of ``scope`` (``T`` -> ``float`` when the call chain
        instantiated ``runTest<float>``) and the file's typedefs (``floatX`` -> ``float``); unknown names stay."""
        bound = scope.type_of(elem) if scope is not None else None
        elem = bound if bound is not None else elem
        seen: set[str] = set()
        while elem in self.typedefs and elem not in seen:
            seen.add(elem)
            elem = self.typedefs[elem]
        return elem

    def bind_params(self, fn: ts.Node, call: ts.Node, outer: Scope, inner: Scope) -> None:
        """Bind the parameters of function or lambda ``fn`` in ``inner`` to ``call``'s arguments, evaluated in
        ``outer`` (a brace literal of a struct, ``Weights{0.5f, 0.25f}``, as that struct's value); a parameter the
        call does not pass takes its default, evaluated in ``inner``. A value htam cannot read is kept as an
        :class:`Unknown` with its reason, so only a use of it fails."""
        args = call_args(call)
        for i, (name, decl) in enumerate(zip(param_names(fn), param_declarations(fn), strict=True)):
            if not name:
                continue
            if i < len(args):
                v, err = self.value_of(args[i], outer)
                inner.values[name] = v if err is None else Unknown(err)
                continue
            default = decl.child_by_field_name("default_value")
            v, err = self.value_of(default, inner) if default is not None else (None, "has no value")
            inner.values[name] = v if err is None else Unknown(f"parameter `{name}` {err}")

    def value_of(self, node: ts.Node, scope: Scope) -> tuple[Any, str | None]:
        """``(value, None)`` of expression ``node`` in ``scope`` (a struct's brace literal as its value), or ``(None,
        reason)`` when htam cannot read it."""
        literal = self.struct_literal(node, scope)  # Weights{0.5f, 0.25f} passed in the launch
        if literal is not None:
            return literal, None
        try:
            return self.ev(node, scope), None
        except Unknown as e:
            return None, e.reason

    def bind_template(self, fn: ts.Node, call: ts.Node, outer: Scope, inner: Scope) -> None:
        """Bind the template parameters of host function ``fn`` in ``inner`` for ``call`` (evaluated in
        ``outer``): the explicit arguments (``runTest<float>(...)``, ``reduce<T>(...)`` with ``T`` bound in
        ``outer``), else a type deduced from a pointer argument (``T *d_in`` passed a ``float`` buffer).
        Parameters that stay unbound are left out (a ``sizeof(T)`` then says so)."""
        params = template_params(fn)
        if not params:
            return
        f = call.child_by_field_name("function")
        targs = f.child_by_field_name("arguments") if f is not None and f.type == "template_function" else None
        for (name, is_type), a in zip(params, targs.named_children if targs is not None else [], strict=False):
            if is_type:
                inner.types[name] = self.resolve(base_type(node_text(a)), outer)
            else:
                try:
                    inner.values[name] = self.ev(a.named_children[0] if a.type == "type_descriptor"
                                                 and a.named_children else a, outer)
                except Unknown as e:
                    inner.values[name] = e
        args = call.child_by_field_name("arguments")
        for decl, a in zip(param_declarations(fn), args.named_children if args is not None else [], strict=False):
            ty = decl.child_by_field_name("type")
            t = node_text(ty) if ty is not None else ""
            if t in dict(params) and t not in inner.types and "*" in node_text(decl):
                try:
                    v = self.ev(a, outer)
                except Unknown:
                    continue
                if isinstance(v, Ptr):
                    inner.types[t] = self.resolve(base_type(v.buffer.elem))

    # -- expressions -------------------------------------------------------------------------------
    def ev(self, node: ts.Node, scope: Scope) -> Any:
        """Value of the expression ``node`` in ``scope``: an int, float, :class:`Dim3` or :class:`Ptr`.

        Raises:
            Unknown: the value depends on something the host code does not determine (the reason names it).
        """
        t = node.type
        text = node_text(node)
        if t == "number_literal":
            v = literal_value(text)
            if v is None:
                raise Unknown(f"`{text}` (line {line_of(node)}) is not a number htam can read")
            return v
        if t in ("true", "false"):
            return int(t == "true")
        if t == "char_literal":
            return ord(text.strip("'")[:1] or "\0")
        if t == "parenthesized_expression":
            return self.ev(node.named_children[-1], scope)
        if t in ("identifier", "qualified_identifier"):
            return self.lookup(text, node, scope)
        if t == "binary_expression":
            op = node_text(node.child_by_field_name("operator"))
            a = self.ev(node.child_by_field_name("left"), scope)
            if op == "&&" and not a:
                return 0
            if op == "||" and a:
                return 1
            b = self.ev(node.child_by_field_name("right"), scope)
            if isinstance(a, Ptr) or isinstance(b, Ptr):
                raise Unknown(f"`{text}` (line {line_of(node)}) is pointer arithmetic: pass the start of a buffer")
            # C's `/` of values read on the device: `//` of the harness expression (they are non-negative)
            v = a // b if op == "/" and (isinstance(a, DeviceValue) or isinstance(b, DeviceValue)) else \
                binary_op(op, a, b)
            if v is None:
                raise Unknown(f"operator {op} in `{text}` (line {line_of(node)}) has no constant value")
            return v
        if t == "unary_expression":
            op = node_text(node.child_by_field_name("operator"))
            v = unary_op(op, self.ev(node.child_by_field_name("argument"), scope))
            if v is None:
                raise Unknown(f"operator {op} in `{text}` (line {line_of(node)}) has no constant value")
            return v
        if t == "conditional_expression":
            c = self.ev(node.child_by_field_name("condition"), scope)
            return self.ev(node.child_by_field_name("consequence" if c else "alternative"), scope)
        if t == "cast_expression":
            v = self.ev(node.child_by_field_name("value"), scope)
            return _cast(node_text(node.child_by_field_name("type")), v)
        if t == "field_expression":  # threads.x of a dim3
            obj = self.ev(node.child_by_field_name("argument"), scope)
            member = node_text(node.child_by_field_name("field"))
            if isinstance(obj, Dim3) and member in ("x", "y", "z"):
                return getattr(obj, member)
            if isinstance(obj, DeviceProps):
                q = property_quantity(member)
                if q is None:
                    raise Unknown(f"`{text}` (line {line_of(node)}) is a device property htam does not read "
                                  f"(it reads {', '.join(PROPERTY_FIELDS)})")
                return DeviceValue(q, (q,), obj.line)
        if t == "sizeof_expression":
            return self.sizeof(node, scope)
        if t == "pointer_expression":
            raise Unknown(f"`{text}` (line {line_of(node)}) takes an address")
        if t == "call_expression":
            return self.call(node, scope)
        if t == "subscript_expression":
            arg = node.child_by_field_name("argument")
            if arg is not None and node_text(arg) == "argv":
                raise Unknown(f"`{text}` (line {line_of(node)}) is a command-line argument with no default")
            arr = self.ev(arg, scope) if arg is not None else None
            idx = node.child_by_field_name("index") or (node.named_children[-1] if node.named_children else None)
            if isinstance(arr, list) and idx is not None:
                i = self.ev(idx.named_children[-1] if idx.type == "subscript_argument_list" else idx, scope)
                if isinstance(i, int) and 0 <= i < len(arr):
                    return arr[i]
        if t == "initializer_list" and 0 < node.named_child_count <= 3:  # dim3 b = {16, 16}
            vals = [self.ev(c, scope) for c in node.named_children]
            return Dim3(*[int(v) for v in vals[:3]])
        raise Unknown(f"`{text}` (line {line_of(node)}) is not a constant expression htam can read")

    def lookup(self, name: str, node: ts.Node, scope: Scope) -> Any:
        """Value of a variable, constant or object-like macro ``name``."""
        if name == "argc":
            return 1
        for key in (name, name.split("::")[-1]):
            try:
                v = scope.get(key)
            except KeyError:
                try:
                    v = self.globals.get(key)
                except KeyError:
                    continue
            if isinstance(v, Unknown):
                raise Unknown(v.reason)
            if isinstance(v, PtrVar):
                raise Unknown(f"`{key}` (line {line_of(node)}) is a pointer never allocated before the launch")
            return v
        macro = self.macros.get(name.split("::")[-1])
        if macro is not None and macro.params is None and macro.value:
            return self.ev(parse_expression(macro.value), self.globals)
        value = self.enumerator(name, node)
        if value is not None:
            return value
        raise Unknown(f"`{name}` (line {line_of(node)}) is not defined before the launch")

    def enumerator(self, name: str, node: ts.Node) -> int | None:
        """The value of the enumerator ``name`` used at ``node`` (``cfg::BLOCK`` of ``namespace cfg { enum { BLOCK
        = 256 }; }``, ``Hist::Threads`` of an ``enum class``, ``Cfg::kThreads`` of an enum in a struct, one of a
        local header), read by the analysis layer's one constant evaluator
        (:meth:`~htam_core.source.analysis.constants.ConstEnv.enumerator_value`, with the same scoping rules);
        ``None`` when no enumerator answers to ``name``. A node of this file's tree is looked up where it stands
        (an enum declared in its function first), any other (a macro's value) at file scope."""
        tree: ts.Tree | None = getattr(self, "tree", None)  # None while the headers' globals are read
        if tree is None:
            return None
        if self._consts is None:
            self._consts = ConstEnv(self.src, tree.root_node, headers=self.headers)
        at = node.start_byte if self.src[node.start_byte:node.end_byte] == node_text(node).encode() else None
        return self._consts.enumerator_value(name, at)

    def sizeof(self, node: ts.Node, scope: Scope) -> int:
        """``sizeof(T)`` / ``sizeof x`` in bytes."""
        ty = node.child_by_field_name("type")
        if ty is not None:
            t = self.resolve(base_type(node_text(ty)), scope)
            if "*" in node_text(ty):
                return 8
        else:
            val = node.child_by_field_name("value")
            name = node_text(val).strip("() ") if val is not None else ""
            if name.startswith("*"):
                try:
                    v = scope.get(name.lstrip("* "))
                except KeyError:
                    v = None
                if isinstance(v, Ptr):
                    return SIZEOF.get(base_type(v.buffer.elem), 4)
                if isinstance(v, PtrVar):
                    return SIZEOF.get(base_type(v.elem), 4)
            t = self.resolve(base_type(name), scope)
        if t in SIZEOF:
            return SIZEOF[t]
        raise Unknown(f"sizeof({t}) (line {line_of(node)}) is not a type htam knows the size of")

    def call(self, node: ts.Node, scope: Scope) -> Any:
        """A call in an expression: ``dim3(...)``, ``min``/``max``, casts, macros, ``v.size()``, argv parsers."""
        fn = node.child_by_field_name("function")
        args = [a for a in (node.child_by_field_name("arguments").named_children
                            if node.child_by_field_name("arguments") is not None else []) if a.type != "comment"]
        fname = node_text(fn) if fn is not None else ""
        short = re.sub(r"<.*>$", "", fname).split("::")[-1]
        if fn is not None and fn.type == "field_expression":
            obj = node_text(fn.child_by_field_name("argument"))
            member = node_text(fn.child_by_field_name("field"))
            try:
                v = scope.get(obj)
            except KeyError:
                v = None
            if isinstance(v, Ptr) and member == "size" and v.buffer.numel is not None:
                return v.buffer.numel
            if isinstance(v, Ptr) and member == "data":
                return v
            raise Unknown(f"`{node_text(node)}` (line {line_of(node)}) calls a method htam cannot evaluate")
        if short in _ARGV_PARSERS:
            raise Unknown(f"`{node_text(node)}` (line {line_of(node)}) depends on a command-line argument with "
                          "no default")
        if short in ("static_cast", "reinterpret_cast", "const_cast") and args:
            return self.ev(args[0], scope)
        if short in CONVERSIONS and len(args) == 1:  # __float2half(2.0f), __float2int_rn(x), __half(1.5f)
            return self._converted(short, node, self.ev(args[0], scope))
        if short in HELPERS and len(args) == HELPERS[short][0]:  # htam's own grid helpers
            vals = [self.ev(a, scope) for a in args]
            texts = [v.text if isinstance(v, DeviceValue) else repr(v) for v in vals]
            quantities, kernels = _joined(vals)
            return DeviceValue(HELPERS[short][1].format(*texts), tuple(sorted({"sm_count", *quantities})),
                               line_of(node), kernels)
        if short == "dim3":
            vals = [_dim_part(self.ev(a, scope)) for a in args]
            return Dim3(*vals) if vals else Dim3(1)
        fn = MINMAX.get(short) or _HOST_MATH.get(short)
        if fn is not None and args:
            vals = [self.ev(a, scope) for a in args]
            dv = next((v for v in vals if isinstance(v, DeviceValue)), None)
            if dv is not None and fn in (min, max) and len(vals) == 2:
                texts = [v.text if isinstance(v, DeviceValue) else repr(v) for v in vals]
                quantities, kernels = _joined(vals)
                return DeviceValue(f"{fn.__name__}({texts[0]}, {texts[1]})", quantities, dv.line, kernels)
            return fn(*vals)
        if short == "abs" and len(args) == 1:
            return abs(self.ev(args[0], scope))
        if short in ("ceil", "floor", "ceilf", "floorf") and args:
            import math

            return int(getattr(math, short.rstrip("f"))(self.ev(args[0], scope)))
        if short in SIZEOF or short in ("int", "float", "double", "long", "unsigned", "size_t"):
            return _cast(short, self.ev(args[0], scope)) if args else 0
        macro = self.macros.get(short)
        if macro is not None and macro.params is not None:
            inner = Scope(parent=scope)
            for p, a in zip(macro.params, args, strict=False):
                inner.values[p] = self.ev(a, scope)
            return self.ev(parse_expression(macro.value), inner)
        why = ""
        fn = next((f for f in self.functions.get(short, []) if f.child_by_field_name("body") is not None), None)
        if fn is not None:
            ret, why = self._helper_value(fn, args, scope)
            if ret is not None:
                return ret
        raise Unknown(f"`{node_text(node)}` (line {line_of(node)}) calls {short}, which htam does not evaluate"
                      + (f" ({why})" if why else ""))

    @staticmethod
    def _converted(name: str, node: ts.Node, v: Any) -> Any:
        """The value of conversion intrinsic ``name`` (:data:`~htam_core.source.analysis.constants.CONVERSIONS`)
        of ``v`` at ``node``: an ``int``, or a :class:`Converted` number carrying its C type.

        Raises:
            Unknown: ``v`` is not a number, or the conversion has no value (an infinity to an integer).
        """
        out = convert(name, v) if isinstance(v, int | float) else None
        if out is None:
            raise Unknown(f"`{node_text(node)}` (line {line_of(node)}) converts a value htam cannot read as a number")
        return out if isinstance(out, int) else Converted(out, CONVERSIONS[name][0])

    def _helper_value(self, fn: ts.Node, args: list[ts.Node], scope: Scope) -> tuple[Any, str]:
        """The value of a host helper of numbers called with ``args`` (``static int get_blocks(int64_t n, int64_t t
        = 256) { int64_t b = (n + t - 1) / t; return b < 4096 ? b : 4096; }``): its declarations, assignments,
        ``if``/``else`` and ``return`` run in order (a parameter the call does not pass takes its default), the
        value cast to the return type, as the C++ abstract machine would run it.

        Returns:
            ``(value, "")``, or ``(None, why)`` when the body holds something else (a loop, a call statement) or
            ends without a return.

        Raises:
            Unknown: an argument, a condition or the returned expression is not known here.
        """
        body = fn.child_by_field_name("body")
        bad = _impure_statement(body) if body is not None else None
        if body is None or bad is not None:
            return None, f"its body has a {bad.type.replace('_', ' ') if bad is not None else 'missing body'}" + (
                f" at line {line_of(bad)}" if bad is not None else "")
        if self._calls_depth > 8:
            raise Unknown("the calls nest too deep")
        inner = Scope(parent=self.globals)
        for i, (d, n) in enumerate(zip(param_declarations(fn), param_names(fn), strict=True)):
            default = d.child_by_field_name("default_value")
            if n and i < len(args):
                inner.values[n] = self.ev(args[i], scope)
            elif n and default is not None:
                inner.values[n] = self.ev(default, inner)
        self._calls_depth += 1
        try:
            self._run_helper(body, inner)
        except _Returned as r:
            ty = fn.child_by_field_name("type")
            return (_cast(node_text(ty), r.value) if ty is not None and isinstance(r.value, int | float)
                    else r.value), ""
        finally:
            self._calls_depth -= 1
        return None, "it ends without a return"

    def _run_helper(self, stmt: ts.Node, scope: Scope) -> None:
        """Run one statement of a helper of numbers (:meth:`_helper_value`, which checked its kinds).

        Raises:
            _Returned: a ``return`` was reached, with its value.
            Unknown: a condition or the returned value is not known here.
        """
        if stmt.type == "compound_statement":
            inner = Scope(parent=scope)
            for s in stmt.named_children:
                self._run_helper(s, inner)
        elif stmt.type == "declaration":
            self.exec_declaration(stmt, scope)
        elif stmt.type == "expression_statement":
            for e in stmt.named_children:
                self.exec_assignment(e, scope)
        elif stmt.type == "return_statement":
            raise _Returned(self.ev(stmt.named_children[0], scope))
        elif stmt.type == "if_statement":
            cond = stmt.child_by_field_name("condition")
            c = self.ev(cond.named_children[-1] if cond is not None and cond.named_children else cond, scope)
            alt = stmt.child_by_field_name("alternative")
            if alt is not None and alt.type == "else_clause":
                alt = alt.named_children[-1] if alt.named_children else None
            chosen = stmt.child_by_field_name("consequence") if c else alt
            if chosen is not None:
                self._run_helper(chosen, scope)

    # -- statements --------------------------------------------------------------------------------
    def exec_declaration(self, decl: ts.Node, scope: Scope) -> None:
        """Declare the variables of ``decl`` in ``scope`` with their values (``Unknown`` when not readable)."""
        ty = decl.child_by_field_name("type")
        type_text = node_text(ty) if ty is not None else ""
        for d in decl.children_by_field_name("declarator"):
            name_node, ptr, value = _declarator_parts(d)
            if name_node is None:
                continue
            name = node_text(name_node)
            spelled = base_type(type_text).split("::")[-1]  # a typedef'd struct (typedef struct {...} W;) keeps its name
            elem = spelled if spelled in self.aggregates() else self.resolve(base_type(type_text), scope)
            vector = re.match(r"^(?:std::)?vector\s*<\s*(.+?)\s*>$", " ".join(type_text.split()))
            try:
                if vector is not None:
                    scope.values[name] = self._vector(name, vector.group(1), d, value, scope)
                elif d.type == "function_declarator":
                    if decl.parent is None or decl.parent.type == "translation_unit" or elem != "dim3":
                        continue  # a declaration of a function
                    params = d.child_by_field_name("parameters")  # dim3 block(16, 16): the most vexing parse
                    vals = [self.ev(parse_expression(node_text(q)), scope)
                            for q in (params.named_children if params is not None else [])]
                    scope.values[name] = Dim3(*[_dim_part(v) for v in vals]) if vals else Dim3(1)
                elif ptr:
                    scope.values[name] = self._pointer_init(name, elem, d, value, scope)
                elif value is None:
                    scope.values[name] = (Dim3(1) if elem == "dim3" else StructValue(elem) if elem in self.aggregates() else
                                          Unknown(f"`{name}` (line {line_of(d)}) has no value before the launch"))
                elif value.type == "initializer_list" and _is_struct(elem) and not _is_array(d):
                    scope.values[name] = StructValue(elem, *self._brace(value, scope))
                elif value.type == "initializer_list" and _is_array(d):  # int sizes[] = {32, 64}
                    scope.values[name] = [_cast(elem, self.ev(c, scope)) for c in value.named_children
                                          if c.type != "comment"]
                elif value.type == "argument_list":  # dim3 grid(a, b) or T x(v)
                    vals = [self.ev(a, scope) for a in value.named_children]
                    scope.values[name] = Dim3(*[_dim_part(v) for v in vals]) if elem == "dim3" else vals[0]
                else:
                    v = self.ev(value, scope)
                    scope.values[name] = v if elem in ("dim3", "auto") or not isinstance(v, int | float) \
                        else _cast(elem, v)
            except Unknown as e:
                scope.values[name] = e
            pin = self.pins.get((_function_start(decl), name))
            if pin is not None:  # the variable that selects the asked kernel's case (see ``pins``)
                scope.values[name] = pin

    def struct_literal(self, node: ts.Node, scope: Scope) -> StructValue | None:
        """``Weights{0.5f, 0.25f}`` / ``(Weights){...}`` written in place (a launch's argument) as a struct value;
        ``None`` for any other expression or a type the file does not define as a struct."""
        ty, value = node.child_by_field_name("type"), node.child_by_field_name("value")
        if node.type != "compound_literal_expression" or ty is None or value is None or \
                base_type(node_text(ty)) not in self.aggregates():
            return None
        return StructValue(base_type(node_text(ty)), *self._brace(value, scope))

    def _brace(self, value: ts.Node, scope: Scope) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]:
        """A brace initializer's values in order (a nested list a tuple; one not read ``None``) and its designated
        ones (``.wa = 0.5f``: ``("wa", 0.5)``)."""
        items: list[Any] = []
        named: list[tuple[str, Any]] = []
        for c in value.named_children:
            if c.type == "initializer_pair":
                v = c.child_by_field_name("value")
                path = "".join(node_text(d) for d in c.children_by_field_name("designator")).replace(" ", "")
                named.append((path.lstrip("."), self._brace(v, scope)[0] if v is not None and
                              v.type == "initializer_list" else self._maybe(v, scope) if v is not None else None))
            elif c.type == "initializer_list":
                items.append(self._brace(c, scope)[0])
            elif c.type != "comment":
                items.append(self._maybe(c, scope))
        return tuple(items), tuple(named)

    def _maybe(self, node: ts.Node, scope: Scope) -> Any:
        """The value of ``node``, or ``None`` when it cannot be read."""
        try:
            return self.ev(node, scope)
        except Unknown:
            return None

    def _vector(self, name: str, elem: str, d: ts.Node, value: ts.Node | None, scope: Scope) -> Any:
        if d.type == "function_declarator":  # std::vector<float> h(n): C++'s most vexing parse
            params = d.child_by_field_name("parameters")
            exprs = [parse_expression(node_text(p)) for p in params.named_children] if params is not None else []
        elif value is not None and value.type in ("argument_list", "initializer_list"):
            exprs = list(value.named_children)
        else:
            exprs = []
        buf = Buffer(name, self.resolve(elem, scope), line_of(d), device=False)
        if not exprs:
            buf.why = f"std::vector `{name}` (line {line_of(d)}) has no size where it is declared"
        else:
            try:
                buf.numel = int(self.ev(exprs[0], scope))
            except Unknown as e:
                buf.why = e.reason
        return Ptr(buf)

    def _pointer_init(self, name: str, elem: str, d: ts.Node, value: ts.Node | None, scope: Scope) -> Any:
        if value is None:
            return PtrVar(elem, line_of(d))
        inner = value
        while inner.type in ("cast_expression", "parenthesized_expression"):
            inner = inner.child_by_field_name("value") or inner.named_children[-1]
        if inner.type == "null" or node_text(inner) in ("NULL", "nullptr", "0"):
            return PtrVar(elem, line_of(d))  # `float *d_A = NULL;`: not allocated yet (cudaMalloc comes later)
        if inner.type == "new_expression":
            nd = inner.child_by_field_name("declarator")
            length = nd.child_by_field_name("length") if nd is not None else None
            buf = Buffer(name, elem, line_of(d), device=False)
            try:
                buf.numel = int(self.ev(length, scope)) if length is not None else 1
            except Unknown as e:
                buf.why = e.reason
            return Ptr(buf)
        if inner.type == "call_expression" and node_text(inner.child_by_field_name("function")) in (
                "malloc", "calloc", "std::malloc"):
            buf = Buffer(name, elem, line_of(d), device=False)
            args = inner.child_by_field_name("arguments").named_children
            try:
                total = 1
                for a in args:
                    total *= int(self.ev(a, scope))
                buf.numel = total // SIZEOF.get(elem, 4)
            except Unknown as e:
                buf.why = e.reason
            return Ptr(buf)
        return self.ev(value, scope)

    def exec_call_statement(self, call: ts.Node, scope: Scope) -> None:
        """The CUDA runtime calls that shape buffers: ``cudaMalloc``, ``cudaMemcpy``, ``cudaMemset``
        (also wrapped in an error-check macro such as ``CUDA_CHECK(cudaMalloc(&d, bytes))``)."""
        fname = node_text(call.child_by_field_name("function") or call)
        args_node = call.child_by_field_name("arguments")
        args = [a for a in (args_node.named_children if args_node is not None else []) if a.type != "comment"]
        if fname in _PITCHED:
            self._pitched_call(fname, call, args, scope)
            return
        if fname not in ("cudaMalloc", "cudaMallocManaged", "cudaMallocAsync", "cudaMemcpy", "cudaMemcpyAsync", "cudaMemset",
                         "cudaMemsetAsync"):
            short = re.sub(r"<.*", "", fname).split("::")[-1].strip()
            if short in self.functions and self._call_with_references(short, call, args, scope):
                return
            for a in args:  # CHECK(cudaMalloc(...)) and similar wrappers
                if a.type == "call_expression":
                    self.exec_call_statement(a, scope)
                else:
                    self._written_through_address(a, fname, call, scope)
            return
        if fname.startswith("cudaMalloc") and len(args) >= 2:
            var, elem, buf = self._device_buffer(args[0], call, scope)
            try:
                nbytes = int(self.ev(args[1], scope))
                buf.numel = nbytes // SIZEOF.get(base_type(elem), 4)
            except Unknown as e:
                buf.why = f"{fname} size `{node_text(args[1])}`: {e.reason}"
            scope.set(var, Ptr(buf))
            return
        if fname.startswith("cudaMemcpy") and len(args) >= 4:
            kind = node_text(args[3])
            try:
                dst = self.ev(args[0], scope)
            except Unknown:
                return
            if isinstance(dst, Ptr) and dst.buffer.device and kind in ("cudaMemcpyHostToDevice", "cudaMemcpyDefault"):
                dst.buffer.filled = "host"
            return
        if fname.startswith("cudaMemset") and len(args) >= 3:
            try:
                dst = self.ev(args[0], scope)
                value = self.ev(args[1], scope)
            except Unknown:
                return
            if isinstance(dst, Ptr):
                _memset(dst, value)

    @staticmethod
    def _device_buffer(target: ts.Node, call: ts.Node, scope: Scope) -> tuple[str, str, Buffer]:
        """``(name, element type, new device buffer)`` of an allocation call's target argument (``&d_x``,
        ``(void**)&d_x``): the element type is the declared pointer's (``float`` when the name is not declared)."""
        var = re.sub(r"^\(.*?\)\s*", "", node_text(target)).lstrip("&").strip("() ")
        try:
            decl = scope.get(var)
        except KeyError:
            decl = None
        elem = decl.elem if isinstance(decl, PtrVar) else (decl.buffer.elem if isinstance(decl, Ptr) else "float")
        return var, elem, Buffer(var, elem, line_of(call), device=True)

    def _pitched_call(self, fname: str, call: ts.Node, args: list[ts.Node], scope: Scope) -> None:
        """The pitched runtime calls (:data:`_PITCHED`): ``cudaMallocPitch(&p, &pitch, width_bytes, rows)`` allocates
        a device buffer of ``pitch * rows`` bytes and sets ``pitch`` to the row's bytes rounded up to
        :data:`PITCH_ALIGN` (the runtime may pick another pitch; a program that reads ``pitch`` accepts any pitch
        of at least the row's bytes); ``cudaMemcpy2D[Async](dst, dpitch, src, spitch, w, h, kind)`` from the host
        fills ``dst``; ``cudaMemset2D[Async](p, pitch, value, w, h)`` sets it as ``cudaMemset`` does."""
        if fname == "cudaMallocPitch":
            if len(args) < 4:
                return
            pitch_var = unwrap_parens(args[1])
            pitch_name = node_text(pitch_var.child_by_field_name("argument")) if \
                pitch_var.type == "pointer_expression" and pitch_var.child_by_field_name("argument") is not None else ""
            var, elem, buf = self._device_buffer(args[0], call, scope)
            try:
                width, rows = int(self.ev(args[2], scope)), int(self.ev(args[3], scope))
                pitch = -(-width // PITCH_ALIGN) * PITCH_ALIGN
                buf.numel = pitch * rows // SIZEOF.get(base_type(elem), 4)
                if pitch_name.isidentifier():
                    scope.set(pitch_name, pitch)
            except Unknown as e:
                buf.why = f"cudaMallocPitch width or rows `{node_text(args[2])}, {node_text(args[3])}`: {e.reason}"
                if pitch_name.isidentifier():
                    scope.set(pitch_name, Unknown(f"`{pitch_name}` is set by cudaMallocPitch (line {line_of(call)}) "
                                                  f"from a size htam cannot read: {e.reason}"))
            scope.set(var, Ptr(buf))
            return
        try:
            dst = self.ev(args[0], scope) if args else None
        except Unknown:
            return
        if not isinstance(dst, Ptr):
            return
        if fname.startswith("cudaMemcpy2D") and len(args) >= 7 and node_text(args[6]) in (
                "cudaMemcpyHostToDevice", "cudaMemcpyDefault") and dst.buffer.device:
            dst.buffer.filled = "host"
        elif fname.startswith("cudaMemset2D") and len(args) >= 3:
            try:
                value = self.ev(args[2], scope)
            except Unknown:
                return
            _memset(dst, value)

    def _call_with_references(self, short: str, call: ts.Node, args: list[ts.Node], scope: Scope) -> bool:
        """A call of a host function of the program with non-const reference parameters (``void
        getNumBlocksAndThreads(int n, ..., int &blocks, int &threads)``): its body is run with the call's
        arguments (and template bindings), and each variable passed to a reference parameter takes the value
        the body leaves there: a number, a device quantity (``prop.multiProcessorCount``), or an
        :class:`Unknown` that names the function and why (never the variable's earlier value).

        Returns:
            ``False`` when the function has no body or no such parameter (the call is then handled as before).
        """
        fn = next((f for f in self.functions[short] if f.child_by_field_name("body") is not None), None)
        if fn is None:
            return False
        decls = param_declarations(fn)
        refs = [(i, n) for i, (d, n) in enumerate(zip(decls, param_names(fn), strict=True))
                if (dd := d.child_by_field_name("declarator")) is not None and dd.type == "reference_declarator"
                and "const" not in node_text(d).split() and n]
        if not refs:
            return False
        where = f"{short}() (line {line_of(call)})"
        inner = Scope(parent=self.globals)
        failed: str | None = None
        try:
            if self._calls_depth > 8:
                raise Unknown("the calls nest too deep")
            self._calls_depth += 1
            self.bind_template(fn, call, scope, inner)
            for i, (d, n) in enumerate(zip(decls, param_names(fn), strict=True)):
                if not n:
                    continue
                if i < len(args):
                    try:
                        inner.values[n] = self.ev(args[i], scope)
                    except Unknown as e:
                        inner.values[n] = e
                else:
                    default = d.child_by_field_name("default_value")
                    inner.values[n] = Unknown(f"parameter `{n}` has no value") if default is None else \
                        self.ev(default, inner)
            self.exec_statement(fn.child_by_field_name("body"), inner, None)
        except (Unknown, Unreached) as e:
            failed = e.reason if isinstance(e, Unknown) else str(e)
        except RecursionError:
            failed = "the calls nest too deep"
        finally:
            self._calls_depth = max(0, self._calls_depth - 1)
        body = fn.child_by_field_name("body")
        written = _assigned_names(body) | {node_text(a) for c in _walk(body) if c.type == "argument_list"
                                           for a in c.named_children if a.type == "identifier"}
        for i, n in refs:
            if i >= len(args) or args[i].type != "identifier" or n not in written:
                continue  # a reference the body never writes (`const`-like use) keeps the caller's value
            target = node_text(args[i])
            v = inner.values.get(n) if failed is None else Unknown(failed)
            if isinstance(v, Unknown) or v is None:
                why = v.reason if isinstance(v, Unknown) else "it is never set there"
                v = Unknown(f"`{target}` is set through the reference parameter `{n}` of {where}, which htam "
                            f"could not evaluate: {why}")
            scope.set(target, v)
        return True

    def _written_through_address(self, arg: ts.Node, fname: str, call: ts.Node, scope: Scope) -> None:
        """``&x`` (or ``&s.field``) passed to a call the evaluator does not model (``cudaDeviceGetAttribute(&sms,
        ...)``, ``cudaGetDeviceProperties(&prop, 0)``, ``cudaOccupancyMaxPotentialBlockSize(&g, &b, ...)``): the
        call may set ``x`` at run time, so its value from here on is unknown, never its earlier initializer."""
        while arg.type == "parenthesized_expression" and arg.named_child_count:
            arg = arg.named_children[0]
        if arg.type != "pointer_expression" or not node_text(arg).lstrip().startswith("&"):
            return
        target = arg.child_by_field_name("argument")
        while target is not None and target.type in ("field_expression", "subscript_expression",
                                                       "parenthesized_expression"):
            target = target.child_by_field_name("argument") or (
                target.named_children[0] if target.named_children else None)
        if target is None or target.type != "identifier":
            return
        name = node_text(target)
        try:
            scope.get(name)
        except KeyError:
            return
        args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
        if arg == args[0] and fname == "cudaDeviceGetAttribute" and len(args) >= 2 and \
                (q := attribute_quantity(node_text(args[1]))):
            scope.set(name, DeviceValue(q, (q,), line_of(call)))  # read again on the harness's device
        elif arg == args[0] and fname in PROPERTIES_CALLS:
            scope.set(name, DeviceProps(name, line_of(call)))
        elif (query := occupancy_query(node_text, call)) is not None and target == arg.child_by_field_name(
                "argument") and (i := next((k for k, o in enumerate(query.outputs) if unwrap_parens(o) == arg),
                                           None)) is not None:  # `&per_sm` itself, not `&cfg.per_sm`
            scope.set(name, self._occupancy_value(query, i, call, scope))  # read again for the compiled kernel
        else:
            scope.set(name, Unknown(f"`{name}` is set at run time by {fname}() (line {line_of(call)})"))

    def _occupancy_value(self, query: OccupancyQuery, output: int, call: ts.Node, scope: Scope) -> Any:
        """The value an occupancy call (:func:`~htam_core.source.analysis.device_queries.occupancy_query`) leaves
        in its output number ``output``: a :class:`DeviceValue` over the harness's occupancy functions
        (``blocks_per_sm(256, 0)``, ``occupancy_grid(0, 0)``, ``occupancy_block(0, 0)``) for the kernel it names,
        or an :class:`Unknown` naming the argument htam cannot read (an unknown flag, a block size from
        ``argv``)."""
        line = line_of(call)
        try:
            if query.flags is not None:
                self._occupancy_flags(query.flags, scope)
            parts = [self._device_text(n, scope, default) for n, default in
                     ((query.threads, ""), (query.smem, "0"), (query.limit, "0"))]
        except Unknown as e:
            return Unknown(f"{query.call}() (line {line}) cannot be read again on the device: {e.reason}")
        texts = occupancy_expressions(query, *(t for t, _ in parts))
        quantities = tuple(sorted({"occupancy", *(q for _, qs in parts for q in qs)}))
        return DeviceValue(texts[output], quantities, line, frozenset({query.kernel}))

    def _device_text(self, node: ts.Node | None, scope: Scope, default: str) -> tuple[str, tuple[str, ...]]:
        """``(harness expression, device quantities)`` of an argument of a call read on the device: a whole
        number, or a :class:`DeviceValue`'s expression; ``default`` when the argument is left out.

        Raises:
            Unknown: the argument is not a whole number htam can read here.
        """
        if node is None:
            return default, ()
        v = self.ev(node, scope)
        if isinstance(v, DeviceValue):
            return v.text, v.quantities
        if isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer() and v >= 0:
            return repr(int(v)), ()
        raise Unknown(f"`{node_text(node)}` (line {line_of(node)}) is not a whole number htam can read")

    def _occupancy_flags(self, node: ts.Node, scope: Scope) -> None:
        """Accept the flags of a ``WithFlags`` occupancy call that give the same answer for the kernel htam compiles
        (:data:`~htam_core.source.analysis.device_queries.OCCUPANCY_FLAGS`).

        Raises:
            Unknown: other flags.
        """
        name = node_text(node).strip().split("::")[-1]
        if name in OCCUPANCY_FLAGS:
            return
        try:
            v = self.ev(node, scope)
        except Unknown:
            v = None
        if v not in OCCUPANCY_FLAGS.values():
            raise Unknown(f"the flags `{node_text(node)}` (line {line_of(node)}) are not ones htam reads "
                          f"({', '.join(OCCUPANCY_FLAGS)})")

    def exec_assignment(self, node: ts.Node, scope: Scope) -> None:
        """``x = expr`` / ``x += expr`` on a variable (subscripts and fields are ignored)."""
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        op = node_text(node.child_by_field_name("operator")) if node.child_by_field_name("operator") else "="
        if left is not None and right is not None and left.type in ("field_expression", "subscript_expression"):
            self._assign_field(left, right, op, scope)
        if left is None or right is None or left.type != "identifier":
            return
        name = node_text(left)
        try:
            v = self.ev(right, scope)
            if op != "=":
                v = binary_op(op[:-1], self.ev(left, scope), v)
                if v is None:
                    raise KeyError(op)
        except (Unknown, KeyError) as e:
            v = e if isinstance(e, Unknown) else Unknown(f"`{node_text(node)}` (line {line_of(node)})")
        scope.set(name, v)

    def _assign_field(self, left: ts.Node, right: ts.Node, op: str, scope: Scope) -> None:
        """``w.wa = 0.5f;`` / ``w.s.x = 1;`` / ``w.c[1] = 2;`` on a struct value (:class:`StructValue`): the field's
        value is recorded (``None``: not read, or a compound assignment); other targets are ignored."""
        root = left
        while root.type in ("field_expression", "subscript_expression"):
            root = root.child_by_field_name("argument")
            if root is None:
                return
        try:
            sv = scope.get(node_text(root)) if root.type == "identifier" else None
        except KeyError:
            return
        if not isinstance(sv, StructValue) or "->" in node_text(left):
            return
        path = "".join(node_text(left)[len(node_text(root)):].split()).lstrip(".")
        v = (self._brace(right, scope)[0] if right.type == "initializer_list" else self._maybe(right, scope)) \
            if op == "=" else None
        scope.set(node_text(root), dataclasses.replace(sv, assigned=(*sv.assigned, (path, v))))

    def run_until(self, body: ts.Node, scope: Scope, stop: int) -> None:
        """Run the statements of ``body`` that come before byte ``stop`` (a launch or a call), entering the
        statements that contain it (loops once, ``if`` branches as their condition says).

        Raises:
            Unreached: ``stop`` lies under a condition that is false here.
        """
        self._run_statements(body.named_children, scope, stop)

    def _run_statements(self, stmts: list[ts.Node], scope: Scope, stop: int) -> None:
        """Run ``stmts`` in order up to byte ``stop``, entering the one that contains it (see :meth:`run_until`)."""
        for stmt in stmts:
            if stmt.start_byte >= stop:
                return
            contains = stmt.end_byte > stop
            self.exec_statement(stmt, scope, stop if contains else None)
            if contains:
                return

    def exec_statement(self, stmt: ts.Node, scope: Scope, stop: int | None) -> None:
        """One statement; ``stop`` is set when the launch lies inside it."""
        t = stmt.type
        if t == "declaration":
            self.exec_declaration(stmt, scope)
        elif t == "expression_statement":
            for e in stmt.named_children:
                self.exec_expression(e, scope)
        elif t == "compound_statement":
            if stop is not None:
                self.run_until(stmt, scope, stop)
            else:
                for s in stmt.named_children:
                    self.exec_statement(s, scope, None)
        elif t == "if_statement":
            self._exec_if(stmt, scope, stop)
        elif t in ("for_statement", "while_statement", "do_statement", "for_range_loop"):
            self._exec_loop(stmt, scope, stop)
        elif t == "switch_statement" and stop is not None:
            self._exec_switch(stmt, scope, stop)

    def exec_expression(self, e: ts.Node, scope: Scope) -> None:
        """An expression statement: an assignment or a runtime call (others do nothing here)."""
        if e.type == "assignment_expression":
            right = e.child_by_field_name("right")
            if right is not None and right.type == "call_expression":  # err = cudaMalloc(&d, bytes);
                self.exec_call_statement(right, scope)
            self.exec_assignment(e, scope)
        elif e.type == "call_expression":
            self.exec_call_statement(e, scope)
        elif e.type == "comma_expression":
            for c in e.named_children:
                self.exec_expression(c, scope)

    def _exec_if(self, stmt: ts.Node, scope: Scope, stop: int | None) -> None:
        cond = stmt.child_by_field_name("condition")
        cons = stmt.child_by_field_name("consequence")
        alt = stmt.child_by_field_name("alternative")
        if alt is not None and alt.type == "else_clause":
            alt = alt.named_children[-1] if alt.named_children else None
        try:
            c: bool | None = bool(self.ev(cond.named_children[-1] if cond is not None and cond.named_children
                                          else cond, scope))
        except Unknown:
            c = None
        branches = [b for b in (cons, alt) if b is not None]
        if stop is not None:
            inside = cons if cons is not None and cons.start_byte <= stop < cons.end_byte else alt
            if c is not None and (inside is cons) != c:
                raise Unreached(f"line {line_of(stmt)}")
            if inside is not None:
                self.exec_statement(inside, scope, stop)
            return
        if c is None:
            why = f"is assigned under `if {node_text(cond)}` (line {line_of(stmt)}), which htam cannot decide"
            for b in branches:
                for name in _assigned_names(b):
                    scope.set(name, Unknown(f"`{name}` {why}"))
            return
        chosen = cons if c else alt
        if chosen is not None:
            self.exec_statement(chosen, scope, None)

    def _exec_switch(self, stmt: ts.Node, scope: Scope, stop: int) -> None:
        """Enter the ``case`` of a ``switch`` that holds byte ``stop`` (a version dispatch such as
        ``switch (kernel_num) { case 1: run1(...); ... }``).

        Raises:
            Unreached: the switch's value is known here and selects another case.
        """
        cond = stmt.child_by_field_name("condition")
        body = stmt.child_by_field_name("body")
        if body is None:
            return
        try:
            c = self.ev(cond.named_children[-1] if cond is not None and cond.named_children else cond, scope)
        except Unknown:
            c = None
        cases = [k for k in body.named_children if k.type == "case_statement"]

        def label(k: ts.Node) -> Any:
            v = k.child_by_field_name("value")
            try:
                return self.ev(v, scope) if v is not None else "default"
            except Unknown:
                return None

        for i, case in enumerate(cases):
            if not case.start_byte <= stop < case.end_byte:
                continue
            value = case.child_by_field_name("value")
            group = [case]  # `case 4: default: launch4(...)`: the empty labels above fall through to it
            while i - len(group) >= 0 and not [s for s in cases[i - len(group)].named_children
                                              if s != cases[i - len(group)].child_by_field_name("value")
                                              and s.type != "comment"]:
                group.insert(0, cases[i - len(group)])
            labels = [label(k) for k in group]
            if c is not None and None not in labels:
                others = [label(k) for k in cases if k not in group]
                taken = c in labels or ("default" in labels and c not in others)
                if not taken:
                    sel = cond.named_children[-1] if cond is not None and cond.named_children else cond
                    wanted = next((v for v in labels if v != "default"), None)
                    shown = node_text(value) if value is not None else "default"
                    raise Unreached(f"line {line_of(case)}: case {shown} is not taken when the switch value is {c}",
                                    sel if wanted is not None else None, wanted)
            self._run_statements([s for s in case.named_children if s != value], scope, stop)
            return

    def _exec_loop(self, stmt: ts.Node, scope: Scope, stop: int | None) -> None:
        # the launch's own loop runs its first iteration in the enclosing scope, so the launch sees its locals
        inner = scope if stop is not None else Scope(parent=scope)
        init = stmt.child_by_field_name("initializer")
        if init is not None:
            if init.type == "declaration":
                self.exec_declaration(init, inner)
            else:
                self.exec_expression(init, inner)
        body = stmt.child_by_field_name("body")
        if stop is not None:
            if body is not None:
                self.exec_statement(body, inner, stop)
            return
        for name in _assigned_names(body or stmt):
            if name not in inner.values:
                scope.set(name, Unknown(f"`{name}` changes in the loop at line {line_of(stmt)}"))
        if body is not None:  # allocations and copies inside a loop happen too (once is enough)
            for n in _walk(body):
                if n.type == "call_expression" and node_text(n.child_by_field_name("function") or n).startswith(
                        ("cudaMemcpy", "cudaMemset")):
                    self.exec_call_statement(n, inner)


#: Macros nvcc defines in the host compilation pass (``__CUDA_ARCH__`` is the device pass's only).
_HOST_PREDEFINED = frozenset({"__CUDACC__", "__NVCC__", "__cplusplus", "__CUDACC_VER_MAJOR__",
                              "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__"})


def _memset(dst: Ptr, value: Any) -> None:
    """What ``cudaMemset`` / ``cudaMemset2D`` of ``value`` leaves in ``dst``'s buffer: zeros, or the one byte
    repeated (then read as filled by the host program)."""
    dst.buffer.filled = "memset" if value == 0 else "host"
    dst.buffer.fill_byte = value & 0xFF if isinstance(value, int) and value != 0 else None


class _Returned(Exception):  # noqa: N818 - control flow of the evaluator
    """A helper's ``return`` reached (:meth:`Program._run_helper`), with its value."""

    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


#: statements a host helper of numbers may hold (:meth:`Program._helper_value`)
_HELPER_STATEMENTS = frozenset({"compound_statement", "declaration", "expression_statement", "return_statement",
                                "if_statement", "else_clause", "comment"})


def _impure_statement(body: ts.Node) -> ts.Node | None:
    """The first statement of a helper's ``body`` that is not a declaration, an assignment, an ``if``/``else`` or a
    ``return`` of a value (a loop, a call statement, a ``switch``), or ``None`` when there is none."""
    for n in _walk(body):
        if n.type.endswith("_statement") or n.type in ("declaration", "else_clause"):
            if n.type not in _HELPER_STATEMENTS:
                return n
            if n.type == "expression_statement" and any(e.type != "assignment_expression" for e in n.named_children):
                return n
            if n.type == "return_statement" and not n.named_children:
                return n
    return None


class _OwnLines:
    """The lines of a taken ``#if`` branch: the node's children without its ``#elif``/``#else`` alternative."""

    def __init__(self, node: ts.Node, alternative: ts.Node | None) -> None:
        self.named_children = [c for c in node.named_children if c != alternative]


def _is_struct(elem: str) -> bool:
    """Whether the type name ``elem`` may be a struct or class of the user's (``Weights``, ``Params``): a plain
    name that is no number type, ``dim3``, ``auto``, ``void`` or a CUDA/C++ library type (``cudaStream_t``). Only
    keeps a brace list of a type defined elsewhere from being read as a ``dim3``; which types the file defines as
    structs is :meth:`Program.aggregates`."""
    return (re.fullmatch(r"[A-Za-z_]\w*", elem) is not None and elem not in DTYPE_OF
            and elem not in ("dim3", "auto", "void") and not elem.startswith(("cuda", "cu", "CU", "nv")))


def _is_array(declarator: ts.Node) -> bool:
    """The declarator declares an array (``a[]``, ``a[4]``)."""
    stack = [declarator]
    while stack:
        n = stack.pop()
        if n.type == "array_declarator":
            return True
        stack.extend(c for c in n.named_children if c.type.endswith("declarator"))
    return False


def _false_if(node: ts.Node) -> bool:
    """``#if 0`` / ``#if false`` (dead code, as the source layer reads it)."""
    cond = node.child_by_field_name("condition")
    text = node_text(cond).strip() if cond is not None else ""
    return literal_value(text) == 0 or text == "false"


def _cast(type_text: str, v: Any) -> Any:
    t = base_type(type_text)
    if isinstance(v, Ptr | Dim3 | DeviceValue):
        return v
    if t in ("float", "double", "half", "__half"):
        return float(v)
    if t in DTYPE_OF or t in ("int", "unsigned", "size_t", "long"):
        return int(v)
    return v


def _declarator_parts(d: ts.Node) -> tuple[ts.Node | None, bool, ts.Node | None]:
    """``(name node, is pointer, value node)`` of one declarator."""
    value = None
    if d.type == "init_declarator":
        value = d.child_by_field_name("value")
        d = d.child_by_field_name("declarator")
    ptr = False
    while d is not None and d.type in ("pointer_declarator", "reference_declarator", "array_declarator",
                                       "function_declarator"):
        if d.type == "pointer_declarator":
            ptr = True
        if d.type == "function_declarator":
            return d.child_by_field_name("declarator"), ptr, value
        d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_children else None)
    return (d if d is not None and d.type == "identifier" else None), ptr, value


def _declared_names(decl: ts.Node) -> list[str]:
    out = []
    for d in decl.children_by_field_name("declarator"):
        n, _, _ = _declarator_parts(d)
        if n is not None:
            out.append(node_text(n))
    return out


def _assigned_names(node: ts.Node) -> set[str]:
    names: set[str] = set()
    for n in _walk(node):
        if n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                names.add(node_text(left))
        elif n.type == "update_expression":
            arg = n.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier":
                names.add(node_text(arg))
    return names


def function_name(fn: ts.Node) -> str | None:
    """The unqualified name of a ``function_definition`` (``None`` for an operator or a lambda)."""
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        d = d.child_by_field_name("declarator")
    if d is None or d.type != "function_declarator":
        return None
    name = d.child_by_field_name("declarator")
    return node_text(name).split("::")[-1] if name is not None else None


def template_params(fn: ts.Node) -> list[tuple[str, bool]]:
    """The template parameters of a ``function_definition`` under ``template <...>``: ``(name, is_type)`` in
    order (``template <class T, unsigned int blockSize>`` -> ``[("T", True), ("blockSize", False)]``)."""
    parent = fn.parent
    plist = parent.child_by_field_name("parameters") if parent is not None and \
        parent.type == "template_declaration" else None
    out: list[tuple[str, bool]] = []
    for c in plist.named_children if plist is not None else []:
        if c.type in ("type_parameter_declaration", "optional_type_parameter_declaration",
                      "variadic_type_parameter_declaration"):
            ident = next((k for k in c.named_children if k.type == "type_identifier"), None)
            if ident is not None:
                out.append((node_text(ident), True))
        elif c.type in ("parameter_declaration", "optional_parameter_declaration"):
            d = c.child_by_field_name("declarator")
            if d is not None:
                out.append((node_text(d), False))
    return out


def _function_start(node: ts.Node) -> int:
    """Start byte of the ``function_definition`` holding ``node`` (``-1``: none)."""
    cur: ts.Node | None = node
    while cur is not None and cur.type != "function_definition":
        cur = cur.parent
    return cur.start_byte if cur is not None else -1


def call_args(call: ts.Node) -> list[ts.Node]:
    """The argument expressions of call ``call`` (a function call or a launch), comments left out."""
    a = call.child_by_field_name("arguments")
    return [c for c in (a.named_children if a is not None else []) if c.type != "comment"]


def param_declarations(fn: ts.Node) -> list[ts.Node]:
    """The ``parameter_declaration`` nodes of a ``function_definition``."""
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        d = d.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters") if d is not None else None
    return [p for p in (params.named_children if params is not None else [])
            if p.type in ("parameter_declaration", "optional_parameter_declaration")]


def param_names(fn: ts.Node) -> list[str]:
    """Parameter names of a ``function_definition`` in order (``""`` for an unnamed one)."""
    out = []
    for p in param_declarations(fn):
        d = p.child_by_field_name("declarator")
        n, _, _ = _declarator_parts(d) if d is not None else (None, False, None)
        out.append(node_text(n) if n is not None else "")
    return out

