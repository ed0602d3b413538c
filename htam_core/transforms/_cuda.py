"""CUDA nodes and edits for the transforms, on top of the analysis layer.

A :class:`CudaUnit` is an editing view of the CUDA text that holds the kernel (a ``.cu`` file, or the
content of the Python string that holds a ``load_inline`` source): the parsed unit is the analysis
layer's :class:`~htam_core.source.analysis.unit.CudaSource` (:func:`~htam_core.source.analysis.unit.cuda_source`,
parsed and cached once per kernel version), never re-parsed here. Facts (constants, loops, accesses, launches) come
from :mod:`htam_core.source.analysis` (:attr:`CudaUnit.facts`, :attr:`CudaUnit.env`); this module adds
the node-level views transforms edit through. Nodes are in fragment offsets; :meth:`CudaUnit.edit`
maps them back to file offsets for :class:`TextEdit`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sympy
from tree_sitter import Node

from htam_core.source.analysis import Barrier, KernelFacts, analyze
from htam_core.source.analysis.constants import Const, int_literal
from htam_core.source.analysis.contracts import host_owns_outputs
from htam_core.source.analysis.facts import DIMS, sym
from htam_core.source.analysis.guards import BoundsGuard, bounds_guard, describe_form
from htam_core.source.analysis.launch import dims_of
from htam_core.source.analysis.syntax import side_effect_free, statement_start, statements, strip_casts
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.analysis.unit import SiteLaunch as Launch
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms import _notes, _ts
from htam_core.transforms.base import TextEdit, UnitTransform

__all__ = ["DIMS", "Const", "CudaUnit", "Launch", "int_literal", "statement_start", "strip_casts"]


@dataclass
class Dim:
    """One dimension of a launch's block or grid: the expression, and its constant when known."""

    expr: Node
    const: Const | None = None


def _from_source(name: str, doc: str) -> Any:
    """A read-only property of :class:`CudaUnit` that reads attribute ``name`` of its :class:`CudaSource`."""
    return property(lambda self: getattr(self.source, name), doc=f"{doc} (:attr:`CudaSource.{name}`)")


@dataclass(frozen=True)
class CudaUnit:
    """An editing view of one kernel's parsed CUDA text.

    The parsed unit itself (bytes, tree, function, body, constants, launches paired with their sites) is
    the analysis layer's :class:`~htam_core.source.analysis.unit.CudaSource`, built and cached once per
    kernel version; this view adds only the model and kernel handles and the edit helpers, and re-derives
    nothing.

    Attributes:
        model: the file's source model.
        kernel: the kernel (one of ``model.kernels``).
        source: the analysis layer's parsed unit of ``kernel``.
    """

    model: SourceModel
    kernel: Kernel
    source: CudaSource

    # ----------------------------------------------------------------- the parsed unit (analysis layer)
    src = _from_source("src", "The unit's bytes.")
    base = _from_source("base", "File offset of ``src[0]``.")
    root = _from_source("root", "The tree's root node.")
    func = _from_source("func", "The kernel's ``function_definition`` node.")
    body = _from_source("body", "The kernel's body (``compound_statement``).")
    env = _from_source("env", "The unit's constants, without template bindings (a ``ConstEnv``).")
    launches = _from_source("sites", "The kernel's launch sites with their calls (``tuple[Launch, ...]``).")
    params = _from_source("params", "The kernel's ``parameter_declaration`` nodes, in order.")
    declarator = _from_source("declarator", "The kernel's ``function_declarator`` node.")

    @property
    def facts(self) -> KernelFacts:
        """The kernel's facts (:func:`htam_core.source.analysis.analyze`, cached per kernel version)."""
        return analyze(self.model, self.kernel)

    @property
    def launches_editable(self) -> bool:
        """True when the kernel has a launch in the unit whose grid and block a step may change: one that names
        the kernel, or a function pointer that runs no other kernel (:attr:`LaunchSite.pointer_kernels`). A
        kernel launched only through a pointer or a table that runs other kernels too is, for a step that would
        change the grid, like one launched elsewhere: the launch-independent form is the one to make."""
        return any(not set(la.site.pointer_kernels) - {self.kernel.name} for la in self.launches)

    def t(self, node: Node | None) -> str:
        """Source text of ``node``."""
        return self.source.t(node)

    def file_byte(self, node: Node) -> int:
        """File offset of ``node``'s start (facts' spans are file offsets)."""
        return self.source.file_byte(node)

    def node_at(self, span: tuple[int, int], types: tuple[str, ...] = ()) -> Node | None:
        """The node whose file bytes are exactly ``span`` (:meth:`CudaSource.node_at`): how a transform turns
        a fact (a row loop, an accumulator update, an access) into a node to edit."""
        return self.source.node_at(span, types)

    # ----------------------------------------------------------------- edits
    def replace_span(self, span: tuple[int, int], new_text: str) -> TextEdit:
        """Edit replacing the file bytes ``span`` (a fact's span) with ``new_text``."""
        return TextEdit(span[0], span[1], new_text)

    def edit(self, start: int | Node, end: int | None = None, new_text: str = "") -> TextEdit:
        """A :class:`TextEdit` in file offsets for fragment range ``[start, end)`` (or a node's range)."""
        if isinstance(start, Node):
            s, e = start.start_byte, start.end_byte
        else:
            s, e = start, start if end is None else end
        return TextEdit(s + self.base, e + self.base, new_text)

    def replace(self, node: Node, new_text: str) -> TextEdit:
        """Edit replacing ``node``'s text."""
        return self.edit(node.start_byte, node.end_byte, new_text)

    def insert(self, pos: int, new_text: str) -> TextEdit:
        """Edit inserting ``new_text`` at fragment offset ``pos``."""
        return self.edit(pos, pos, new_text)

    # ----------------------------------------------------------------- constants
    def resolve(self, node: Node, scope: Node | None = None) -> Const | None:
        """The integer constant ``node`` evaluates to in ``scope`` (a function), with how to rewrite it, or
        ``None``; see :meth:`htam_core.source.analysis.constants.ConstEnv.const`."""
        return self.env.const(node, scope)

    def local_inits(self, scope: Node, name: str) -> list[Node]:
        """Initializer expressions of declarations of ``name`` inside ``scope``."""
        return self.env.local_inits(scope, name)

    def assigned_in(self, scope: Node, name: str) -> bool:
        """True when ``name`` is assigned, incremented or address-taken in ``scope``."""
        return self.env.assigned_in(scope, name)

    def const_edit(self, c: Const, value: int) -> TextEdit | None:
        """The edit that changes constant ``c`` to ``value`` (``None`` when it cannot be rewritten)."""
        if c.literal is not None:
            return self.replace(c.literal, str(value))
        if c.preproc_range is not None:
            return self.edit(c.preproc_range[0], c.preproc_range[1], str(value))
        return None

    def barriers_in(self, node: Node) -> list[Barrier]:
        """The barriers (:attr:`KernelFacts.barriers`, every spelling in normal form: ``__syncthreads()``,
        ``cg::sync(cta)``, ``cta.sync()``, ``__syncwarp()``) whose call lies inside ``node``."""
        lo, hi = self.file_byte(node), node.end_byte + self.base
        return [b for b in self.facts.barriers if lo <= b.span[0] and b.span[1] <= hi]

    # ----------------------------------------------------------------- launch dims
    def dims_of(self, expr: Node, scope: Node | None) -> list[Node]:
        """Component expressions of a launch ``grid``/``block`` argument (:func:`~htam_core.source.analysis.launch.dims_of`)."""
        return dims_of(self.env, expr, scope)

    def block_dims(self, launch: Launch) -> list[Dim] | None:
        """The block's dimensions with their constants, or ``None`` when there is no block argument."""
        if launch.block is None:
            return None
        return [Dim(e, self.resolve(e, launch.host)) for e in self.dims_of(launch.block, launch.host)]

    def block_threads(self, launch: Launch) -> int | None:
        """Threads per block when every dimension is a compile-time constant, else ``None``."""
        dims = self.block_dims(launch)
        if not dims or any(d.const is None for d in dims):
            return None
        total = 1
        for d in dims:
            total *= d.const.value  # type: ignore[union-attr]
        return total

    # ----------------------------------------------------------------- kernel facts
    def uses_block_linear_index(self, dim: str) -> bool:
        """True when the kernel multiplies ``blockIdx.<dim>`` by something (each block owns a slice)."""
        for b in _ts.of_type(self.body, "binary_expression"):
            if self.t(b.child_by_field_name("operator")) != "*":
                continue
            for side in ("left", "right"):
                s = b.child_by_field_name(side)
                if s is not None and self.t(_ts.unwrap_parens(s)).replace(" ", "").endswith(f"blockIdx.{dim}"):
                    return True
        return False

    def launch_bounds_node(self) -> Node | None:
        """The ``__launch_bounds__(...)`` node of the kernel, if any (also inside ERROR recovery)."""
        for c in self.func.children:
            if c.type == "launch_bounds" or (c.type == "ERROR" and "__launch_bounds__" in self.t(c)):
                return c
        head = self.src[self.func.start_byte : self.declarator.start_byte]
        if b"__launch_bounds__" in head:
            return self.func
        # a macro that stands for it (`#define C10_LAUNCH_BOUNDS_1(n) __launch_bounds__((n))`)
        names = {m.group(1) for m in _LAUNCH_BOUNDS_MACRO.finditer(self.src)}
        if names:
            # the header may be parsed apart from the definition (`__global__ void LB(256)` then `k(...)`): read
            # back to the end of the previous statement, block or preprocessor line
            fs = self.func.start_byte
            back = [self.src.rfind(b";", 0, fs), self.src.rfind(b"}", 0, fs)]
            back += [m.end() - 1 for m in re.finditer(rb"(?m)^[ \t]*#[^\n]*$", self.src[:fs])][-1:]
            head = self.src[max(back) + 1 : self.declarator.start_byte]
            if any(re.search(rb"\b" + re.escape(n) + rb"\b", head) for n in names):
                return self.func
        return None


#: A ``#define`` whose body is (or holds) ``__launch_bounds__``.
_LAUNCH_BOUNDS_MACRO = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[^\n]*__launch_bounds__", re.MULTILINE)


def load_unit(model: SourceModel, kernel: Kernel) -> CudaUnit | str:
    """The kernel's :class:`CudaUnit`: a view of the analysis layer's cached :class:`CudaSource`
    (:func:`~htam_core.source.analysis.unit.cuda_source`), or why the kernel is not found."""
    src = cuda_source(model, kernel)
    return src if isinstance(src, str) else CudaUnit(model, kernel, src)


def param_names(unit: CudaUnit) -> list[str]:
    """The kernel's parameter names in order (``""`` for an unnamed one), through pointer/reference/array
    declarators."""
    out: list[str] = []
    for p in unit.params:
        n = p.child_by_field_name("declarator")
        while n is not None and n.type != "identifier":
            n = n.child_by_field_name("declarator")
        out.append(unit.t(n) if n is not None else "")
    return out


def statement_list(body: Node) -> list[Node]:
    """The statements of a compound statement: named children without comments and without the ``#pragma`` line
    that belongs to a loop (:func:`~htam_core.source.analysis.syntax.statements`; the pragma travels with its loop,
    :func:`statement_start`)."""
    return statements(body)


def references(node: Node, src: bytes, name: str) -> list[Node]:
    """Identifier nodes under ``node`` spelled ``name``."""
    return [n for n in _ts.of_type(node, "identifier") if _ts.text(n, src) == name]


def builtin_field(unit: CudaUnit, node: Node) -> str | None:
    """``"blockIdx.x"`` for a ``blockIdx.x``-like field expression (casts stripped), else ``None``."""
    node = strip_casts(node)
    if node.type != "field_expression":
        return None
    arg, fld = node.child_by_field_name("argument"), node.child_by_field_name("field")
    if arg is None or fld is None or unit.t(arg) not in ("blockIdx", "blockDim", "threadIdx", "gridDim"):
        return None
    return f"{unit.t(arg)}.{unit.t(fld)}"


def _binary(unit: CudaUnit, node: Node, op: str) -> tuple[Node, Node] | None:
    node = strip_casts(node)
    if node.type != "binary_expression" or unit.t(node.child_by_field_name("operator")) != op:
        return None
    return node.child_by_field_name("left"), node.child_by_field_name("right")


def global_index_parts(unit: CudaUnit, expr: Node) -> tuple[str, Node] | None:
    """Match ``blockIdx.d * S + threadIdx.d`` (any operand order, casts allowed).

    Returns ``(d, S)`` where ``S`` is the block-stride expression (``blockDim.d`` or a constant such
    as ``TILE``), else ``None``.
    """
    plus = _binary(unit, expr, "+")
    if plus is None:
        return None
    for mul_side, tid_side in (plus, plus[::-1]):
        tid = builtin_field(unit, tid_side)
        mul = _binary(unit, mul_side, "*")
        if tid is None or not tid.startswith("threadIdx.") or mul is None:
            continue
        d = tid[-1]
        for bi, stride in (mul, mul[::-1]):
            if builtin_field(unit, bi) == f"blockIdx.{d}":
                return d, strip_casts(stride)
    return None


def is_global_index(unit: CudaUnit, expr: Node, dim: str = "x") -> bool:
    """True for ``blockIdx.d * blockDim.d + threadIdx.d`` in any operand order, with optional casts."""
    parts = global_index_parts(unit, expr)
    return parts is not None and parts[0] == dim and builtin_field(unit, parts[1]) == f"blockDim.{dim}"


def _is_lvalue(node: Node) -> bool:
    """True when ``node`` is written: assigned, compound-assigned, incremented or address-taken."""
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, p.parent
    if p is None:
        return False
    if p.type == "assignment_expression" and p.child_by_field_name("left") == node:
        return True
    if p.type == "update_expression":
        return True
    if p.type == "pointer_expression" and p.children and p.children[0].type == "&":
        return True
    return False


@dataclass
class Elementwise:
    """The ``i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) body`` shape of an elementwise kernel.

    Attributes:
        decl: the index declaration statement.
        name: the index variable.
        type: the index type as written, without ``const`` (``"int"``, ``"int64_t"``).
        gid: the global-index expression.
        guard: the ``if`` statement (``if (i < n) S`` or ``if (i >= n) return;``).
        bound: the bound expression ``n``.
        form: ``"if"`` (body inside the guard) or ``"return"`` (early exit, body follows).
        stmts: the guarded statements.
        consequence: the guarded statement node for ``form == "if"``.
        extra: the guard's other terms, which read neither the index nor a thread index (``n > 0`` in ``if (i < n
            && n > 0)``), joined as one condition in parentheses, or ``""``: the same for every element, so a
            rewrite keeps them as a condition of the whole loop.
    """

    decl: Node
    name: str
    type: str
    gid: Node
    guard: Node
    bound: Node
    form: str
    stmts: list[Node]
    consequence: Node | None = None
    extra: str = ""


def _cond_parts(unit: CudaUnit, cond: Node) -> tuple[str, str, Node] | None:
    """``(var, op, bound)`` for ``var < bound`` / ``bound > var`` (op normalized to var on the left)."""
    cond = _ts.unwrap_parens(cond)
    if cond.type == "condition_clause":
        inner = cond.child_by_field_name("value")
        if inner is None:
            return None
        cond = _ts.unwrap_parens(inner)
    if cond.type != "binary_expression":
        return None
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    op = unit.t(cond.child_by_field_name("operator"))
    flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
    if _ts.unwrap_parens(left).type == "identifier":
        return unit.t(_ts.unwrap_parens(left)), op, right
    if _ts.unwrap_parens(right).type == "identifier" and op in flip:
        return unit.t(_ts.unwrap_parens(right)), flip[op], left
    return None


def _bad_body(unit: CudaUnit, stmts: list[Node], index: str) -> str | None:
    """Why ``stmts`` cannot become a loop body, or ``None``."""
    for s in stmts:
        for b in unit.barriers_in(s):
            return f"the guarded code uses {b.text} (a {b.scope} barrier)"
        for n in _ts.walk(s):
            if n.type == "return_statement":
                return "the guarded code returns early"
            if n.type in ("break_statement", "continue_statement"):
                loop = n.parent
                while loop is not None and loop not in stmts and loop.type not in (
                    "for_statement", "while_statement", "do_statement", "switch_statement"
                ):
                    loop = loop.parent
                if loop is None or loop in stmts and loop.type not in (
                    "for_statement", "while_statement", "do_statement", "switch_statement"
                ):
                    return "the guarded code uses break/continue"
            if n.type == "identifier" and unit.t(n) in ("__syncthreads", "__syncwarp", "blockIdx", "threadIdx"):
                return f"the guarded code uses {unit.t(n)}"
            if n.type == "field_expression" and unit.t(n.child_by_field_name("argument")) in (
                "blockIdx", "threadIdx"
            ):
                return f"the guarded code uses {unit.t(n)}"
            if n.type == "identifier" and unit.t(n) == index and _is_lvalue(n):
                return f"the guarded code modifies {index}"
    return None


def _is_global_x(unit: CudaUnit, name: str, decl: Node) -> bool:
    """``name`` (declared by ``decl``) is exactly ``blockIdx.x * blockDim.x + threadIdx.x`` by the analysis
    layer's thread-index facts, however it is spelled (``blockIdx.x * bs + tid`` with ``int tid = threadIdx.x;``
    and ``int bs = blockDim.x;``, ``threadIdx.x + blockDim.x * blockIdx.x``, or ``blockIdx.x * BLOCK + threadIdx.x``
    with ``BLOCK`` a constant or template argument equal to the 1-D block of every launch in the file)."""
    tx, bx, bdx = (sym(n) for n in ("threadIdx.x", "blockIdx.x", "blockDim.x"))
    span = (unit.file_byte(decl), decl.end_byte + unit.base)
    strides = [bdx]
    launches = unit.facts.launches
    blocks = {la.block[0].value for la in launches if la.block and all(d.value == 1 for d in la.block[1:])}
    if launches and len(blocks) == 1 and len(launches) == sum(1 for la in launches if la.block):
        (b,) = blocks
        if isinstance(b, int) and b > 0:
            strides.append(sympy.Integer(b))  # blockIdx.x * BLOCK + threadIdx.x, BLOCK the block of every launch
    return any(t.name == name and t.span == span and t.is_global
               and any(sympy.expand(t.expr - (bx * st + tx)) == 0 for st in strides)
               for t in unit.facts.thread_indices)


def _thread_locals_used(unit: CudaUnit, stmts: list[Node], decl: Node) -> str | None:
    """Why ``stmts`` read a thread-dependent local declared before the index declaration ``decl`` (``int tid =
    threadIdx.x;``): a rewrite that gives a thread several elements would keep its first value."""
    before = {t.name for t in unit.facts.thread_indices if t.span[0] < unit.file_byte(decl)}
    for st in stmts:
        for n in _ts.of_type(st, "identifier"):
            if unit.t(n) in before:
                return f"the guarded code uses {unit.t(n)}, which holds a thread index"
    return None


def _invariant_terms(unit: CudaUnit, g: BoundsGuard, name: str) -> str | None:
    """The guard ``g``'s terms other than ``name < n`` as one condition (``"(n > 0)"``) when each reads neither
    ``name``, a builtin nor a thread-index local and has no side effect (the analysis layer's thread indices and
    :func:`side_effect_free`), else ``None``."""
    bounds = g.bounds()
    others = g.others()
    if set(bounds) != {name} or len(g.terms) != len(others) + 1 or not others:
        return None
    thread_locals = {t.name for t in unit.facts.thread_indices}
    for t in others:
        words = set(re.findall(r"[A-Za-z_]\w*", t.text))
        if name in words or words & (thread_locals | {"threadIdx", "blockIdx", "blockDim", "gridDim"}):
            return None
        if not side_effect_free(t.text):
            return None
    return "(" + " && ".join(f"({t.text})" for t in others) + ")"


def elementwise(unit: CudaUnit, *, invariant_terms: bool = False) -> Elementwise | str:
    """Match the elementwise shape in the kernel body, or say why it does not match.

    ``invariant_terms``: also match a guard with terms that are the same for every element (``if (i < n && n >
    0)``), given in :attr:`Elementwise.extra`; a caller that passes it keeps them as a condition of the whole
    loop."""
    stmts = statement_list(unit.body)
    for k, s in enumerate(stmts):
        if s.type != "declaration":
            continue
        inits = [d for d in s.named_children if d.type == "init_declarator"]
        if len(inits) != 1:
            continue
        value = inits[0].child_by_field_name("value")
        name_node = inits[0].child_by_field_name("declarator")
        if value is None or name_node is None or name_node.type != "identifier" or not (
                is_global_index(unit, value) or _is_global_x(unit, unit.t(name_node), s)):
            continue
        name = unit.t(name_node)
        typ = unit.src[s.start_byte : inits[0].start_byte].decode().replace("const ", "").strip()
        rest = stmts[k + 1 :]
        j = 0
        while j < len(rest) and rest[j].type != "if_statement":
            if references(rest[j], unit.src, name):
                return f"{name} is used before its bound check"
            j += 1
        if j == len(rest):
            return f"no bound check on {name} follows its declaration"
        g = bounds_guard(rest[j], rest[j + 1 :], unit.src)
        cond_text = unit.t(rest[j].child_by_field_name("condition"))
        if isinstance(g, str):
            return g if "else" in g or "nothing" in g else f"the bound check {cond_text}: {g}"
        bound = g.single(name)
        extra = _invariant_terms(unit, g, name) if invariant_terms and bound is None else None
        if extra is not None:
            bound = g.bounds()[name]
        if bound is None:
            return (f"the bound check is {describe_form(g, unit.src)}, not `if ({name} < n) {{ … }}` "
                    f"(nor its early return `if ({name} >= n) return;`)")
        if g.form == "if" and rest[j + 1 :]:
            return "statements follow the guarded block"
        body = list(g.body)
        why = _bad_body(unit, body, name) or _thread_locals_used(unit, body, s)
        if why:
            return why
        cons = g.stmt.child_by_field_name("consequence") if g.form == "if" else None
        return Elementwise(s, name, typ, value, g.stmt, bound, g.form, body, cons, extra or "")
    return "no `i = blockIdx.x * blockDim.x + threadIdx.x` index declaration"


def statement_span(unit: CudaUnit, node: Node) -> tuple[int, int]:
    """The byte range of a statement including its line's indentation and newline when it is alone on it; a loop's
    ``#pragma`` line is part of the loop (:func:`statement_start`), so removing or replacing the loop takes it."""
    start, end = statement_start(node), node.end_byte
    ls = _ts.line_start(unit.src, start)
    if unit.src[ls:start].strip() == b"":
        nl = unit.src.find(b"\n", end)
        if nl != -1 and unit.src[end:nl].strip() == b"":
            return ls, nl + 1
    return start, end


def include_insert_point(unit: CudaUnit) -> int:
    """Where to put a file-level helper: after the last top-level ``#include``, else at the start."""
    pos = 0
    for c in unit.root.children:
        if c.type == "preproc_include":
            pos = c.end_byte
    if pos and unit.src[pos - 1 : pos] != b"\n":
        nl = unit.src.find(b"\n", pos)
        pos = nl + 1 if nl != -1 else pos
    return pos


def per_block_output_hazard(unit: CudaUnit, launch: Launch | None = None, shrink: bool = False) -> str | None:
    """Why a step that changes the kernel's grid would change its output's shape, or ``None``: the kernel writes an
    output indexed by ``blockIdx`` and no ``threadIdx`` (:meth:`KernelFacts.per_block_outputs`, a partial sum per
    block: ``if (tid == 0) out[blockIdx.x] = sdata[0];``), so the output has one element per block, and a new grid
    gives another number of them than the caller reads. With ``launch``, the hazard is lifted where that launch's
    host owns the contract (:func:`~htam_core.source.analysis.contracts.host_owns_outputs`: the block count is a
    host local and the host allocates and reads the outputs with it), since the launch and the output's size then
    change together (``shrink``: the step only gives fewer blocks, and a host that reads the caller's buffer with
    the count keeps the contract too). Idea source: M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007): each block
    writes its partial result, and the host or a second pass reads one per block."""
    outs = unit.facts.per_block_outputs()
    if not outs:
        return None
    a = outs[0]
    why = (f"{unit.kernel.name} writes one output per block ({a.pointer}[{a.index_text}] on line {a.line}): the "
           "number of outputs is the number of blocks, so changing the grid would change the output's length")
    if launch is None:
        return why + "; the launch and the output's size would have to change together"
    owner = host_owns_outputs(unit.env, launch, param_names(unit), sorted({o.pointer for o in outs}), shrink)
    return None if owner is None else f"{why}, and {owner}"


def wrap_grid(unit: CudaUnit, launch: Launch, fmt: str) -> TextEdit | str:
    """Edit applying ``fmt`` (``"htam_sm_grid({}, 8)"``) to a launch's 1-D block count, or why not (a kernel with
    per-block outputs, :func:`per_block_output_hazard`; a grid that is not 1-D).

    Handles an inline expression, an inline ``dim3(expr)`` and a ``dim3`` variable (its ``.x``); the
    edit is always at the launch, so other launches sharing a variable are unaffected.
    """
    why = per_block_output_hazard(unit)
    if why:
        return why
    dims = unit.dims_of(launch.grid, launch.host)
    if len(dims) != 1:
        return f"the grid on line {launch.site.line} is not 1-D"
    g = _ts.unwrap_parens(launch.grid)
    if g.type == "call_expression" and unit.t(g.child_by_field_name("function")) == "dim3":
        return unit.replace(dims[0], fmt.format(unit.t(dims[0])))
    if g.type == "identifier" and dims[0] is not g and not unit.local_inits(launch.host, unit.t(g)):
        return unit.replace(launch.grid, "dim3(" + fmt.format(f"{unit.t(g)}.x") + ")")
    if g.type == "identifier" and dims[0] is not g:
        typ = None
        for d in _ts.of_type(launch.host, "declaration"):
            if any(unit.t(x).startswith(unit.t(g)) for x in d.children_by_field_name("declarator")):
                typ = unit.t(d.child_by_field_name("type"))
        if typ == "dim3":
            return unit.replace(launch.grid, "dim3(" + fmt.format(f"{unit.t(g)}.x") + ")")
    return unit.replace(launch.grid, fmt.format(unit.t(launch.grid)))


def launch_dims_edit(unit: CudaUnit, launch: Launch, expr: Node, new_dims: list[str]) -> TextEdit:
    """Edit giving a launch's grid or block argument the components ``new_dims``.

    A ``dim3`` variable read only by this launch gets its initializer rewritten (so it stays read); anything else
    is replaced at the launch by ``dim3(...)``.
    """
    g = _ts.unwrap_parens(expr)
    comps = unit.dims_of(expr, launch.host)
    inner = ", ".join(new_dims)
    if g.type == "identifier" and comps and comps[0] is not g and launch.host is not None:
        lst = comps[0].parent
        uses = references(launch.host, unit.src, unit.t(g))
        if lst is not None and lst.type in ("argument_list", "initializer_list") and len(uses) == 2:
            open_, close = unit.src[lst.start_byte : lst.start_byte + 1].decode(), unit.src[lst.end_byte - 1 : lst.end_byte].decode()
            return unit.replace(lst, f"{open_}{inner}{close}")
    return unit.replace(expr, f"dim3({inner})")


class CudaTransform(UnitTransform[CudaUnit]):
    """Base of the CUDA transforms: ``propose`` loads the kernel's :class:`CudaUnit` with
    :func:`load_unit`; subclasses implement ``propose_unit(unit, model, kernel, profile)``."""

    def load_unit(self, model: SourceModel, kernel: Kernel) -> CudaUnit | str:
        """The kernel's :class:`CudaUnit` (module-level :func:`load_unit`), or why it is not found."""
        return load_unit(model, kernel)


def stale_comment_notes(unit: CudaUnit, note: str, words: list[str], edits: list[TextEdit]) -> list[TextEdit]:
    """Edits that note ``note`` ("threads per block 32 → 256") in every comment of the kernel's CUDA text that
    states the old setting (one of ``words``), so that no comment describes code the edit changed
    (:mod:`htam_core.transforms._notes`); ``edits``: the transform's edits so far (their text is skipped)."""
    return _notes.comment_notes(unit.src, unit.base, _ts.of_type(unit.root, "comment"), note, words, edits)
