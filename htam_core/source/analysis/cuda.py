"""CUDA kernel facts: affine indices, loops, accumulators, read/write sets, thread indices, launches.

:class:`Affine` turns a C expression into a sympy expression: ``threadIdx.x``-style builtins become the
symbols of :data:`~htam_core.source.analysis.facts.BUILTINS`, compile-time constants their values, local
variables with one definition that is never reassigned their definition (``int row = blockIdx.y *
blockDim.y + threadIdx.y`` is followed), loop variables and parameters symbols; integer division,
``%``, calls and loads become opaque (non-affine) terms. :func:`cuda_facts` builds the
:class:`~htam_core.source.analysis.facts.KernelFacts` of one kernel from its :class:`CudaSource`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import sympy
from tree_sitter import Node

from htam_core.source.analysis.argreduce import arg_step
from htam_core.source.analysis.atomics import atomic_updates, result_atomics, return_lines, uniform_atomics
from htam_core.source.analysis.builtins import is_atomic_builtin, is_load_builtin
from htam_core.source.analysis.constants import ConstEnv, literal_value
from htam_core.source.analysis.device_globals import BaseNames, kernel_globals
from htam_core.source.analysis.device_queries import (
    device_quantities,
    device_quantities_of_node,
    host_device_values,
)
from htam_core.source.analysis.facts import (
    BUILTINS,
    DIMS,
    Access,
    Accumulator,
    AtomicUpdate,
    DeviceGlobal,
    Dim,
    KernelFacts,
    LaunchFacts,
    LoopFact,
    OnlineStat,
    PointerAlias,
    PointerFacts,
    Span,
    ThreadIndex,
    WelfordStat,
    combine,
    stride_of,
    sym,
)
from htam_core.source.analysis.gridstride import grid_stride_facts
from htam_core.source.analysis.instantiations import TemplateArguments, template_arguments
from htam_core.source.analysis.launch import dims_of, launch_arguments, template_bindings
from htam_core.source.analysis.long_sums import long_sums
from htam_core.source.analysis.loops import c_for_header, c_while_header, counted_header, symbolic_trip_count
from htam_core.source.analysis.macros import (
    MAX_DEPTH,
    ExpandedIndex,
    FunctionMacro,
    MacroTable,
    macro_call,
    macro_table,
)
from htam_core.source.analysis.online import online_pairs
from htam_core.source.analysis.pointer_uses import address_test, const_view_read
from htam_core.source.analysis.pure_calls import pure_device_calls
from htam_core.source.analysis.reaching import reaching_value
from htam_core.source.analysis.select import Selection, select_step
from htam_core.source.analysis.stencil import find_stencil
from htam_core.source.analysis.stencil2d import find_stencil2d
from htam_core.source.analysis.stencil3d import find_stencil3d
from htam_core.source.analysis.struct_params import field_params
from htam_core.source.analysis.sync import barriers, shared_accessor_locals
from htam_core.source.analysis.syntax import (
    loop_pragma,
    of_type,
    parse_cuda,
    strip_casts,
    unwrap_parens,
    visible_init,
    walk,
)
from htam_core.source.analysis.transpose import ExprOf, find_transposes
from htam_core.source.analysis.types import resolve_type
from htam_core.source.analysis.uniformity import Uniformity
from htam_core.source.analysis.unit import CudaSource
from htam_core.source.analysis.welford import welford_steps
from htam_core.source.model import Kernel, Param
from htam_core.source.preproc import QUALIFIERS, qualifier_macros

_BUILTIN_OBJS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
#: A builtin named in a macro's text.
_BUILTIN_RE = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim)\b")
#: :meth:`Affine._group`'s answer for a grid group (``cg::grid_group``, ``cg::this_grid()``).
_GRID_GROUP = -1
#: The ``dim3`` queries of a cooperative-groups ``thread_block`` and the builtin each one is.
_CG_DIM3 = {"thread_index": "threadIdx", "group_index": "blockIdx", "group_dim": "blockDim",
            "dim_threads": "blockDim"}
LOOP_TYPES = ("for_statement", "while_statement", "do_statement")
_MAX_FNS = {"fmaxf": "max", "fmax": "max", "max": "max", "std::max": "max", "__hmax": "max",
            "fminf": "min", "fmin": "min", "min": "min", "std::min": "min", "__hmin": "min"}
#: Calls that combine values of several threads into fewer values (the last ``::`` component is matched):
#: warp shuffles and ``__reduce_*_sync`` (CUDA C++ Programming Guide, "Warp Shuffle Functions", "Warp Reduce
#: Functions"), cooperative groups' ``cg::reduce`` and CUB's ``Reduce``/``Sum``, and the accumulating atomics.
COLLECTIVES = frozenset({
    "__shfl_down_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_sync", "__reduce_add_sync",
    "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
    "reduce", "Reduce", "Sum", "atomicAdd", "atomicSub", "atomicMax", "atomicMin", "atomicAnd", "atomicOr",
    "atomicXor", "atomicAdd_block", "atomicAdd_system"})


#: Names of ceiling-division helpers (:meth:`Affine._ceil_div`).
_CEIL_DIV = re.compile(r"^(?:ceil_?div|cdiv|div_?up|div_?ceil|ceildiv|i_?div_?up|round_?up_?div)$", re.IGNORECASE)


class Affine:
    """C expression -> sympy expression inside one kernel (see module docstring).

    Args:
        env: the unit's constants (with the kernel's template bindings).
        func: the kernel's ``function_definition`` (the scope of locals).
        loop_vars: names of loop induction variables (kept as symbols).
        reaching: a local assigned more than once is read as the value of its nearest dominating definition
            (:func:`~htam_core.source.analysis.reaching.reaching_value`; a host function's ``gx = (w + 31) / 32;``).
        fields: the fields of the struct parameters passed by value (``p.x``), each read as the symbol of its name.
        spell: a constant named outside the kernel (a ``#define``, a file-scope ``constexpr``, a template parameter
            bound at the launch, a header's constant) is kept as the symbol of its name rather than folded to its
            value, so that text made from the expression keeps the user's names (``N``, not ``1024``).
        fold: with ``spell``, the names folded to their values all the same.
    """

    def __init__(self, env: ConstEnv, func: Node, loop_vars: set[str], one_d: bool = False,
                 ceil_div_calls: bool = False, macros: MacroTable | None = None, reaching: bool = False,
                 spell: bool = False, fields: frozenset[str] = frozenset(), fold: frozenset[str] = frozenset()
                 ) -> None:
        self.env = env
        self.fold = fold
        self.fields = fields
        self.reaching = reaching
        self.spell = spell
        self.kept: set[str] = set()  # the names ``spell`` kept (in scope everywhere in the body)
        self.func = func
        self.loop_vars = loop_vars
        self.one_d = one_d
        self.ceil_div_calls = ceil_div_calls
        self.macros = macros or MacroTable(())
        self._memo: dict[tuple[str, int], sympy.Expr] = {}
        #: Number literals read as another value, by their first byte (:func:`~htam_core.source.analysis.
        #: grid_cover.block_literals`: the grid's form with its block literals edited).
        self.literals: dict[int, int] = {}
        #: Every name read as itself, never folded nor followed (:func:`~htam_core.source.analysis.grid_cover.
        #: block_literals`: a grid whose locals fold to a number, ``(n + 255) / 256`` after ``int n = 4096;``).
        self.names_as_symbols = False

    def _group(self, name: str) -> int | None:
        """The size of the cooperative group local ``name``: ``W`` for a ``thread_block_tile<W>`` (or ``auto`` from
        ``tiled_partition<W>(...)``), ``0`` for a ``thread_block`` (``this_thread_block()``), :data:`_GRID_GROUP` for a ``grid_group``
        (``this_grid()``), else ``None``."""
        inits = self.env.local_inits(self.func, name)
        typ = ""
        if len(inits) == 1 and not self.env.assigned_in(self.func, name):
            decl = inits[0].parent.parent if inits[0].parent is not None else None
            if decl is not None and decl.type == "declaration":
                typ = " ".join(self.env.t(decl.child_by_field_name("type")).split())
            value = inits[0]
        else:
            # tree-sitter reads `cg::thread_block_tile<32> warp = ...;` as `(tile < 32) > (warp = ...)`: accept
            # that one assignment when its statement starts with the tile type
            sets = [a for a in of_type(self.func, ("assignment_expression", "update_expression"))
                    if self.env.t(a.child_by_field_name("left") or a.child_by_field_name("argument")) == name]
            stmt = sets[0].parent if len(sets) == 1 else None
            while stmt is not None and stmt.type == "binary_expression":
                stmt = stmt.parent
            if inits or stmt is None or stmt.type != "expression_statement" or sets[0].type != "assignment_expression":
                return None
            typ = " ".join(self.env.src[stmt.start_byte:sets[0].start_byte].decode(errors="replace").split())
            if "thread_block_tile<" not in typ:
                return None
            value = sets[0].child_by_field_name("right")
        init = " ".join(self.env.t(value).split())
        for text, key in ((typ, "thread_block_tile<"), (init, "tiled_partition<")):
            if key in text:
                inner = text.split(key, 1)[1].split(">", 1)[0].strip()
                v = self.env.value_of_text(inner, value.start_byte)
                return v if isinstance(v, int) and v > 0 else None
        if typ.split("::")[-1] == "thread_block" or init.split("::")[-1].replace(" ", "") == "this_thread_block()":
            return 0
        if typ.split("::")[-1] == "grid_group" or init.split("::")[-1].replace(" ", "") == "this_grid()":
            return _GRID_GROUP
        return None

    def _group_of(self, obj: Node) -> int | None:
        """:meth:`_group` of the object of a cooperative-groups query: a local (``grid`` in ``grid.thread_rank()``)
        or the group's constructor called in place (``cg::this_grid().thread_rank()``,
        ``cg::this_thread_block().size()``)."""
        if obj.type == "identifier":
            return self._group(self.env.t(obj))
        if obj.type == "call_expression":
            args = obj.child_by_field_name("arguments")
            if args is not None and not args.named_children:
                name = "".join(self.env.t(obj.child_by_field_name("function")).split()).split("::")[-1]
                return {"this_thread_block": 0, "this_grid": _GRID_GROUP}.get(name)
        return None

    def _cg_call(self, node: Node) -> sympy.Expr | None:
        """The index form of a cooperative-groups query (``warp.thread_rank()``, ``warp.size()``,
        ``warp.meta_group_rank()``, ``block.thread_rank()`` ...) with no arguments, else ``None``.

        The thread's rank in its block is ``threadIdx.x`` when every launch of the kernel in the unit has a 1-D
        block, else the linear ``threadIdx.x + threadIdx.y*blockDim.x + threadIdx.z*blockDim.x*blockDim.y``
        (CUDA C++ Programming Guide, "Cooperative Groups": ``thread_rank``, ``meta_group_rank``).
        """
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if fn is None or fn.type != "field_expression" or args is None or args.named_children:
            return None
        obj, meth = fn.child_by_field_name("argument"), self.env.t(fn.child_by_field_name("field"))
        w = None if obj is None else self._group_of(obj)
        if w is None:
            return None
        tx, ty, tz = (sym(f"threadIdx.{d}") for d in DIMS)
        bx, by, bz = (sym(f"blockDim.{d}") for d in DIMS)
        rank = tx if self.one_d else tx + ty * bx + tz * bx * by
        threads = bx if self.one_d else bx * by * bz
        if w == 0:
            return {"thread_rank": rank, "size": threads, "num_threads": threads}.get(meth)
        if w == _GRID_GROUP:
            # a grid group: the block's rank in the grid times the block's threads, plus the rank in the block
            # (CUDA C++ Programming Guide, "Cooperative Groups", grid_group: thread_rank, block_rank, num_blocks)
            gx, gy, gz = (sym(f"gridDim.{d}") for d in DIMS)
            ix, iy, iz = (sym(f"blockIdx.{d}") for d in DIMS)
            block_rank = ix if self.one_d else ix + iy * gx + iz * gx * gy
            blocks = gx if self.one_d else gx * gy * gz
            return {"thread_rank": block_rank * threads + rank, "size": blocks * threads,
                    "num_threads": blocks * threads, "block_rank": block_rank, "num_blocks": blocks}.get(meth)
        table = {"thread_rank": sympy.Function("mod")(rank, w), "size": sympy.Integer(w),
                 "num_threads": sympy.Integer(w), "meta_group_rank": sympy.Function("div")(rank, w),
                 "meta_group_size": sympy.Function("div")(threads + w - 1, w)}
        return table.get(meth)

    def _ceil_div(self, node: Node, depth: int) -> sympy.Expr | None:
        """``div(a + b - 1, b)`` for a two-argument call of a ceiling-division helper named as such
        (``CEIL_DIV``, ``ceil_div``, ``cdiv``, ``DIV_UP``, ``iDivUp``, ...: a host grid's usual spelling), else
        ``None``. Read by name only: the helper's body is not checked."""
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        vals = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
        if fn is None or len(vals) != 2 or not _CEIL_DIV.match(self.env.t(fn).split("::")[-1]):
            return None
        a, b = self.expr(vals[0], depth + 1), self.expr(vals[1], depth + 1)
        return None if a is None or b is None else sympy.Function("div")(a + b - 1, b)

    def builtin(self, node: Node) -> str | None:
        """``"blockIdx.x"`` for a ``blockIdx.x`` field expression (casts stripped), and for its cooperative-groups
        spelling on a thread block (``block.thread_index().x``, ``block.group_index().x``, ``block.group_dim().x``,
        ``block.dim_threads().x``; CUDA C++ Programming Guide, "Cooperative Groups", ``thread_block``), else
        ``None``."""
        node = strip_casts(node)
        if node.type != "field_expression":
            return None
        arg, fld = node.child_by_field_name("argument"), node.child_by_field_name("field")
        if arg is None or fld is None:
            return None
        obj = self.env.t(arg)
        if obj not in _BUILTIN_OBJS:
            obj = self._cg_dim3(arg) or ""
        if not obj or self.env.t(fld) not in DIMS:
            return None
        return f"{obj}.{self.env.t(fld)}"

    def _cg_dim3(self, node: Node) -> str | None:
        """``"threadIdx"`` for ``block.thread_index()`` on a ``thread_block`` local ``block`` (``"blockIdx"`` for
        ``group_index()``, ``"blockDim"`` for ``group_dim()``/``dim_threads()``), else ``None``."""
        if node.type != "call_expression":
            return None
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if fn is None or fn.type != "field_expression" or args is None or args.named_children:
            return None
        obj = fn.child_by_field_name("argument")
        if obj is None or obj.type != "identifier" or self._group(self.env.t(obj)) != 0:
            return None
        return _CG_DIM3.get(self.env.t(fn.child_by_field_name("field")))

    def expr(self, node: Node | None, depth: int = 0) -> sympy.Expr | None:  # noqa: C901 - one case per node
        """The sympy form of ``node``, or ``None`` for something that is not an expression."""
        if node is None or depth > 30:
            return None
        node = strip_casts(node)
        t = node.type
        if t == "number_literal":
            v = self.literals.get(node.start_byte, literal_value(self.env.t(node)))
            return None if v is None else (sympy.Integer(v) if isinstance(v, int) else sympy.Float(v))
        b = self.builtin(node)
        if b is not None:
            return sym(b)
        if t in ("identifier", "type_identifier"):
            return self._name(node, depth)
        if t == "field_expression" and (f := " ".join(self.env.t(node).split()).replace(" ", "")) in self.fields:
            return sym(f)
        if t == "binary_expression":
            op = self.env.t(node.child_by_field_name("operator"))
            a = self.expr(node.child_by_field_name("left"), depth + 1)
            c = self.expr(node.child_by_field_name("right"), depth + 1)
            if a is None or c is None:
                return None
            return combine(op, a, c)
        if t == "unary_expression":
            op = self.env.t(node.child_by_field_name("operator"))
            a = self.expr(node.child_by_field_name("argument"), depth + 1)
            if a is None:
                return None
            return -a if op == "-" else (a if op == "+" else sympy.Function("unary")(a))
        if t == "subscript_expression":
            return sympy.Symbol(f"load({' '.join(self.env.t(node).split())})")
        if t == "call_expression":
            cg = self._cg_call(node)
            if cg is not None:
                return cg
            cd = self._ceil_div(node, depth) if self.ceil_div_calls else None
            if cd is not None:
                return cd
            sub = self.through_macro(node)
            if sub is not None:
                e = sub.expr(sub.top, depth + 1)
                if e is not None:
                    return e
            return sympy.Symbol(f"call({' '.join(self.env.t(node).split())})")
        return sympy.Symbol(f"expr({' '.join(self.env.t(node).split())})")

    def through_macro(self, node: Node) -> MacroExpansion | None:
        """The expansion of ``node`` when it calls an expandable function-like macro of the unit in effect there
        (:mod:`~htam_core.source.analysis.macros`), read in the kernel's scope at the call; else ``None``."""
        mc = macro_call(node, self.macros, self.env.t)
        return None if mc is None else MacroExpansion.of(self, node, mc[0], mc[1], frozenset())

    def _name(self, node: Node, depth: int) -> sympy.Expr:
        return self._name_at(self.env.t(node), node.start_byte, depth)

    def _name_at(self, name: str, at: int, depth: int) -> sympy.Expr:
        """The sympy form of the name ``name`` read at byte ``at`` of the unit (see :meth:`expr`)."""
        if name in self.loop_vars or self.names_as_symbols:
            return sym(name)
        key = (name, at)
        if key in self._memo:
            return self._memo[key]
        out: sympy.Expr = sym(name)
        c = self.env.const_name(name, self.func, before=at)
        if c is not None:
            out = sympy.Integer(c.value)
            if self.spell and name not in self.fold and self._named_outside(name, at):
                out = sym(name)
                self.kept.add(name)
        else:
            inits = self.env.local_inits(self.func, name)
            if len(inits) > 1:  # declared in several blocks (a loop's own `const int i`): the one in scope at `at`
                inits = visible_init(inits, at)
            if len(inits) == 1 and inits[0].start_byte < at and not self.env.assigned_in(self.func, name):
                inner = self.expr(inits[0], depth + 1)
                if inner is not None:
                    out = inner
            elif self.reaching and (value := reaching_value(self.func, name, at, self.env.src)) is not None:
                out = self.expr(value, depth + 1) or out
            elif not inits:
                out = self._index_macro(name, depth) or out
        self._memo[key] = out
        return out

    def _named_outside(self, name: str, at: int) -> bool:
        """True when the constant ``name`` read at byte ``at`` gets its value outside the kernel's body (a
        ``#define``, a file-scope or header constant, a template parameter), so its name is in scope everywhere in
        the body. An ``enum class`` member is not kept: it does not convert to an integer where an edit would write
        it (its value is spelled instead)."""
        where = self.env.definition(name, self.func, at)[0]
        if where == "enum":
            e = self.env.enumerator(name, self.func, at)
            return e is not None and not e.scoped
        return where in ("define", "file", "binding", "none")

    def _index_macro(self, name: str, depth: int) -> sympy.Expr | None:
        """The index form of an object-like ``#define name value`` whose value reads a builtin (``#define GLOBAL_ID
        (blockIdx.x * blockDim.x + threadIdx.x)``), else ``None``. The value is read as an expression on its own:
        builtins, literals and the other object-like macros and constants it names (read the same way)."""
        text = " ".join(self.env.define_text(name).split())
        if not text or not _BUILTIN_RE.search(text):
            return None
        tree = parse_cuda(f"auto __htam_v = ({text});".encode())
        root = tree.root_node
        decl = root.named_children[0] if root.named_children else None
        if root.has_error or decl is None or decl.type != "declaration":
            return None
        init = next((d for d in decl.children_by_field_name("declarator") if d.type == "init_declarator"), None)
        sub = Affine(_MacroEnv(self.env, f"auto __htam_v = ({text});".encode(), root), root, self.loop_vars, self.one_d,
                     self.ceil_div_calls)
        return sub.expr(init.child_by_field_name("value") if init is not None else None, depth + 1)


#: The name a macro parameter takes in a parsed expansion (``__htam_a0`` ...): it stands for the call's argument.
_PLACEHOLDER = "__htam_a"
#: Where a parameter may stand in a body whatever its argument (C11 6.10.3.1 substitutes text: ``x*x`` with
#: ``a+1`` reads ``a+1*a+1``): inside parentheses, as a call's argument, as a subscript, or alone.
_GROUPED = frozenset({"parenthesized_expression", "argument_list", "subscript_argument_list", "init_declarator"})
_PRIMARY = frozenset({"identifier", "number_literal", "call_expression", "subscript_expression", "field_expression",
                      "parenthesized_expression", "string_literal", "char_literal", "true", "false", "this",
                      "qualified_identifier", "template_function"})


class MacroExpansion(Affine):
    """One function-like macro call read through: the macro's body parsed on its own with each parameter as a
    placeholder name, evaluated in the kernel's scope at the call. A placeholder reads as the argument (evaluated
    where the argument stands, a macro call in it expanded in turn), any other name as that name written at the
    call; a macro called inside the body is read the same way, never the macro itself again (the recursion
    guard). Every fact found inside belongs to the call's source range (:attr:`call`).

    Built by :meth:`Affine.through_macro` and :meth:`of`; ``None`` from them when the body does not parse as an
    expression, or when an argument that is not a primary expression stands unparenthesized in the body (its
    text would bind differently, so the reading gives up).

    Attributes:
        parent: the reading the call stands in (the kernel's :class:`Affine`, or an enclosing expansion).
        call: the call node, in the parent's tree.
        macro: the definition read.
        args: the argument nodes, in the parent's tree.
        top: the body's expression node in the expansion's own tree.
        kernel: the kernel's :class:`Affine` (names are resolved there).
    """

    def __init__(self, parent: Affine, call: Node, macro: FunctionMacro, args: list[Node], env: ConstEnv,
                 top: Node, active: frozenset[str]) -> None:
        kernel = parent.kernel if isinstance(parent, MacroExpansion) else parent
        super().__init__(env, kernel.func, kernel.loop_vars, kernel.one_d, kernel.ceil_div_calls, kernel.macros)
        self.parent, self.call, self.macro, self.args, self.top = parent, call, macro, args, top
        self.kernel = kernel
        self.at = parent.at if isinstance(parent, MacroExpansion) else call.start_byte
        self.active = active | {macro.name}

    @classmethod
    def of(cls, parent: Affine, call: Node, macro: FunctionMacro, args: list[Node],
           active: frozenset[str]) -> MacroExpansion | None:
        """The expansion of ``call`` (``macro`` with ``args``) inside ``parent``, or ``None`` (see the class)."""
        if macro.name in active or len(active) > MAX_DEPTH:
            return None
        body = ExpandedIndex(macro.body).rename({p: f"{_PLACEHOLDER}{k}" for k, p in enumerate(macro.params)},
                                                paren=False)  # names only: not members, not inside literals
        text = f"auto __htam_v = ({body});".encode()
        root = parse_cuda(text).root_node
        decl = root.named_children[0] if root.named_children else None
        if root.has_error or decl is None or decl.type != "declaration":
            return None
        init = next((d for d in decl.children_by_field_name("declarator") if d.type == "init_declarator"), None)
        top = init.child_by_field_name("value") if init is not None else None
        if top is None:
            return None
        for n in walk(top):
            name = text[n.start_byte:n.end_byte].decode()
            if n.type == "identifier" and name.startswith(_PLACEHOLDER):
                arg = args[int(name[len(_PLACEHOLDER):])]
                if n.parent is not None and n.parent.type not in _GROUPED and n != top and \
                        unwrap_parens(arg).type not in _PRIMARY:
                    return None
        return cls(parent, call, macro, args, _MacroEnv(parent.env, text, root), top, active)

    def argument(self, node: Node) -> Node | None:
        """The argument node (parent's tree) a placeholder ``node`` of the expansion stands for, else ``None``."""
        name = self.env.t(unwrap_parens(node))
        if unwrap_parens(node).type != "identifier" or not name.startswith(_PLACEHOLDER):
            return None
        return self.args[int(name[len(_PLACEHOLDER):])]

    def render(self, node: Node) -> str:
        """The text ``node`` of the expansion stands for at the call (placeholders replaced by their arguments)."""
        # a compound argument only ever stands where the body groups it (see :meth:`of`): its text goes in as is
        return re.sub(rf"{_PLACEHOLDER}(\d+)", lambda m: self.parent_text(self.args[int(m.group(1))]),
                      self.env.t(node))

    def parent_text(self, node: Node) -> str:
        """The text of ``node`` of the parent's tree, placeholders of an enclosing expansion rendered."""
        return self.parent.render(node) if isinstance(self.parent, MacroExpansion) else self.parent.env.t(node)

    def through_macro(self, node: Node) -> MacroExpansion | None:
        """A macro call inside the body, read in turn (never the macro being expanded)."""
        fn = node.child_by_field_name("function")
        if fn is None or fn.type != "identifier":
            return None
        d = self.macros.at(self.env.t(fn), self.at)
        args = [a for a in (node.child_by_field_name("arguments").named_children
                            if node.child_by_field_name("arguments") is not None else []) if a.type != "comment"]
        if d is None or d.refusal or len(args) != len(d.params):
            return None
        return MacroExpansion.of(self, node, d, args, self.active)

    def _name(self, node: Node, depth: int) -> sympy.Expr:
        arg = self.argument(node)
        if arg is not None:
            e = self.parent.expr(arg, depth + 1)
            return e if e is not None else sympy.Symbol(f"expr({self.render(node)})")
        return self.kernel._name_at(self.env.t(node), self.at, depth)

    def _cg_call(self, node: Node) -> sympy.Expr | None:
        return None  # a cooperative group is a local of the kernel: not read inside a macro body

    def _cg_dim3(self, node: Node) -> str | None:
        return None


class _MacroEnv(ConstEnv):
    """The constants of a unit seen from the parsed text of one of its macros: text comes from the macro's own
    parse, names are looked up in the unit (its ``#define``s, file-scope constants and bindings)."""

    def __init__(self, unit: ConstEnv, src: bytes, root: Node) -> None:
        super().__init__(src, root, unit.bindings, unit.path)
        self._unit = unit

    def const_name(self, name: str, scope: Node | None, before: int | None = None):  # noqa: ANN201 - as the base
        """The unit's constant ``name`` (file scope: a macro has no locals)."""
        return self._unit.const_name(name, None)

    def define_text(self, name: str) -> str:
        """The value text of the unit's ``#define name``."""
        return self._unit.define_text(name)


def _loop_header(src: CudaSource, aff: Affine, loop: Node) -> dict:
    """The header of a ``for`` loop with sympy parts (see :func:`~htam_core.source.analysis.loops.c_for_header`), or
    of a ``while``/``do`` loop read as the counted loop it is (:func:`~htam_core.source.analysis.loops.c_while_header`),
    its statements as file spans (``init_span``, ``update_span``) and whether its variable is named outside the loop
    and that init (``var_outside``)."""
    if loop.type == "for_statement":
        return c_for_header(loop, src.env.t, aff.expr)
    def const(n: Node | None) -> int | None:
        v = src.env.value(n, src.func) if n is not None else None
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    h = c_while_header(loop, src.env.t, aff.expr, const)
    init, step = h.pop("init", None), h.pop("step_stmt", None)
    if init is None or step is None:
        return h
    h["init_span"], h["update_span"] = src.span(init), src.span(step)
    h["var_outside"] = any(not (init.start_byte <= r.start_byte < init.end_byte or
                                loop.start_byte <= r.start_byte < loop.end_byte)
                           for r in of_type(src.body, "identifier") if src.env.t(r) == h["var"])
    return h


def _decl_of(src: CudaSource, name: str, before: int) -> tuple[str | None, Node | None, Node | None]:
    """(type, declaration node, initializer) of the last declaration of ``name`` in the kernel before ``before``."""
    found: tuple[str | None, Node | None, Node | None] = (None, None, None)
    for decl in of_type(src.body, "declaration"):
        if decl.start_byte >= before:
            break
        for d in decl.children_by_field_name("declarator"):
            dn = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if dn is not None and dn.type == "identifier" and src.env.t(dn) == name:
                init = d.child_by_field_name("value") if d.type == "init_declarator" else None
                found = (" ".join(src.env.t(decl.child_by_field_name("type")).split()), decl, init)
    return found


def _accumulators(src: CudaSource, loop: Node, inner_loops: list[Node]) -> tuple[Accumulator, ...]:
    env = src.env
    out: list[Accumulator] = []
    seen: set[str] = set()
    for a in of_type(loop, ("assignment_expression",)):
        owner = a.parent
        while owner is not None and owner.type not in LOOP_TYPES:
            owner = owner.parent
        if owner != loop:  # attributed to the innermost loop
            continue
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            continue
        name, op = env.t(left), env.t(a.child_by_field_name("operator"))
        kind = {"+=": "sum", "-=": "sum", "*=": "prod"}.get(op)
        r = strip_casts(right)
        if op == "=" and r.type == "binary_expression":
            rl, rr = r.child_by_field_name("left"), r.child_by_field_name("right")
            rop = env.t(r.child_by_field_name("operator"))
            if rop in ("+", "*") and name in (env.t(strip_casts(rl)), env.t(strip_casts(rr))):
                kind = "sum" if rop == "+" else "prod"
            elif rop == "-" and env.t(strip_casts(rl)) == name:
                kind = "sum"
        elif op == "=" and r.type == "call_expression":
            fn = env.t(r.child_by_field_name("function"))
            args = r.child_by_field_name("arguments")
            if fn in _MAX_FNS and args is not None and name in [env.t(strip_casts(x)) for x in args.named_children]:
                kind = _MAX_FNS[fn]
        chosen = _chosen_extreme(src, a, name) if kind is None and op == "=" else None
        if chosen is not None:
            kind, sel, stmt = chosen
        else:
            sel, stmt = None, a.parent if a.parent is not None and a.parent.type == "expression_statement" else a
        if kind is None or name in seen:
            continue
        typ, decl, init = _decl_of(src, name, loop.start_byte)
        if decl is None and name not in [env.t(p) for p in of_type(src.func.child_by_field_name("declarator"),
                                                                       "identifier")]:
            continue
        if decl is not None and decl.start_byte >= loop.start_byte:
            continue
        loop_header = loop.child_by_field_name("initializer")
        if loop_header is not None and name in [env.t(n) for n in of_type(loop_header, "identifier")][:1]:
            continue
        is_int = typ is not None and typ.split()[-1] in ("int", "unsigned", "size_t", "int64_t", "long")
        if chosen is None and is_int and not any(n.type in ("subscript_expression", "call_expression")
                                                 for n in walk(right)):
            continue  # an index moving by a stride, not a reduction
        seen.add(name)
        out.append(Accumulator(name, kind, typ, src.line(a), src.span(stmt),
                               src.span(decl) if decl is not None else None,
                               env.t(init) if init is not None else None, sel))
    return tuple(out)


def _chosen_extreme(src: CudaSource, a: Node, name: str) -> tuple[str, Selection | None, Node] | None:
    """``(op, selection, statement)`` when the assignment ``a`` to ``name`` is a running max/min written as a choice
    (``m = x > m ? x : m``, ``if (x > m) m = x;``: :func:`~htam_core.source.analysis.select.select_step`) or the
    extreme of an arg step (``if (x > m) { m = x; i = c; }``: ``"argmax"``/``"argmin"``,
    :func:`~htam_core.source.analysis.argreduce.arg_step`), else ``None``. The statement is the whole step (the
    ``if`` for the statement forms), so its span holds every read of ``name`` the step makes."""
    stmt = a.parent if a.parent is not None and a.parent.type == "expression_statement" else a
    owner = stmt.parent.parent if stmt.parent is not None and stmt.parent.type == "compound_statement" \
        else stmt.parent
    for cand in (stmt, owner):
        step = select_step(src.src, cand) if cand is not None else None
        if step is not None and step.name == name:
            return step.selection.kind, step.selection, step.stmt
    arg = arg_step(src.src, owner) if owner is not None else None
    if arg is not None and arg.value == name:
        return arg.kind, None, arg.stmt
    return None


def _pragma(src: CudaSource, loop: Node) -> tuple[str | None, Span | None]:
    """The text after ``#pragma`` of the pragma line that belongs to ``loop`` (``"unroll"``, ``"unroll 4"``) and
    its file bytes, or ``(None, None)`` (:func:`~htam_core.source.analysis.syntax.loop_pragma`)."""
    p = loop_pragma(loop)
    if p is None:
        return None, None
    arg = p.child_by_field_name("argument")
    return (src.env.t(arg).strip() if arg is not None else ""), src.span(p)


#: ``(pointer, element offset, vector, parts)`` of a pointer expression (see :class:`PointerAlias`).
Base = tuple[str, sympy.Expr, bool, tuple[tuple[int, int, int], ...]]


def _declared_names(src: CudaSource) -> dict[str, int]:
    """How many times each name is declared in the kernel body (locals of any type, loop variables included)."""
    out: dict[str, int] = {}
    for decl in of_type(src.body, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            cur = d
            while cur is not None and cur.type != "identifier":
                cur = cur.child_by_field_name("declarator")
            if cur is not None:
                out[src.env.t(cur)] = out.get(src.env.t(cur), 0) + 1
    return out


def _pointer_decls(src: CudaSource, aff: Affine, params: dict[str, str | None],
                   shared: dict[str, Node]) -> tuple[dict[str, Base], tuple[PointerAlias, ...], set[str]]:
    """Local pointers that alias a parameter (or a shared array) at one fixed offset.

    Returns:
        ``(name -> base, the aliases as facts, escaped)``: a local declared once as ``T *p = <pointer
        expression of a parameter>`` and never reassigned, incremented or address-taken is an alias; a local
        initialized from a parameter that fails those conditions (``p++`` in a loop) makes that parameter
        ``escaped`` (its accesses through the local are not known, so its read/write set is not either).
    """
    aliases: dict[str, Base] = {}
    facts: list[PointerAlias] = []
    escaped: set[str] = set()
    counts = _declared_names(src)
    for decl in of_type(src.body, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            if d.type != "init_declarator":
                continue
            dn, v = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if dn is None or v is None or dn.type != "pointer_declarator":
                continue
            inner = dn.child_by_field_name("declarator")
            if inner is None or inner.type != "identifier":
                continue
            base = _base_of(src, aff, v, params, shared, aliases)
            if base is None:
                continue
            name = src.env.t(inner)
            if counts.get(name, 0) != 1 or src.env.assigned_in(src.func, name):
                escaped.add(base[0])  # moved or re-declared: not one offset
                continue
            aliases[name] = base
            facts.append(PointerAlias(name, base[0], base[1], base[3], base[2], src.span(decl), src.line(decl)))
    return aliases, tuple(facts), escaped


def _base_of(src: CudaSource, aff: Affine, node: Node, params: dict[str, str | None], shared: dict[str, Node],
             aliases: dict[str, Base]) -> Base | None:
    """``(pointer, element offset, vector, parts)`` of a pointer expression: ``p``, ``p + e``, ``&p[e]``, casts,
    and the aliases of :func:`_pointer_decls` (``parts``: the offset's added expressions as written)."""
    env = src.env
    vector = False
    byte_cast = False  # a cast to a pointer of 1-byte elements: offsets added above it are bytes
    n = node
    for _ in range(8):
        n = unwrap_parens(n)
        if n.type == "cast_expression":
            vector = vector or any(w in env.t(n.child_by_field_name("type")) for w in ("2", "3", "4"))
            byte_cast = byte_cast or _byte_pointer(env.t(n.child_by_field_name("type")))
            n = n.child_by_field_name("value")  # type: ignore[assignment]
            continue
        fn = n.child_by_field_name("function") if n.type == "call_expression" else None
        if fn is not None and fn.type == "template_function" and env.t(fn.child_by_field_name("name")) in (
                "reinterpret_cast", "static_cast", "const_cast"):
            # a reinterpret_cast re-types the elements (float4, a 16-byte struct, int4): indices are no longer
            # in elements of the pointer
            vector = vector or env.t(fn.child_by_field_name("name")) == "reinterpret_cast" or any(
                w in env.t(fn.child_by_field_name("arguments")) for w in ("2", "4"))
            byte_cast = byte_cast or _byte_pointer(env.t(fn.child_by_field_name("arguments")))
            args = n.child_by_field_name("arguments")
            if args is None or args.named_child_count != 1:
                return None
            n = args.named_children[0]
            continue
        break
    if n.type == "identifier":
        name = env.t(n)
        if name in aliases:
            p, off, vec, parts = aliases[name]
            return p, off, vec or vector or (byte_cast and not _byte_pointer(params.get(p) or "")), parts
        if name in params or name in shared:
            wide = byte_cast and (name in shared or not _byte_pointer(params.get(name) or ""))
            return name, sympy.Integer(0), vector or wide, ()
        return None
    if n.type in ("field_expression", "qualified_identifier") and (name := "".join(env.t(n).split())) in params:
        return name, sympy.Integer(0), vector, ()  # p.x of a struct parameter, ns::hist of a __device__ array
    scalars = getattr(params, "scalars", frozenset())
    if n.type == "pointer_expression" and env.t(n).startswith("&") and scalars:  # &g_count of a __device__ scalar
        arg = unwrap_parens(n.child_by_field_name("argument"))  # type: ignore[arg-type]
        if arg.type in ("identifier", "qualified_identifier") and "".join(env.t(arg).split()) in scalars:
            return "".join(env.t(arg).split()), sympy.Integer(0), vector, ()
    if n.type == "binary_expression" and env.t(n.child_by_field_name("operator")) in ("+", "-"):
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        for ptr, off in ((left, right), (right, left)):
            if env.t(n.child_by_field_name("operator")) == "-" and ptr is right:
                continue
            b = _base_of(src, aff, ptr, params, shared, aliases) if ptr is not None else None
            if b is not None and off is not None:
                e = aff.expr(off)
                if e is None:
                    return None
                sign = -1 if env.t(n.child_by_field_name("operator")) == "-" else 1
                return b[0], b[1] + sign * e, b[2] or vector, (*b[3], (*src.span(off), sign))
        return None
    if n.type == "pointer_expression" and env.t(n).startswith("&"):
        arg = n.child_by_field_name("argument")
        if arg is not None and arg.type == "subscript_expression":
            b = _base_of(src, aff, arg.child_by_field_name("argument"), params, shared, aliases)
            idx = _subscript_index(arg)
            e = aff.expr(idx) if idx is not None else None
            if b is not None and e is not None and idx is not None:
                return b[0], b[1] + e, b[2] or vector, (*b[3], (*src.span(idx), 1))
    return None


#: One-byte element types: a pointer cast to one of them counts its offsets in bytes.
_BYTE_TYPES = frozenset({"char", "unsigned char", "signed char", "int8_t", "uint8_t", "std::byte", "byte",
                         "uchar", "std::uint8_t", "std::int8_t"})


def _scalar_address(node: Node, env: ConstEnv, params: dict[str, str | None]) -> bool:
    """``node`` is ``&g`` with ``g`` a ``__device__`` scalar (:class:`BaseNames`' ``scalars``)."""
    scalars = getattr(params, "scalars", frozenset())
    arg = node.child_by_field_name("argument") if node.type == "pointer_expression" else None
    return arg is not None and env.t(node).startswith("&") and "".join(env.t(unwrap_parens(arg)).split()) in scalars


def _scalar_use(node: Node, env: ConstEnv, params: dict[str, str | None]) -> bool:
    """``node`` names a ``__device__`` scalar by value (not as ``&g`` in an atomic, which the atomic's branch
    records, nor as the name part of ``ns::g``)."""
    scalars = getattr(params, "scalars", frozenset())
    if node.type not in ("identifier", "qualified_identifier") or "".join(env.t(node).split()) not in scalars:
        return False
    up = node.parent
    if up is not None and up.type == "qualified_identifier":
        return False
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    if up is not None and up.type == "pointer_expression" and env.t(up).startswith("&"):
        call = up.parent.parent if up.parent is not None else None
        return not (call is not None and call.type == "call_expression"
                    and is_atomic_builtin(env.t(call.child_by_field_name("function"))))
    return up is None or up.type != "field_expression" or up.child_by_field_name("argument") != node


def _byte_pointer(type_text: str) -> bool:
    """``type_text`` (a cast's type, a parameter's type, a named cast's ``<...>``) is a pointer to a one-byte type
    (``const char *``, ``<unsigned char*>``, ``uint8_t *``): an offset added to such a pointer counts bytes, not
    the elements of a wider pointee it was cast from (``(const float *)((const char *)in + y * pitch)``).
    Idea source: C11 6.5.6 (pointer arithmetic counts elements of the pointed-to type)."""
    words = [w for w in type_text.replace("*", " ").replace("<", " ").replace(">", " ").split()
             if w not in ("const", "volatile", "__restrict__", "__restrict", "restrict")]
    return "*" in type_text and " ".join(words) in _BYTE_TYPES


def _subscript_index(node: Node) -> Node | None:
    idx = node.child_by_field_name("index") or node.child_by_field_name("indices")
    if idx is not None and idx.type == "subscript_argument_list":
        kids = [c for c in idx.named_children if c.type != "comment"]
        return kids[0] if len(kids) == 1 else None
    return idx


def _alias_init(node: Node, env: ConstEnv, aliases: dict[str, Base]) -> bool:
    """``node`` (``p[e]``) is taken the address of as the whole initializer of an alias (``T *r = &p[e];``)."""
    up = node.parent
    while up is not None and up.type in ("parenthesized_expression", "cast_expression", "pointer_expression"):
        if up.type == "pointer_expression" and not env.t(up).startswith("&"):
            return False
        up = up.parent
    if up is None or up.type != "init_declarator":
        return False
    dn = up.child_by_field_name("declarator")
    inner = dn.child_by_field_name("declarator") if dn is not None and dn.type == "pointer_declarator" else None
    return inner is not None and env.t(inner) in aliases


def _reads_none(node: Node, env: ConstEnv, aliases: dict[str, Base]) -> bool:
    """``node`` (``p[e]``), whose address is taken, is no access of its own and lets no pointer escape: the whole
    initializer of an alias (``float *r = &A[row * K];``: the alias's accesses are A's), an address test
    (``((size_t)&A[i] & 15) == 0``), or the base of a const view that is read (``*reinterpret_cast<const T *>(&A[i])``,
    read through the view)."""
    return _alias_init(node, env, aliases) or address_test(node, env.t) or \
        const_view_read(node, env.t, deref=True) is not None


def _null_test(use: Node, env: ConstEnv) -> bool:
    """``use`` (a pointer name) is only compared with a null pointer (``p != NULL``, ``p == nullptr``, ``!p``,
    ``p ? a : b``, ``if (p)``) or converted to an integer to test its address (:func:`address_test`): no memory
    is touched."""
    if address_test(use, env.t):
        return True
    up = use.parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    if up is None:
        return False
    if up.type == "binary_expression" and env.t(up.child_by_field_name("operator")) in ("==", "!="):
        other = up.child_by_field_name("right") if up.child_by_field_name("left") == use else \
            up.child_by_field_name("left")
        return env.t(other).strip() in ("NULL", "nullptr", "0")
    if up.type == "unary_expression" and env.t(up.child_by_field_name("operator")) == "!":
        return True
    if up.type == "conditional_expression" and up.child_by_field_name("condition") is not None:
        return unwrap_parens(up.child_by_field_name("condition")) == use
    return up.type == "condition_clause"


def storage_macros(src: CudaSource) -> frozenset[str]:
    """Names of the single-line function-like macros of the unit and its local headers whose body is an
    expression naming the storage of a parameter: it takes the parameter's address
    (``#define FLOAT4(v) (reinterpret_cast<float4*>(&(v))[0])``, ``#define REF(x) (*&(x))``). A call of one
    with an access as its argument reads that access, and writes it when the call is assigned to
    (``FLOAT4(out[i]) = v;``), as the expansion nvcc compiles does."""
    out: set[str] = set()
    units = [(src.src, src.root)] + [(h.src, h.root) for h in src.env.headers()]
    for text, root in units:
        for md in of_type(root, "preproc_function_def"):
            name, params, value = (md.child_by_field_name(f) for f in ("name", "parameters", "value"))
            if name is None or params is None or value is None:
                continue
            body = text[value.start_byte:value.end_byte].decode(errors="replace")
            if "\\\n" in body or ";" in body:
                continue  # a multi-line or statement macro: not an expression
            names = [text[c.start_byte:c.end_byte].decode(errors="replace") for c in params.named_children]
            if any(re.search(rf"&\s*\(?\s*{re.escape(n)}\b", body) for n in names if n.isidentifier()):
                out.add(text[name.start_byte:name.end_byte].decode(errors="replace"))
    return frozenset(out)


def _kind(node: Node, env: ConstEnv, macros: frozenset[str] = frozenset()) -> str:
    """``"write"``, ``"readwrite"`` or ``"read"`` for an access expression ``node`` (``"escape"`` when its
    address leaves the kernel's sight). ``macros``: the unit's :func:`storage_macros`; an access that is the
    argument of a call of one is read or written as the call is."""
    cur, p = node, node.parent
    while p is not None and p.type in ("parenthesized_expression", "field_expression"):
        cur, p = p, p.parent
    if p is not None and p.type == "argument_list" and len(p.named_children) == 1 and p.parent is not None \
            and p.parent.type == "call_expression" and env.t(p.parent.child_by_field_name("function")) in macros:
        cur, p = p.parent, p.parent.parent
        while p is not None and p.type in ("parenthesized_expression", "field_expression"):
            cur, p = p, p.parent
    if p is None:
        return "read"
    if p.type == "assignment_expression" and p.child_by_field_name("left") == cur:
        return "write" if env.t(p.child_by_field_name("operator")) == "=" else "readwrite"
    if p.type == "update_expression":
        return "readwrite"
    if p.type == "pointer_expression" and env.t(p).startswith("&"):
        g = p.parent
        while g is not None and g.type in ("parenthesized_expression", "argument_list"):
            g = g.parent
        fn = env.t(g.child_by_field_name("function")) if g is not None and g.type == "call_expression" else ""
        if is_atomic_builtin(fn):
            return "readwrite"
        return "read" if is_load_builtin(fn) else "escape"
    if p.type == "init_declarator" and p.child_by_field_name("value") == cur and _mutable_reference(p, env):
        return "readwrite"  # `uint &e = edges[i];`: the element may be written through the reference
    return "read"


def _mutable_reference(init: Node, env: ConstEnv) -> bool:
    """``init`` (an ``init_declarator``) declares a reference to non-const (``uint &e = ...``, ``auto &e``), through
    which the element it binds may be written; ``const T &e`` and ``T &&e`` bound to a copy are not."""
    d = init.child_by_field_name("declarator")
    if d is None or d.type != "reference_declarator" or env.t(d).startswith("&&"):
        return False
    decl = init.parent
    quals = [env.t(c) for c in decl.children if c.type == "type_qualifier"] if decl is not None else []
    return "const" not in quals


def _loop_vars(src: CudaSource, env: ConstEnv, loop_nodes: list[Node]) -> set[str]:
    """The names that vary over the body's loops: each ``for`` loop's induction variables, and the variables updated
    inside a loop's body (``i += blockDim.x * gridDim.x``)."""
    loop_vars: set[str] = set()
    for ln in loop_nodes:
        init = ln.child_by_field_name("initializer") if ln.type == "for_statement" else None
        if init is not None and init.type == "declaration":
            loop_vars |= {env.t(d.child_by_field_name("declarator")) for d in init.named_children
                          if d.type == "init_declarator"}
        elif init is not None and init.type == "assignment_expression":
            loop_vars.add(env.t(init.child_by_field_name("left")))
    # variables updated by a stride inside a while/for body (``i += blockDim.x * gridDim.x``) vary too
    for a in of_type(src.body, ("assignment_expression", "update_expression")):
        target = a.child_by_field_name("left") or a.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            owner = a.parent
            while owner is not None and owner.type not in LOOP_TYPES:
                owner = owner.parent
            if owner is not None:
                loop_vars.add(env.t(target))
    return loop_vars


def cuda_facts(src: CudaSource, kernel: Kernel, spell: bool = False, fold: frozenset[str] = frozenset()
               ) -> KernelFacts:
    """The :class:`KernelFacts` of CUDA ``kernel`` located in ``src``; with ``spell``, every expression keeps the
    names of the constants defined outside the kernel (:class:`Affine`'s ``spell``): the facts to spell edits from,
    while the folded ones decide (``fold``: names folded all the same). The fields of a struct parameter passed by value are read as parameters of their
    own (``p.x``, :func:`~htam_core.source.analysis.struct_params.field_params`)."""
    errors: list[str] = []
    fields = field_params(src, kernel)
    kernel = replace(kernel, params=[*kernel.params, *fields]) if fields else kernel
    launch_list = list(src.launches)
    tparams = list(kernel.attributes.get("template_params") or [])
    first_bindings: dict[str, int] = {}
    per_launch: list[dict[str, int]] = []
    for lc in launch_list:
        b = template_bindings(src.env, lc.fn, tparams, lc.host) if tparams else {}
        per_launch.append(b)
    if per_launch:
        first_bindings = per_launch[0]
    env = ConstEnv(src.src, src.root, first_bindings, headers=src.env.headers())
    loop_nodes = [n for n in walk(src.body) if n.type in LOOP_TYPES]
    loop_vars = _loop_vars(src, env, loop_nodes)
    src = replace(src, env=env)  # the builders below read constants (with the template bindings) through src.env
    launches = tuple(_launch(src, lc, b) for lc, b in zip(launch_list, per_launch, strict=True))
    one_d = bool(launches) and all(la.block and all(d.value == 1 for d in la.block[1:]) for la in launches)
    aff = Affine(env, src.func, loop_vars, one_d, macros=macro_table(src.src, tuple(h.src for h in env.headers())),
                 spell=spell, fields=frozenset(f.name for f in fields), fold=fold)
    loops = _loops(src, aff, loop_nodes)
    globs = kernel_globals(src, kernel)
    params = BaseNames({**{g: f"{d.element_type}*" for g, d in globs.items()},
                        **{p.name: p.type for p in kernel.params if p.is_pointer}},
                       frozenset(g for g, d in globs.items() if d.scalar))
    shared = _shared_arrays(src)
    aliases, alias_facts, escaped = _pointer_decls(src, aff, params, shared)
    macro_bases: set[int] = set()
    accesses, escapes = _accesses(src, aff, loop_nodes, params, shared, aliases, macro_bases)
    escapes |= escaped
    pointers = _pointer_facts(src, kernel, accesses, escapes, aliases, macro_bases)
    tids = _thread_indices(src, aff)
    consts = _constants(src, env)
    macro_reads, device_calls = _macro_builtins(src, aff), _device_calls(src, tparams)
    index_calls = tuple(c for c in device_calls if _callees_read_builtins(src, (c,)))
    gs_loops, gs_dims = grid_stride_facts(aff, src.body, loop_nodes, [lp.line for lp in loops],
                                          hidden_reads=bool(index_calls),
                                          macros=frozenset(m for m, _ in macro_reads),
                                          uniform=(uni := Uniformity(env.t, src.body, macro_reads,
                                                                     frozenset(index_calls))))
    globals_ = _global_facts(src, globs, accesses)
    pointers_and_globals = pointers + tuple(_global_pointer(g, accesses) for g in globals_)
    atoms = atomic_updates(src, kernel, accesses, pointers_and_globals,
                           {g.name: (g.count, g.count_text) for g in globals_ if not g.scalar and g.count})
    threads = launches[0].block[0].value if launches and launches[0].block else None
    loops = tuple(
        replace(lp, strides_threads=True) if not lp.strides_threads and threads and lp.step == threads
        and lp.start is not None and any(s.name.startswith("threadIdx.") for s in lp.start.free_symbols) else lp
        for lp in loops)
    return KernelFacts(kernel.name, kernel.language, consts, loops, accesses, pointers, tids, launches, None,
                       tuple(errors), _collectives(src), _builtin_aliases(src, aff), alias_facts,
                       _builtins_read(src, aff), device_calls,
                       tuple(OnlineStat(lp.id, m, s, lp.line) for lp, n in zip(loops, loop_nodes, strict=True)
                             for m, s in online_pairs(n, src.src)),
                       barriers(src.body, src.src, src.base), atoms,
                       return_lines(src), macro_reads,
                       find_transposes(src, aff.expr, accesses, loops, [p.name for p in kernel.params
                                                                        if not p.is_pointer]),
                       grid_stride_loops=gs_loops, launch_free_dims=gs_dims, index_calls=index_calls,
                       pure_calls=pure_device_calls(src.root, src.src, device_calls),
                       type_instantiations=tuple((n, tuple(sorted(f.texts)))
                                                 for n, f in _type_instantiations(src, kernel).items()),
                       thread_x_spans=thread_x_spans(src, aff, launches),
                       block_dim_x_spans=block_dim_x_spans(src, aff, launches),
                       device_globals=globals_,
                       welford_stats=welford_stats(src, loops, loop_nodes),
                       **_atomic_fields(src, atoms, pointers_and_globals, uni, loops,
                                        frozenset(g.name.split("::")[-1] for g in globals_)),
                       **_stencil_fields(src, aff.expr, loops, pointers, alias_facts,
                                         _Known(tuple(p.name for p in kernel.params if not p.is_pointer), aff.kept)))


def _global_facts(src: CudaSource, globs: dict[str, DeviceGlobal], accesses: tuple[Access, ...]
                  ) -> tuple[DeviceGlobal, ...]:
    """The ``__device__`` variables the body names, each with how the body uses it (:attr:`DeviceGlobal.mode`,
    from its accesses), in declaration order."""
    out = []
    for name, g in globs.items():
        kinds = {a.kind for a in accesses if a.pointer == name}
        written, read = bool(kinds - {"read"}), bool(kinds - {"write"})
        mode = "readwrite" if written and read else "write" if written else "read" if read else "unused"
        out.append(replace(g, mode=mode, value_type=resolve_type(src.env, g.element_type) if g.element_type else None))
    return tuple(sorted(out, key=lambda g: (g.header, g.line, g.name)))


def _global_pointer(g: DeviceGlobal, accesses: tuple[Access, ...]) -> PointerFacts:
    """The :class:`PointerFacts` of a ``__device__`` variable, read by the atomics' analysis as a pointer
    parameter's (its element type; the accesses under its name)."""
    reads = tuple(a for a in accesses if a.pointer == g.name and a.kind in ("read", "readwrite"))
    writes = tuple(a for a in accesses if a.pointer == g.name and a.kind in ("write", "readwrite"))
    return PointerFacts(g.name, g.mode, reads, writes, g.element_type, g.value_type)  # type: ignore[arg-type]


def welford_stats(src: CudaSource, loops: tuple[LoopFact, ...], nodes: list[Node]) -> tuple[WelfordStat, ...]:
    """The :class:`WelfordStat` of each loop keeping Welford's recurrence (:func:`welford_steps`; ``loops`` and
    their ``nodes`` in the same order). An implicit count ``var + k`` counts the elements seen only in a loop from
    ``1 - k`` stepping by 1; any other such loop keeps none."""
    out: list[WelfordStat] = []
    for lp, n in zip(loops, nodes, strict=True):
        for w in welford_steps(n, src.src, lp.var):
            if w.count_span is not None and not (lp.start == 1 - w.count_offset and lp.update == "+"
                                                 and lp.step == 1 and lp.cmp in ("<", "<=", "!=")):
                continue
            span = (w.count_span[0] + src.base, w.count_span[1] + src.base) if w.count_span else None
            out.append(WelfordStat(lp.id, lp.line, w.mean, w.m2, w.count, w.value, span, w.count_offset))
    return tuple(out)


class _Known:
    """The names a tile loaded at the top of the body may read: the kernel's scalar parameters and the constants
    that :class:`Affine`'s ``spell`` kept as names (``kept``, filled as expressions are read, so iterated late)."""

    def __init__(self, scalars: tuple[str, ...], kept: set[str]) -> None:
        """``scalars``: the scalar parameters' names; ``kept``: the affine reading's kept names (a live set)."""
        self.scalars, self.kept = scalars, kept

    def __iter__(self) -> Iterator[str]:
        """The scalars, then the names kept so far."""
        return iter((*self.scalars, *sorted(self.kept)))


def _atomic_fields(src: CudaSource, atoms: tuple[AtomicUpdate, ...], pointers: tuple[PointerFacts, ...],
                   uni: Uniformity, loops: tuple[LoopFact, ...], fixed: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``uniform_atomics``, ``result_atomics`` and ``long_sums`` of :class:`KernelFacts` (:func:`uniform_atomics`,
    :func:`result_atomics`, :func:`~htam_core.source.analysis.long_sums.long_sums`)."""
    uniform = uniform_atomics(src, atoms, pointers, uni, fixed)
    return {"uniform_atomics": uniform, "result_atomics": result_atomics(src, atoms, pointers, uni, fixed),
            "long_sums": long_sums(src, loops, pointers, uniform)}


def _stencil_fields(src: CudaSource, expr: ExprOf, loops: tuple[LoopFact, ...], pointers: tuple[PointerFacts, ...],
                    aliases: tuple[PointerAlias, ...], scalars: Iterable[str]) -> dict[str, Any]:
    """``stencils``, ``stencil_refusal``, ``stencils2d``, ``stencil2d_refusal``, ``stencils3d`` and
    ``stencil3d_refusal`` of :class:`KernelFacts` (:func:`find_stencil`; :func:`find_stencil2d` when the kernel has no
    1-D window; :func:`find_stencil3d` when it has no 2-D one either)."""
    got = find_stencil(src, expr, loops, pointers, aliases, scalars)
    if not isinstance(got, str):
        return {"stencils": (got,)}
    got2 = find_stencil2d(src, expr, loops, pointers, aliases, scalars)
    two = {"stencil2d_refusal": got2} if isinstance(got2, str) else {"stencils2d": (got2,)}
    if not isinstance(got2, str):
        return {"stencil_refusal": got, **two}
    got3 = find_stencil3d(src, expr, loops, pointers, aliases, scalars)
    three = {"stencil3d_refusal": got3} if isinstance(got3, str) else {"stencils3d": (got3,)}
    return {"stencil_refusal": got, **two, **three}


#: What a called function's text says when it reads the thread or block indices itself.
_READS_INDICES = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim|this_grid|this_thread_block|thread_rank)\b")


def _callees_read_builtins(src: CudaSource, calls: tuple[str, ...]) -> bool:
    """Some function in ``calls`` (:func:`_device_calls`) may read the thread or block indices: a template
    parameter (its code is not in sight), or a function of the unit whose definition names a builtin or a
    cooperative-groups query."""
    for name in calls:
        defs = [f for f in of_type(src.root, "function_definition")
                if src.env.t(f.child_by_field_name("declarator")).split("(")[0].split("::")[-1].strip() == name]
        if not defs or any(_READS_INDICES.search(src.env.t(f)) for f in defs):
            return True
    return False


#: A builtin's component named in a macro's text (``threadIdx.x``).
_BUILTIN_FIELD = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*([xyz])\b")


def _macro_builtins(src: CudaSource, aff: Affine) -> tuple[tuple[str, str], ...]:
    """``(macro, builtin)`` of the builtins read inside the macros the body uses: through function-like macro
    calls (nested ones included) and object-like ``#define`` names the body reads (see
    :attr:`KernelFacts.macro_builtins`)."""
    out: list[tuple[str, str]] = []

    def defined(name: str) -> None:
        text = src.env.define_text(name)
        if text and not src.env.local_inits(src.func, name):
            for m in _BUILTIN_FIELD.finditer(text):
                if (name, f"{m.group(1)}.{m.group(2)}") not in out:
                    out.append((name, f"{m.group(1)}.{m.group(2)}"))

    def through(sub: MacroExpansion) -> None:
        for n in walk(sub.top):
            if n.type == "field_expression" and (b := sub.builtin(n)) is not None:
                if (sub.macro.name, b) not in out:
                    out.append((sub.macro.name, b))
            elif n.type == "call_expression" and (inner := sub.through_macro(n)) is not None:
                through(inner)
            elif n.type == "identifier" and sub.argument(n) is None:
                defined(sub.env.t(n))

    for n in walk(src.body):
        if n.type == "call_expression" and (sub := aff.through_macro(n)) is not None:
            through(sub)
        elif n.type == "identifier":
            defined(src.env.t(n))
    return tuple(out)


def _builtins_read(src: CudaSource, aff: Affine) -> tuple[str, ...]:
    """The builtins (``"threadIdx.x"``, ``"blockIdx.y"`` ...) the kernel's own body reads, directly or through a
    cooperative-groups query (``warp.thread_rank()``), sorted."""
    out: set[str] = set()
    for n in walk(src.body):
        if n.type == "field_expression":
            b = aff.builtin(n)
            if b is not None:
                out.add(b)
        elif n.type == "call_expression":
            e = aff._cg_call(n)
            if e is not None:
                out |= {s.name for s in e.free_symbols if s.name in BUILTINS}
    return tuple(sorted(out))


def _device_calls(src: CudaSource, tparams: list[str]) -> tuple[str, ...]:
    """The functions the kernel's body calls whose code can read the thread indices out of the analysis's sight:
    a template parameter of the kernel (``matmul_tri(...)`` with ``template<fn_ptr matmul_tri>``) or a function
    defined in the same translation unit, in call order (each once)."""
    defined = {src.env.t(d.child_by_field_name("declarator")).split("(")[0].split("<")[0].split("::")[-1].strip()
               for f in of_type(src.root, "function_definition")
               for d in [f.child_by_field_name("declarator")] if d is not None}
    defined.discard(src.env.t(src.func.child_by_field_name("declarator")).split("(")[0].strip())
    templ = {p.split()[-1].lstrip("*&") for p in tparams if p.split()}
    out: list[str] = []
    for call in of_type(src.body, "call_expression"):
        fn = src.env.t(call.child_by_field_name("function")).split("<", 1)[0].split("::")[-1].strip()
        if (fn in templ or fn in defined) and fn not in out:
            out.append(fn)
    return tuple(out)


def _builtin_aliases(src: CudaSource, aff: Affine) -> tuple[tuple[str, str], ...]:
    """``(name, builtin)`` of each local declared once and never modified whose value is one builtin symbol, then
    of each object-like macro the body names whose value is one (:func:`_macro_aliases`)."""
    out = _local_aliases(src, aff)
    for name, b in _macro_aliases(src, aff):
        out.setdefault(name, b)
    return tuple(out.items())


def _macro_aliases(src: CudaSource, aff: Affine) -> tuple[tuple[str, str], ...]:
    """``(name, builtin)`` of each object-like ``#define`` the kernel's body names, no local of the kernel, whose
    value is one builtin symbol (``#define TID (threadIdx.x)``, ``#define tx threadIdx.x``; through casts,
    parentheses and other such macros): the preprocessor writes the builtin wherever the name stands, so it is an
    alias like ``const int tid = threadIdx.x;`` (C11 6.10.3). The value is read by the index reader
    (:meth:`Affine.expr` reads an object-like macro's value as an index form), so a macro of an affine form of
    builtins (``#define GIDX (blockIdx.x * blockDim.x + threadIdx.x)``) reads as that form wherever an expression
    is read, and only the one-builtin ones are listed here."""
    env = src.env
    out: dict[str, str] = {}
    for n in of_type(src.body, "identifier"):
        name = env.t(n)
        if name in out or name in aff.loop_vars or not env.define_text(name) or env.local_inits(src.func, name):
            continue
        e = aff.expr(n)
        if isinstance(e, sympy.Symbol) and e.name.split(".")[0] in _BUILTIN_OBJS:
            out[name] = e.name
    return tuple(out.items())


def _local_aliases(src: CudaSource, aff: Affine) -> dict[str, str]:
    """``name -> builtin`` of each local declared once and never modified whose value is one builtin symbol."""
    env = src.env
    out: dict[str, str] = {}
    for decl in of_type(src.body, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            dn = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
            if dn is None or dn.type != "identifier" or env.t(dn) in out or env.t(dn) in aff.loop_vars:
                continue
            name = env.t(dn)
            if len(env.local_inits(src.func, name)) != 1 or env.assigned_in(src.func, name):
                continue
            e = aff.expr(d.child_by_field_name("value"))
            if isinstance(e, sympy.Symbol) and e.name.split(".")[0] in _BUILTIN_OBJS:
                out[name] = e.name
    return out


#: The nodes that can spell the thread's index along x: a name, ``threadIdx.x`` or ``block.thread_index().x``, a
#: cooperative-groups call (``cta.thread_rank()``), a cast of one of them.
_THREAD_X_NODES = ("identifier", "field_expression", "call_expression", "cast_expression")


def thread_x_spans(src: CudaSource, aff: Affine, launches: tuple[LaunchFacts, ...]) -> tuple[tuple[int, int], ...]:
    """The file spans of the body's expressions that are the thread's index along x in its block: ``threadIdx.x``,
    ``block.thread_index().x``, a thread block's ``thread_rank()`` (``cta.thread_rank()``,
    ``cg::this_thread_block().thread_rank()``) and a local declared once, never modified, that holds one of them
    (``int tid = threadIdx.x;``, ``const unsigned t = cta.thread_rank();``, ``auto tid = threadIdx.x;``), casts
    included.

    ``thread_rank()`` is ``threadIdx.x`` for a 1-D block; the block is taken as 1-D when every launch of the kernel
    in the unit has one (and when the unit has no launch: a kernel launched elsewhere is read as the code that
    indexes a 1-D tree with it). Idea source: CUDA C++ Programming Guide, "Cooperative Groups" (``thread_block``:
    ``thread_rank``, ``thread_index``)."""
    return _builtin_spans(src, aff, launches, "threadIdx.x")


def block_dim_x_spans(src: CudaSource, aff: Affine, launches: tuple[LaunchFacts, ...]) -> tuple[tuple[int, int], ...]:
    """The file spans of the body's expressions that are the block's thread count along x: ``blockDim.x``, a thread
    block's ``size()`` or ``num_threads()`` (``block.size()``, a 1-D block as for :func:`thread_x_spans`),
    ``block.dim_threads().x``, and a local declared once, never modified, that holds one of them (``int bs =
    blockDim.x;``), casts included. Idea source: CUDA C++ Programming Guide, "Cooperative Groups" (``thread_block``:
    ``size``, ``num_threads``, ``dim_threads``)."""
    return _builtin_spans(src, aff, launches, "blockDim.x")


def _builtin_spans(src: CudaSource, aff: Affine, launches: tuple[LaunchFacts, ...], builtin: str
                   ) -> tuple[tuple[int, int], ...]:
    """The file spans of the body's expressions whose index form is ``builtin`` (``"threadIdx.x"``,
    ``"blockDim.x"``), the block read as 1-D when every launch in the unit has a 1-D block."""
    one_d = all(la.block and all(d.value == 1 for d in la.block[1:]) for la in launches)
    if one_d and not aff.one_d:
        aff = Affine(aff.env, src.func, aff.loop_vars, True, aff.ceil_div_calls, aff.macros, spell=aff.spell,
                     fields=aff.fields, fold=aff.fold)
    target = sym(builtin)
    names = {n for n, b in _builtin_aliases(src, aff) if b == builtin}
    out: list[tuple[int, int]] = []
    for node in of_type(src.body, _THREAD_X_NODES):
        if node.type == "identifier":
            hit = src.env.t(node) in names
        else:
            hit = aff.expr(node) == target
        if hit:
            out.append((src.base + node.start_byte, src.base + node.end_byte))
    return tuple(out)


def _collectives(src: CudaSource) -> tuple[tuple[str, int], ...]:
    """``(call, line)`` of every :data:`COLLECTIVES` call in the body (templates stripped: ``cg::reduce<..>``)."""
    out: list[tuple[str, int]] = []
    for call in of_type(src.body, "call_expression"):
        fn = src.env.t(call.child_by_field_name("function")).split("<", 1)[0].split("::")[-1].strip()
        if fn in COLLECTIVES:
            out.append((fn, src.line(call)))
    return tuple(out)


def _loops(src: CudaSource, aff: Affine, loop_nodes: list[Node]) -> tuple[LoopFact, ...]:
    out: list[LoopFact] = []
    index = {n.start_byte: k for k, n in enumerate(loop_nodes)}
    for k, ln in enumerate(loop_nodes):
        parent, depth = None, 0
        p = ln.parent
        while p is not None and p != src.body:
            if p.type in LOOP_TYPES and p.start_byte in index:
                if parent is None:
                    parent = index[p.start_byte]
                depth += 1
            p = p.parent
        h = _loop_header(src, aff, ln)
        trip = symbolic_trip_count(h.get("start"), h.get("cmp"), h.get("bound"), h.get("update"), h.get("step"))
        step = h.get("step")
        names = {s.name for s in step.free_symbols} if step is not None else set()
        if ln.type != "for_statement":  # while loops: a variable stepped by blockDim/gridDim in the body
            for a in of_type(ln, "assignment_expression"):
                if src.env.t(a.child_by_field_name("operator")) == "+=":
                    e = aff.expr(a.child_by_field_name("right"))
                    names |= {s.name for s in e.free_symbols} if e is not None else set()
        kind = {"for_statement": "for", "while_statement": "while", "do_statement": "do"}[ln.type]
        pragma, pragma_span = _pragma(src, ln)
        counted = counted_header(ln, src.env.t, src.span) if kind == "for" else ""
        out.append(LoopFact(
            id=k, line=src.line(ln), span=src.span(ln), kind=kind, var=h.get("var"), start=h.get("start"),
            bound=h.get("bound"), step=step, cmp=h.get("cmp"), update=h.get("update"), trip_count=trip,
            trip_value=int(trip) if trip is not None and trip.is_Integer else None, depth=depth, parent=parent,
            accumulators=_accumulators(src, ln, loop_nodes), has_unroll_pragma=(pragma or "").split()[:1] == ["unroll"],
            pragma=pragma, pragma_span=pragma_span,
            strides_threads=any(n.startswith(("blockDim.", "gridDim.")) for n in names),
            grid_stride=any(n.startswith("gridDim.") for n in names),
            init_span=h.get("init_span"), update_span=h.get("update_span"), var_outside=h.get("var_outside", False),
            header_refusal=h.get("refusal"),
            header=None if isinstance(counted, str) else counted, header_problem=counted if isinstance(counted, str) else "",
        ))
    return tuple(out)


def _shared_arrays(src: CudaSource) -> dict[str, Node]:
    """``{name: declarator}`` of the kernel's shared arrays: ``__shared__`` and ``extern __shared__`` declarations
    in the body, and local pointers declared once from a shared-memory accessor
    (:func:`~htam_core.source.analysis.sync.shared_accessor_locals`)."""
    out: dict[str, Node] = {}
    for decl in of_type(src.body, "declaration"):
        quals = {src.env.t(c) for c in decl.children if c.type in ("type_qualifier", "storage_class_specifier")}
        if "__shared__" not in quals:
            continue
        for d in decl.children_by_field_name("declarator"):
            cur = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            while cur is not None and cur.type == "array_declarator":
                cur = cur.child_by_field_name("declarator")
            if cur is not None and cur.type == "identifier":
                out[src.env.t(cur)] = d
    # typed views of dynamic shared memory: `T *sdata = SharedMemory<T>();` (an accessor struct of the unit)
    counts = _declared_names(src)
    for name, d in shared_accessor_locals(src.body, src.root, src.src).items():
        if counts.get(name, 0) == 1 and not src.env.assigned_in(src.func, name):
            out.setdefault(name, d)
    return out


def _shared_dims(src: CudaSource, decl: Node) -> list[sympy.Expr]:
    dims: list[sympy.Expr] = []
    cur: Node | None = decl
    while cur is not None and cur.type == "array_declarator":
        size = cur.child_by_field_name("size")
        v = src.env.value(size, None) if size is not None else None
        dims.insert(0, sympy.Integer(v) if isinstance(v, int) else sym(src.env.t(size) or "?"))
        cur = cur.child_by_field_name("declarator")
    return dims


def _accesses(src: CudaSource, aff: Affine, loop_nodes: list[Node], params: dict[str, str | None],
              shared: dict[str, Node], aliases: dict[str, Base], macro_bases: set[int] | None = None
              ) -> tuple[tuple[Access, ...], set[str]]:
    """The accesses of the kernel body and the pointers whose address escapes; ``macro_bases`` receives the start
    bytes of the macro arguments that are the pointer of an access inside the macro's expansion."""
    env = src.env
    index = {n.start_byte: k for k, n in enumerate(loop_nodes)}
    out: list[Access] = []
    escapes: set[str] = set()
    helpers = vector_helpers(src)
    macros = storage_macros(src)
    for n in walk(src.body):
        fname = env.t(n.child_by_field_name("function")).split("<", 1)[0].split("::")[-1].strip() \
            if n.type == "call_expression" else ""
        if fname in helpers or is_load_builtin(fname):  # load128(p + off), __ldg(p + 1): through the pointer
            out.extend(_pointer_call_access(src, aff, n, helpers.get(fname), params, shared, aliases, index))
            continue
        sub = aff.through_macro(n) if n.type == "call_expression" else None
        if sub is not None:  # `AT(C, r, c, N)`: the accesses its expansion makes, at the call's range
            out.extend(_macro_accesses(src, sub, params, shared, aliases, macros, index, macro_bases))
            continue
        subs: list[Node] = []
        if n.type == "subscript_expression":
            if n.parent is not None and n.parent.type == "subscript_expression" and \
                    n.parent.child_by_field_name("argument") == n:
                continue  # the inner part of a[i][j]
            cur = n
            while cur.type == "subscript_expression":
                subs.insert(0, cur)
                cur = cur.child_by_field_name("argument")  # type: ignore[assignment]
            base = _base_of(src, aff, cur, params, shared, aliases)
            if base is None:
                continue
            idx_nodes = [_subscript_index(s) for s in subs]
            parts = [aff.expr(i) if i is not None else None for i in idx_nodes]
            index_expr: sympy.Expr | None = None
            if None not in parts:
                if len(parts) == 1:
                    index_expr = parts[0]
                elif base[0] in shared:
                    dims = _shared_dims(src, shared[base[0]])
                    if len(dims) == len(parts):
                        index_expr = sympy.Integer(0)
                        for p, d in zip(parts, dims, strict=True):
                            index_expr = index_expr * d + p  # type: ignore[operator]
            if index_expr is not None:
                index_expr = base[1] + index_expr
            index_text = " ][ ".join(env.t(i) for i in idx_nodes if i is not None)
            node = n
        elif n.type == "pointer_expression" and env.t(n).startswith("*"):
            arg = n.child_by_field_name("argument")
            base = _base_of(src, aff, arg, params, shared, aliases) if arg is not None else None
            if base is None:
                continue
            index_expr, index_text, node = base[1], env.t(arg), n
        elif n.type == "call_expression" and is_atomic_builtin(env.t(n.child_by_field_name("function"))):
            # atomicAdd(p, v) / atomicMax(p + i, v): the first argument is read and written (``&p[i]`` is the
            # subscript branch's)
            args = n.child_by_field_name("arguments")
            first = args.named_children[0] if args is not None and args.named_children else None
            if first is None or (unwrap_parens(first).type == "pointer_expression" and not _scalar_address(
                    unwrap_parens(first), env, params)):
                continue
            base = _base_of(src, aff, first, params, shared, aliases)
            if base is None:
                continue
            index_expr, index_text, node = base[1], env.t(first), first
            kind = "readwrite"
            loops, guarded = _loops_around(node, src, index)
            out.append(Access(base[0], "shared" if base[0] in shared else "global", kind,  # type: ignore[arg-type]
                              index_expr, " ".join(index_text.split()), src.line(node), src.span(node),
                              loops, base[2], guarded, text=" ".join(env.t(node).split())))
            continue
        elif _scalar_use(n, env, params):  # total += v, g_flag = 1, x = g_max of a __device__ scalar
            base, index_expr, index_text, node = ("".join(env.t(n).split()), sympy.Integer(0), False, ()), \
                sympy.Integer(0), "", n
        else:
            continue
        kind = _kind(node, env, macros)
        if kind == "escape" and _reads_none(node, env, aliases):
            continue
        if kind == "escape":
            escapes.add(base[0])
            continue
        loops, guarded = _loops_around(node, src, index)
        out.append(Access(base[0], "shared" if base[0] in shared else "global", kind,  # type: ignore[arg-type]
                          index_expr, " ".join(index_text.split()), src.line(node), src.span(node),
                          loops, base[2], guarded, text=" ".join(env.t(node).split())))
    return tuple(out), escapes


def _pointer_call_access(src: CudaSource, aff: Affine, n: Node, helper: str | None, params: dict[str, str | None],
                         shared: dict[str, Node], aliases: dict[str, Base], index: dict[int, int]) -> list[Access]:
    """The access a call ``n`` makes through its first, pointer argument, as one :class:`Access` at the call's range:

    - a 16-byte vector helper of the unit (``helper`` is its kind, ``"read"`` or ``"write"``):
      ``load128(p + off)`` / ``store128(p + off, v)``, a vector access of ``p`` at element offset ``off``;
    - a load intrinsic (``helper`` ``None``): ``__ldg(p)``, ``__ldg(p + 1)``, ``__ldcs(in + i)`` read the element
      the pointer points to, the same access as ``p[0]``, ``p[1]``, ``in[i]``; none for ``__ldg(&p[i])`` (the
      subscript's own access).

    None when the argument is not a pointer of the kernel."""
    args = n.child_by_field_name("arguments")
    first = args.named_children[0] if args is not None and args.named_children else None
    if first is None or (helper is None and unwrap_parens(first).type == "pointer_expression"):
        return []
    base = _base_of(src, aff, first, params, shared, aliases)
    if base is None:
        return []
    loops, guarded = _loops_around(n, src, index)
    return [Access(base[0], "shared" if base[0] in shared else "global", helper or "read",  # type: ignore[arg-type]
                   base[1], " ".join(src.env.t(first).split()), src.line(n), src.span(n), loops,
                   True if helper else base[2], guarded, text=" ".join(src.env.t(n).split()))]


def _macro_accesses(src: CudaSource, sub: MacroExpansion, params: dict[str, str | None], shared: dict[str, Node],
                    aliases: dict[str, Base], macros: frozenset[str], index: dict[int, int],
                    bases: set[int] | None = None) -> list[Access]:
    """The accesses the expansion ``sub`` of a macro call makes through the macro's own text (``p[i]`` with ``p`` a
    parameter of the macro or a pointer the body names, ``A[(r) * K + (c)]``), nested macro calls included;
    an access written in an argument is the argument's own (read where it stands). Each has the outermost call's
    source range, line and loops; its kind is the call's when the access is the whole expansion
    (``AT(C, r, c, N) = v`` writes ``C``)."""
    outer = sub
    while isinstance(outer.parent, MacroExpansion):
        outer = outer.parent
    call = outer.call
    loops, guarded = _loops_around(call, src, index)
    out: list[Access] = []
    for n in walk(sub.top):
        if n.type == "call_expression":
            inner = sub.through_macro(n)
            if inner is not None:
                out.extend(_macro_accesses(src, inner, params, shared, aliases, macros, index, bases))
            continue
        if n.type != "subscript_expression" or (n.parent is not None and n.parent.type == "subscript_expression"
                                                and n.parent.child_by_field_name("argument") == n):
            continue
        base_node, idx = n.child_by_field_name("argument"), _subscript_index(n)
        if base_node is None or idx is None or unwrap_parens(base_node).type == "subscript_expression":
            continue
        base = _expansion_base(src, sub, base_node, params, shared, aliases, bases)
        if base is None:
            continue
        e = sub.expr(idx)
        kind = _expansion_kind(src, sub, n, macros)
        if kind == "escape":
            continue
        text = " ".join(sub.render(idx).split()) if base[1] == 0 else ""
        out.append(Access(base[0], "shared" if base[0] in shared else "global", kind,  # type: ignore[arg-type]
                          None if e is None else base[1] + e, text, src.line(call), src.span(call), loops, base[2],
                          guarded, outer.macro.name))
    return out


def _expansion_base(src: CudaSource, sub: MacroExpansion, node: Node, params: dict[str, str | None],
                    shared: dict[str, Node], aliases: dict[str, Base], bases: set[int] | None = None) -> Base | None:
    """The pointer an expansion's subscript base names: a macro parameter is its argument (read where it stands;
    its start byte goes into ``bases``), a name of the body the kernel's parameter, shared array or pointer-offset
    local of that name."""
    arg = sub.argument(node)
    if arg is not None:
        if isinstance(sub.parent, MacroExpansion):
            return _expansion_base(src, sub.parent, arg, params, shared, aliases, bases)
        found = _base_of(src, sub.parent, arg, params, shared, aliases)
        if found is not None and bases is not None:
            bases.add(arg.start_byte)
        return found
    node = unwrap_parens(node)
    name = sub.env.t(node)
    if node.type != "identifier":
        return None
    if name in aliases:
        p, off, vec, _ = aliases[name]
        return p, off, vec, ()
    return (name, sympy.Integer(0), False, ()) if name in params or name in shared else None


def _expansion_kind(src: CudaSource, sub: MacroExpansion, node: Node, macros: frozenset[str]) -> str:
    """How an access of an expansion is used: inside the body (``(p)[i] = v``), or, when it is the whole body, as
    the call is used where it stands."""
    cur = node
    while cur.parent is not None and cur.parent.type in ("parenthesized_expression", "field_expression"):
        cur = cur.parent
    if (cur.start_byte, cur.end_byte) != (sub.top.start_byte, sub.top.end_byte):
        return _kind(node, sub.env, macros)
    if isinstance(sub.parent, MacroExpansion):
        return _expansion_kind(src, sub.parent, sub.call, macros)
    return _kind(sub.call, src.env, macros)


#: 16-byte vector types a helper may reinterpret its pointer as (a 128-bit load or store).
VECTOR16 = frozenset({"int4", "uint4", "float4", "double2", "longlong2", "ulonglong2", "char16"})


def vector_helpers(src: CudaSource) -> dict[str, str]:
    """``name -> "read" | "write"`` for the device functions of the unit and its local headers that move 16
    bytes through their first pointer parameter: the body reinterpret-casts that parameter to a pointer to a
    16-byte vector type (:data:`VECTOR16`) and reads it (``return T{*reinterpret_cast<const int4*>(p)}``,
    ``__ldcs(reinterpret_cast<const int4*>(p))``) or assigns through it (``*reinterpret_cast<int4*>(p) = v``,
    ``__stcs(reinterpret_cast<int4*>(p), v)``). A call ``f(p + off)`` of one is a vector access of ``p``."""
    out: dict[str, str] = {}
    units = [(src.src, src.root)] + [(h.src, h.root) for h in src.env.headers()]
    for text, root in units:
        def t(n: Node | None, text: bytes = text) -> str:
            return text[n.start_byte:n.end_byte].decode(errors="replace") if n is not None else ""
        for fd in of_type(root, "function_definition"):
            decl = fd.child_by_field_name("declarator")
            while decl is not None and decl.type != "function_declarator":
                decl = decl.child_by_field_name("declarator")
            if decl is None:
                continue
            name = t(decl.child_by_field_name("declarator")).split("<", 1)[0].split("::")[-1].strip()
            plist = decl.child_by_field_name("parameters")
            first = next((c for c in (plist.named_children if plist else []) if c.type == "parameter_declaration"),
                         None)
            pd = first.child_by_field_name("declarator") if first is not None else None
            if pd is None or pd.type != "pointer_declarator":
                continue
            while pd is not None and pd.type != "identifier":
                pd = pd.child_by_field_name("declarator")
            pname = t(pd)
            for cast in of_type(fd.child_by_field_name("body"), "call_expression"):
                fn = cast.child_by_field_name("function")
                if fn is None or fn.type != "template_function" or t(fn.child_by_field_name("name")) != \
                        "reinterpret_cast":
                    continue
                targs = t(fn.child_by_field_name("arguments"))
                args = cast.child_by_field_name("arguments")
                if not any(w in targs.replace("*", " ").replace("<", " ").replace(">", " ").split()
                           for w in VECTOR16) or args is None or t(args).strip("() ") != pname:
                    continue
                up = cast.parent
                while up is not None and up.type == "parenthesized_expression":
                    up = up.parent
                store = "const" not in targs and (
                    (up is not None and up.type == "pointer_expression" and up.parent is not None
                     and up.parent.type == "assignment_expression" and up.parent.child_by_field_name("left") == up)
                    or (up is not None and up.type == "argument_list" and up.parent is not None
                        and t(up.parent.child_by_field_name("function")).startswith("__st")))
                out[name] = "write" if store else "read"
                break
    return out


def _loops_around(node: Node, src: CudaSource, index: dict[int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(loops, guarded)`` of ``node`` (``index``: loop start byte -> id), outermost first: the ids of the loops
    around it (:attr:`Access.loops`), and of those inside whose body a condition decides whether ``node`` runs
    (:attr:`Access.guarded`): on the way up, an ``if`` branch, an ``else``, a ``?:`` branch or the right operand
    of ``&&``/``||`` seen below a loop marks that loop and every loop above it."""
    loops: list[int] = []
    guarded: list[int] = []
    conditional = False
    child, p = node, node.parent
    while p is not None and p != src.body:
        if p.type in ("if_statement", "conditional_expression") and child in (
                p.child_by_field_name("consequence"), p.child_by_field_name("alternative")):
            conditional = True
        elif p.type == "else_clause":
            conditional = True
        elif p.type == "binary_expression" and child == p.child_by_field_name("right") and \
                src.env.t(p.child_by_field_name("operator")) in ("&&", "||"):
            conditional = True
        elif p.start_byte in index and p.type in LOOP_TYPES:
            loops.insert(0, index[p.start_byte])
            if conditional:
                guarded.insert(0, index[p.start_byte])
        child, p = p, p.parent
    return tuple(loops), tuple(guarded)


def _type_param_names(kernel: Kernel) -> set[str]:
    """The names of the kernel's type template parameters (``typename T``, ``class scalar_t = float``)."""
    out: set[str] = set()
    for p in kernel.attributes.get("template_params") or []:
        words = p.split("=")[0].replace("...", " ").split()
        if len(words) >= 2 and words[0] in ("typename", "class"):
            out.add(words[-1])
    return out


def _type_instantiations(src: CudaSource, kernel: Kernel) -> dict[str, TemplateArguments]:
    """What the kernel's launches in the unit bind each type template parameter (``typename T``, ``class T``) to,
    followed through templated host functions and dispatch macros (:func:`template_arguments`), by name."""
    out: dict[str, TemplateArguments] = {}
    for k, p in enumerate(kernel.attributes.get("template_params") or []):
        words = p.split("=")[0].replace("...", " ").split()
        if len(words) >= 2 and words[0] in ("typename", "class"):
            out[words[-1]] = template_arguments(src.root, src.src, kernel.name, k)
    return out


def _type_template_bindings(src: CudaSource, kernel: Kernel) -> dict[str, str]:
    """The kernel's type template parameters that its launches in the unit bind to one type
    (:func:`_type_instantiations`; ``add<float>(...)`` calling a host that launches ``add_kernel<T, kBlock>``):
    ``{"T": "float"}``. A parameter some launch or caller leaves to deduction, or that two instantiations bind
    differently, is left out."""
    return {n: next(iter(f.texts)) for n, f in _type_instantiations(src, kernel).items()
            if f.complete and len(f.texts) == 1}


def _pointer_facts(src: CudaSource, kernel: Kernel, accesses: tuple[Access, ...], escapes: set[str],
                   aliases: dict[str, Base], macro_bases: set[int] | None = None) -> tuple[PointerFacts, ...]:
    env = src.env
    out = []
    qual_macros = qualifier_macros(src.src)
    alias_of = {a: v[0] for a, v in aliases.items()}
    type_args = _type_template_bindings(src, kernel)
    tnames = _type_param_names(kernel)
    for p in kernel.params:
        if not p.is_pointer:
            continue
        reads = tuple(a for a in accesses if a.pointer == p.name and a.kind in ("read", "readwrite"))
        writes = tuple(a for a in accesses if a.pointer == p.name and a.kind in ("write", "readwrite"))
        names = {p.name} | {a for a, q in alias_of.items() if q == p.name}
        uses = [n for n in of_type(src.body, ("identifier", "field_expression"))
                if (env.t(n) if n.type == "identifier" else "".join(env.t(n).split())) in names and n.parent is not None
                and n.parent.type not in ("pointer_declarator", "init_declarator", "declaration")
                or (n.parent is not None and n.parent.type == "init_declarator"
                    and n.parent.child_by_field_name("value") == n)]
        covered = sum(1 for u in uses if _null_test(u, env) or u.start_byte in (macro_bases or ())
                      or _read_or_written(u, env))
        mode = "unused" if not uses else ("readwrite" if reads and writes else "write" if writes else "read")
        if p.name in escapes or covered < len(uses):
            mode = "unknown"
        # the pointee type without qualifiers, also those spelled through a macro (RESTRICT)
        elem = [w for w in (p.type or "").replace("*", " ").split() if w not in QUALIFIERS and w not in qual_macros]
        written = " ".join(elem) or None
        bound = type_args.get(written) if written else None  # a type template parameter bound at every launch
        out.append(PointerFacts(p.name, mode, reads, writes, written,  # type: ignore[arg-type]
                                resolve_type(env, bound or written) if written else None,
                                bool(written) and written in tnames, volatile_pointee(_param_text(src, p), qual_macros)))
    return tuple(out)


def _param_text(src: CudaSource, p: Param) -> str:
    """Parameter ``p``'s declaration as written in ``src``, from the ``(`` or ``,`` before it (a qualifier macro
    shorter than the keyword it stands for, ``VOL`` for ``volatile``, is blank in its parsed type and left out of
    its span), else its parsed type."""
    if p.span is None or not 0 <= p.span.start - src.base < p.span.end - src.base <= len(src.src):
        return p.type or ""
    start, end = p.span.start - src.base, p.span.end - src.base
    begin = max(src.src.rfind(b"(", 0, start), src.src.rfind(b",", 0, start)) + 1
    return src.src[begin:end].decode("utf-8", "replace")


def volatile_pointee(type_text: str, qual_macros: dict[str, str]) -> bool:
    """Whether a single-level pointer parameter's type ``type_text`` (``"volatile unsigned int *"``) points to
    ``volatile`` data: the keyword, or a qualifier macro of ``qual_macros`` (name -> expansion, from
    :func:`~htam_core.source.preproc.qualifier_macros`) that holds it, before the ``*``; a ``volatile`` after it
    qualifies the pointer variable itself (``int *volatile p``), not the data it points to."""
    words = type_text.split("*", 1)[0].split()
    return any(w == "volatile" or "volatile" in qual_macros.get(w, "").split() for w in words)


_NAMED_CASTS = ("reinterpret_cast", "static_cast")


def _read_or_written(use: Node, env: ConstEnv) -> bool:
    """Whether the pointer use ``use`` (an identifier) is an access the read/write sets see: indexed or
    dereferenced (through parentheses, arithmetic and casts), an alias's initializer, or an atomic/load builtin's
    argument. A named cast to a pointer to non-``const`` (``reinterpret_cast<float4 *>(p)``) counts only where it
    is written through: read through, the pointer could not be made ``const`` (the cast would no longer compile),
    so it is left an unread use. A cast to a pointer to ``const`` (``reinterpret_cast<const float4 *>(a)[i]``, the
    form the float4 step writes) is a read of the pointer, not an escape."""
    q, mutable_cast = use.parent, False
    while q is not None and q.type in ("parenthesized_expression", "cast_expression", "binary_expression",
                                       "argument_list", "template_function", "call_expression"):
        if q.type == "call_expression":
            fn = q.child_by_field_name("function")
            name = env.t(fn).split("<", 1)[0].strip()
            if not name.endswith("_cast"):
                break
            if name in _NAMED_CASTS and "const" not in env.t(fn).split("<", 1)[-1]:
                mutable_cast = True
        q = q.parent
    if q is not None and q.type in ("subscript_expression", "pointer_expression", "init_declarator"):
        return not mutable_cast or (q.type != "init_declarator" and _kind(q, env) in ("write", "readwrite"))
    return q is not None and q.type == "call_expression" and (
        is_atomic_builtin(fn := env.t(q.child_by_field_name("function"))) or is_load_builtin(fn))


def _thread_indices(src: CudaSource, aff: Affine) -> tuple[ThreadIndex, ...]:
    env = src.env
    out = []
    for decl in of_type(src.body, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            if d.type != "init_declarator":
                continue
            dn, v = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if dn is None or dn.type != "identifier" or v is None:
                continue
            e = aff.expr(v)
            if e is None:
                continue
            names = {s.name for s in e.free_symbols}
            tdims = tuple(dd for dd in DIMS if f"threadIdx.{dd}" in names)
            if not tdims and not any(n.startswith("blockIdx.") for n in names):
                continue
            is_global = False
            if len(tdims) == 1:
                dd = tdims[0]
                bs = stride_of(e, f"blockIdx.{dd}")
                is_global = stride_of(e, f"threadIdx.{dd}") == 1 and bs is not None and bs != 0 and not any(
                    n.startswith(("threadIdx.", "blockIdx.")) and not n.endswith(dd) for n in names)
            typ = " ".join(env.t(decl.child_by_field_name("type")).split())
            out.append(ThreadIndex(env.t(dn), e, tdims, is_global, typ, src.span(decl), src.line(decl)))
    return tuple(out)


def _dims(src: CudaSource, expr: Node | None, host: Node | None, host_aff: Affine | None) -> tuple[Dim, ...]:
    if expr is None:
        return ()
    out = []
    values, props = host_device_values(src.env, host)
    for e in dims_of(src.env, expr, host):
        c = src.env.const(e, host)
        form = host_aff.expr(e) if host_aff is not None else None
        device = tuple(sorted(set(device_quantities(form, values, props))
                              | set(device_quantities_of_node(src.env, e, values, props))))
        out.append(Dim(" ".join(src.env.t(e).split()), c.value if c is not None and not device else None,
                       src.span(e), form, device))
    return tuple(out)


def _launch(src: CudaSource, lc, bindings: dict[str, int]) -> LaunchFacts:  # noqa: ANN001 - LaunchCall
    cfg = lc.config
    smem: int | None = 0
    if len(cfg) > 2:
        c = src.env.const(cfg[2], lc.host)
        smem = c.value if c is not None else None
    targs: tuple[str, ...] = ()
    if lc.fn.type == "template_function":
        args = lc.fn.child_by_field_name("arguments")
        targs = tuple(" ".join(src.env.t(a).split()) for a in (args.named_children if args is not None else []))
    host = None
    if lc.host is not None and lc.host.type == "function_definition":
        decl = lc.host.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        name = decl.child_by_field_name("declarator") if decl is not None else None
        host = src.env.t(name) or None
    host_aff = Affine(src.env, lc.host, set(), ceil_div_calls=True, reaching=True) if lc.host is not None else None
    arg_exprs = tuple(host_aff.expr(a) if host_aff is not None else None
                      for a in launch_arguments(lc.call, lc.kernel_args))
    tnodes = lc.fn.child_by_field_name("arguments") if lc.fn.type == "template_function" else None
    texprs = tuple(host_aff.expr(a.named_children[0] if a.type == "type_descriptor" and a.named_child_count == 1
                                 else a) if host_aff is not None else None
                   for a in (tnodes.named_children if tnodes is not None else []) if a.type != "comment")
    return LaunchFacts(src.line(lc.call), src.span(lc.call), host,
                       _dims(src, cfg[0] if cfg else None, lc.host, host_aff),
                       _dims(src, cfg[1] if len(cfg) > 1 else None, lc.host, host_aff), smem, targs,
                       tuple(sorted(bindings.items())), arg_exprs=arg_exprs, template_exprs=texprs)


def _constants(src: CudaSource, env: ConstEnv) -> tuple[tuple[str, int], ...]:
    out: dict[str, int] = {}
    for n in of_type(src.func, ("identifier", "type_identifier")):
        name = env.t(n)
        if name in out or name in _BUILTIN_OBJS:
            continue
        c = env.const_name(name, src.func, before=n.start_byte)
        if c is not None:
            out[name] = c.value
    return tuple(sorted(out.items()))
