"""Shared-memory tiling transforms: naive matmul (``B[k * N + col]``, or ``B[col * K + k]`` for a transposed B;
``A[row * K + k]``, or ``A[k * M + row]`` for a transposed A: each tile loaded along its operand's contiguous axis)
-> tiled matmul (``cuda.smem_tiling_matmul``), and naive
transpose -> transpose through a padded 32x33 tile (``cuda.transpose_smem_tile``). The transpose is read off the
analysis layer: the samples' unguarded loop over the rows of a tile (``for (j = 0; j < TILE_DIM; j += BLOCK_ROWS)``,
:meth:`~htam_core.source.analysis.facts.KernelFacts.transpose_loops`) keeps its header and block and gets a
``[TILE_DIM][TILE_DIM + 1]`` tile when the launch gives that block; any other element-copy transpose
(:attr:`~htam_core.source.analysis.facts.KernelFacts.transposes`: one element per thread or a loop over rows, any
bounds check, any spelling of the indices) gets a body whose tile loops are correct for any block shape and grid
(the launch-independent form, said so in the title when no constant block is in reach), with the launch's block
kept; and before it, when every launch's block is 32x8 or its block argument is the launch's own (changed to 32x8
in the launch's file, wherever it is), the textbook coarsened tile: 32x8 threads, each moving 4 rows of a tile.

The matmul is recognized structurally and anything else refused; its operands come
from the analysis layer's affine indices, so row pointers (``const float *w = weight + o * C;`` then ``w[i]``,
spelled out at the parameter in the rewrite), the row on ``threadIdx.x`` and the column on ``threadIdx.y`` (the
tiles put the column on ``threadIdx.x``), and an accumulator starting from a bias (kept under the bounds check)
all match. The k loop body need not be a product: any body whose only global reads are A at (row, k) and B at
(column, k), and which only declares locals and updates accumulators (a squared or L1 distance, a max-plus
product, ``acc += expf(a * b)``), runs as written on the tiles, its inner loop bounded by K (:func:`k_body`).
Idea sources:
CUDA C++ Programming Guide, "Shared Memory" (tiled matrix multiplication); NVIDIA developer blog,
"An Efficient Matrix Transpose in CUDA C/C++" (Harris, 2013), padding against bank conflicts.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.block_load import PURE_MATH
from htam_core.source.analysis.facts import PointerAlias, Transpose, stride_of, sym
from htam_core.source.analysis.forms import builtin_field
from htam_core.source.analysis.guards import closing_bounds_guard, describe_form
from htam_core.source.analysis.launch import launch_calls
from htam_core.source.analysis.macros import ExpandedIndex
from htam_core.source.analysis.matmul_operands import operand_layout
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.stencil import c_condition, c_text
from htam_core.source.analysis.syntax import side_effect_free
from htam_core.source.analysis.transpose import LOADED, grid_sides, grid_strides, stride_text, tile_coverage
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    launch_dims_edit,
    param_names,
    references,
    statement_list,
    strip_casts,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS, bounds_edit, retune_block
from htam_core.transforms.cuda_panel_tiling import CudaSmemPanelTiling
from htam_core.transforms.registry import compose_after, register
from htam_core.types.profile import Profile


@dataclass
class IndexVar:
    """A ``v = blockIdx.d * S + threadIdx.d`` declaration."""

    decl: Node
    name: str
    dim: str
    stride: int | None


def index_vars(unit: CudaUnit) -> list[IndexVar]:
    """Top-level declarations of global thread indices, with their block stride when constant.

    Read from the analysis layer's thread-index facts (:attr:`KernelFacts.thread_indices`, the affine form of each
    local over the builtins), so every spelling counts: ``blockIdx.y * blockDim.y + threadIdx.y``, through locals
    (``int by = blockIdx.y; int ty = threadIdx.y; int row = by * BLOCK_SIZE + ty;`` with ``BLOCK_SIZE`` a template
    argument bound at the launch), or through a cooperative-groups block (``block.thread_index().y``). The stride
    is ``None`` for ``blockDim.d``, its value when constant, else ``-1``."""
    top = {(unit.file_byte(s), s.end_byte + unit.base): s for s in statement_list(unit.body)}
    out = []
    for t in unit.facts.thread_indices:
        decl = top.get(t.span)
        if decl is None or not t.is_global or len(t.dims) != 1:
            continue
        d = t.dims[0]
        stride = stride_of(t.expr, f"blockIdx.{d}")
        if stride == sym(f"blockDim.{d}"):
            c = None
        elif stride is not None and stride.is_Integer:
            c = int(stride)
        else:
            c = -1
        out.append(IndexVar(decl, t.name, d, c))
    return out


def _subscript(unit: CudaUnit, node: Node) -> tuple[str, Node] | None:
    node = strip_casts(node)
    if not syn.is_subscript(node):
        return None
    idx = node.child_by_field_name("indices")
    inner = idx.named_children[0] if idx is not None and idx.named_children else None
    if inner is None:
        return None
    return unit.t(node.child_by_field_name("argument")), inner


def _load(unit: CudaUnit, node: Node) -> tuple[str, Node | ExpandedIndex, Node] | None:
    """``(name, index, load node)`` of a product operand: a subscript as written (:func:`_subscript`), or a read
    through a macro call (``A_AT(row, k)``): the analysis layer's access at the call, its pointer and its index as
    the macro expands it (a rewrite replaces the whole call)."""
    sub = _subscript(unit, node)
    if sub is not None:
        return sub[0], sub[1], strip_casts(node)
    node = strip_casts(node)
    span = (unit.file_byte(node), node.end_byte + unit.base)
    acc = [a for a in unit.facts.accesses if a.span == span and a.macro]
    if len(acc) != 1 or acc[0].kind != "read" or not acc[0].index_text:
        return None
    return acc[0].pointer, ExpandedIndex(acc[0].index_text), node


#: An operand's index as written: the added (``+1``) or subtracted (``-1``) expressions, the alias offsets of a
#: pointer-offset local first (``w = weight + o * C; w[i]`` is ``(o * C) + (i)``), the subscript last; an index
#: read through a macro call is its expansion (:class:`~htam_core.source.analysis.macros.ExpandedIndex`).
Parts = list[tuple[Node | ExpandedIndex, int]]


def _node_at(unit: CudaUnit, start: int, end: int) -> Node | None:
    """The named node covering exactly the file bytes ``start:end``, else ``None``."""
    n = unit.root.named_descendant_for_byte_range(start - unit.base, end - unit.base)
    return n if n is not None and unit.file_byte(n) == start and n.end_byte + unit.base == end else None


def _operand(unit: CudaUnit, name: str, idx: Node | ExpandedIndex) -> tuple[str, Parts, PointerAlias | None]:
    """``(pointer to index, index parts, alias)`` of the load ``name[idx]``: a pointer-offset local whose offset
    depends on the thread (:class:`~htam_core.source.analysis.facts.PointerAlias`, from the analysis layer) is
    spelled as its parameter at the alias offset plus ``idx``, so that a rewrite can move the row and column;
    anything else is ``name`` at ``idx``."""
    alias = unit.facts.pointer_alias(name)
    if alias is None or alias.vector or not alias.depends_on_thread() or isinstance(idx, ExpandedIndex):
        return name, [(idx, 1)], None
    parts = [(_node_at(unit, s, e), sign) for s, e, sign in alias.parts]
    if any(n is None for n, _ in parts):
        return name, [(idx, 1)], None
    return alias.pointer, [*parts, (idx, 1)], alias  # type: ignore[list-item]


def substitute(unit: CudaUnit, node: Node | ExpandedIndex, mapping: dict[str, str], paren: bool = True) -> str:
    """``node``'s text with every identifier in ``mapping`` replaced by its replacement (in parentheses when
    ``paren``)."""
    if isinstance(node, ExpandedIndex):
        return node.rename(mapping, paren)
    text = bytearray(unit.src[node.start_byte : node.end_byte])
    hits = [n for n in syn.identifiers(node) if unit.t(n) in mapping]
    for n in sorted(hits, key=lambda n: -n.start_byte):
        rep = f"({mapping[unit.t(n)]})" if paren else mapping[unit.t(n)]
        text[n.start_byte - node.start_byte : n.end_byte - node.start_byte] = rep.encode()
    return text.decode()


def operand_index(unit: CudaUnit, parts: Parts, mapping: dict[str, str], paren: bool = True) -> str:
    """The C index of an operand (:data:`Parts`) with the identifiers of ``mapping`` replaced
    (:func:`substitute`): the subscript alone as written, or ``(offset) + (subscript)`` through an alias."""
    texts = [substitute(unit, n, mapping, paren) for n, _ in parts]
    if len(parts) == 1:
        return texts[0]
    out = f"({texts[0]})" if parts[0][1] > 0 else f"-({texts[0]})"
    for (_, sign), t in zip(parts[1:], texts[1:], strict=True):
        out += f" {'+' if sign > 0 else '-'} ({t})"
    return out


def constant_value(unit: CudaUnit, la: Launch, text: str) -> int | None:
    """The value at launch ``la`` of the kernel's compile-time constant size ``text`` (a ``#define``, a
    ``constexpr`` or ``const`` at file scope, a template parameter bound at that launch), ``None`` when it is
    not one."""
    bound = next((dict(lf.bindings) for lf in unit.facts.launches
                  if lf.span == (unit.file_byte(la.call), la.call.end_byte + unit.base)), {})
    if text in bound:
        return bound[text]
    value = unit.env.value_of_text(text, unit.body.end_byte - 1)  # the kernel's own constants included
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def constant_size(unit: CudaUnit, la: Launch, text: str) -> str | None:
    """The host spelling at launch ``la`` of the kernel's compile-time constant size ``text``
    (:func:`constant_value`): the name itself where it means the same value at the launch (a ``#define``, a
    constant at file scope), else the value (a template parameter, a constant local to the kernel); ``None`` when
    ``text`` is not a compile-time constant."""
    value = constant_value(unit, la, text)
    if value is None:
        return None
    return text if unit.env.value_of_text(text, la.call.start_byte) == value else str(value)


def launch_sizes(unit: CudaUnit, m: dict) -> list[tuple[str, str]] | str:
    """Per launch of a matched matmul (:func:`match_naive_matmul`), the host expressions passed as the row bound
    M and the column bound N (to size a new grid from), or why they cannot be read. A bound that is a compile-time
    constant instead of a parameter is spelled at each launch by :func:`constant_size`."""
    idx = {}
    names = param_names(unit)
    for v in (m["row"], m["col"]):
        bound = m["bounds"][v.name]
        if bound in names:
            idx[v.name] = names.index(bound)
        elif any(constant_size(unit, la, bound) is None for la in unit.launches):
            return (f"the bound {bound} of {v.name} is neither a kernel parameter nor a compile-time constant; "
                    "the grid cannot be sized from it")
    out = []
    for la in unit.launches:
        if la.block is None:
            return f"the launch on line {la.site.line} has no block argument"
        args = la.site.args
        if max(idx.values(), default=-1) >= len(args):
            return f"the launch on line {la.site.line} passes fewer arguments than {unit.kernel.name} takes"
        sizes = [args[idx[v.name]].strip() if v.name in idx else
                 constant_size(unit, la, m["bounds"][v.name]) or "" for v in (m["row"], m["col"])]
        if not all(side_effect_free(s) for s in sizes):
            return (f"the size arguments {', '.join(sizes)} on line {la.site.line} call or assign; the grid "
                    "would evaluate them twice")
        out.append((sizes[0], sizes[1]))
    return out


def _element_loop(body: list[str], threads: int | None) -> list[str]:
    """The lines of a loop over the 1024 elements of a 32x32 tile with ``body`` (which reads ``htam_e``), the
    block's threads striding it: with ``threads`` (a compile-time thread count dividing 1024 into several elements
    per thread), a fully unrolled path for a block of that many threads beside the general loop; else the general
    loop alone. A block of 1024 threads moves one element per thread: there is nothing to unroll, and the second
    path's registers cost a 1024-thread block its occupancy (measured on an H100: the family suite's 32x32 transpose
    at 0.807 ms with the extra path, 0.345 ms without)."""
    general = ["for (int htam_e = htam_tid; htam_e < 32 * 32; htam_e += htam_threads) {",
               *("    " + ln for ln in body), "}"]
    if not threads or 1024 % threads or threads == 1024:
        return general
    return [f"if (htam_threads == {threads}) {{  // the launch's block: {1024 // threads} elements per thread, unrolled",
            "    #pragma unroll",
            f"    for (int htam_k = 0; htam_k < {1024 // threads}; ++htam_k) {{",
            f"        const int htam_e = htam_tid + htam_k * {threads};",
            *("        " + ln for ln in body), "    }", "} else {",
            *("    " + ln for ln in general), "}"]


def _block_shape(unit: CudaUnit) -> tuple[int, int] | str:
    """The ``(x, y)`` threads of every launch's constant 2-D block (``z`` must be 1), or why there is none."""
    sizes = set()
    for la in unit.launches:
        dims = unit.block_dims(la)
        if not dims or len(dims) not in (2, 3) or any(d.const is None for d in dims):
            return f"the launch on line {la.site.line} does not use a constant 2-D block"
        if len(dims) == 3 and dims[2].const.value != 1:  # type: ignore[union-attr]
            return f"the block on line {la.site.line} has {dims[2].const.value} threads in z; the tiles need 1"  # type: ignore[union-attr]
        sizes.add((dims[0].const.value, dims[1].const.value))  # type: ignore[union-attr]
    if len(sizes) != 1:
        return "the launches use different block shapes"
    return sizes.pop()


def _role(unit: CudaUnit, node: Node, kname: str, row: IndexVar, col: IndexVar, parts: Parts
          ) -> tuple[str, str] | None:
    """``(layout, pointer)``: how the load ``node`` (a subscript) enters a matmul over ``kname``, as the analysis
    layer reads it off the load's affine index (:func:`~htam_core.source.analysis.matmul_operands.operand_layout`):
    ``"A"`` for ``A[row * K + k]``, ``"AT"`` for ``A[k * M + row]``, ``"NN"`` for ``B[k * N + col]``, ``"NT"`` for
    ``B[col * K + k]``, each with an optional batch offset (``b * M * K`` with ``b = blockIdx.z``). ``None`` for
    anything else, also when the index does not name the output variable and k (the rewrite substitutes them)."""
    span = (unit.file_byte(node), node.end_byte + unit.base)
    acc = next((a for a in unit.facts.accesses if a.span == span and a.kind == "read"), None)
    layout = None if acc is None else operand_layout(acc, kname, row.dim, col.dim)
    if acc is None or layout is None:
        return None
    names = {x for p, _ in parts for x in (p.names() if isinstance(p, ExpandedIndex) else
                                            {unit.t(n) for n in syn.identifiers(p)})}
    return (layout, acc.pointer) if {row.name if layout in ("A", "AT") else col.name, kname} <= names else None


def _operands(unit: CudaUnit, ivs: list[IndexVar], loop: Node, kname: str,
              subs: list[tuple[str, Node | ExpandedIndex, Node]],
              bounds: dict[str, Node], col_on_x: bool = False) -> tuple | str:
    """``(A operand, B operand, A pointer, B pointer, row, col, B's layout, A load node, A's layout)`` of the
    product's two loads (operands as :func:`_operand` gives them; layouts as :func:`_role` names them), NN before
    NT, or why they are not matmul operands. Two loads that
    fit either way round (both NT) take the written order, or with ``col_on_x`` the order whose column is on
    ``threadIdx.x`` (the output's store stays coalesced: ``fabsf(Q[col * d + k] - P[row * d + k])``)."""
    found = None
    along = {d for a in unit.facts.accesses if a.kind == "write" and a.space == "global" for d in "xyz"
             if a.stride(f"threadIdx.{d}") == 1}
    for (a_name, a_idx, a_node), (b_name, b_idx, b_node) in (subs, subs[::-1]):  # the written order first
        a_op, b_op = _operand(unit, a_name, a_idx), _operand(unit, b_name, b_idx)
        for r in ivs:
            for c in ivs:
                if r is c or r.dim == c.dim or r.name not in bounds or c.name not in bounds:
                    continue
                ra = _role(unit, a_node, kname, r, c, a_op[1])
                rb = _role(unit, b_node, kname, r, c, b_op[1])
                if ra is None or rb is None or ra[0] not in ("A", "AT") or rb[0] not in ("NN", "NT"):
                    continue
                cand = (a_op, b_op, ra[1], rb[1], r, c, rb[0], a_node, ra[0])
                if found is None or _better(cand, found, col_on_x, along):
                    found = cand
    if found is None:
        return ("the loads are not A[row * K + k] (or A[k * M + row]) and B[k * N + col] (or B[col * K + k]), "
                "each with an optional batch offset, with row and col bounded by the check")
    return found


def _better(new: tuple, old: tuple, col_on_x: bool, along: set[str]) -> bool:
    """Whether the operand reading ``new`` (:func:`_operands`' tuple) is taken over ``old``: between a transposed
    A and the reading that swaps the operands (``A[k * M + row] * B[col * K + k]`` is also ``B[col * K + k]`` as A
    times ``A[k * M + row]`` as an NN B, the output's row and column swapped), the one whose column is the
    output's contiguous coordinate (its thread dimension in ``along``: the dimensions along which a global store
    of the kernel moves by one element; the tiles put the column on ``threadIdx.x``, so the store is coalesced),
    else the untransposed A; otherwise NN before NT, and with ``col_on_x`` the column on ``threadIdx.x`` among
    equal layouts."""
    if (new[8] == "AT") != (old[8] == "AT"):
        if (new[5].dim in along) != (old[5].dim in along):
            return new[5].dim in along
        return new[8] == "A"
    return (old[6] == "NT" and new[6] == "NN") or (
        col_on_x and new[6] == old[6] and old[5].dim != "x" and new[5].dim == "x")


#: The calls a general k body (:func:`k_body`) may make: math without effect (the analysis layer's
#: :data:`~htam_core.source.analysis.block_load.PURE_MATH` and a few more), which every thread of a tile may run.
BODY_MATH = PURE_MATH | frozenset({"fmaf", "fma", "powf", "pow", "rsqrtf", "exp2f", "log2f", "sinf", "cosf",
                                   "__fmul_rn", "__fadd_rn", "__fsub_rn", "__fmaf_rn", "fdimf", "fdim"})


@dataclass
class KBody:
    """A k loop body the shared-memory tiling can run on tiles (:func:`k_body`).

    Attributes:
        accs: the accumulators it updates (declared before the loop), the first one the kernel's ``acc``.
        loads: its two global loads, ``(name, index, load node)`` as :func:`_load` gives them, in written order.
        span: the node the loads' pointer aliases may be used in (the product, or the whole body).
        general: not the plain ``acc += A[...] * B[...]``: the body runs as written, bounded by K.
        stmts: the body's statements.
    """

    accs: list[str]
    loads: list[tuple[str, Node | ExpandedIndex, Node]]
    span: Node
    general: bool
    stmts: list[Node]


def k_body(unit: CudaUnit, lb: Node, kname: str) -> KBody | str:
    """The k loop body ``lb`` (loop variable ``kname``) as a :class:`KBody`, or why the tiles cannot run it: the
    plain product ``acc += A[...] * B[...]``, or any body whose statements only declare locals and update
    accumulators declared before the loop, calling only math without effect (:data:`BODY_MATH`), whose only
    memory accesses are two global reads (one element each, the analysis layer's accesses) and which reads k only
    in them: ``float diff = P[i * d + k] - Q[j * d + k]; acc += diff * diff;``, ``acc += fabsf(a - b)``,
    ``acc = fmaxf(acc, a + b)``. Idea source: the distance and semiring kernels that reuse the GEMM tiling (Volkov
    and Demmel, "Benchmarking GPUs to tune dense linear algebra", 2008; pairwise distances as in FAISS/cuML)."""
    inner = statement_list(lb) if syn.is_block(lb) else [lb]
    plain = _plain_product(unit, inner)
    return plain if plain is not None else _general_body(unit, lb, inner, kname)


def _plain_product(unit: CudaUnit, inner: list[Node]) -> KBody | None:
    """The body ``inner`` as the plain ``acc += A[...] * B[...]`` (two loads, :func:`_load`), else ``None``."""
    if len(inner) != 1 or not syn.is_expression_statement(inner[0]) or not inner[0].named_children:
        return None  # an empty statement (`;`) is no product
    asg = inner[0].named_children[0]
    if not syn.is_assignment(asg) or unit.t(asg.child_by_field_name("operator")) != "+=":
        return None
    prod = strip_casts(asg.child_by_field_name("right"))
    if not syn.is_binary(prod) or unit.t(prod.child_by_field_name("operator")) != "*":
        return None
    subs = [_load(unit, prod.child_by_field_name(f)) for f in ("left", "right")]
    if any(s is None for s in subs):
        return None
    return KBody([unit.t(asg.child_by_field_name("left"))], subs, prod, False, inner)  # type: ignore[arg-type]


def _body_accumulators(unit: CudaUnit, lb: Node, inner: list[Node]) -> list[str] | str:
    """The names the k body ``lb`` (statements ``inner``) updates that it does not declare, or why it is not
    local declarations and updates of names: one per statement, no write through memory, calls of
    :data:`BODY_MATH` (or casts to a type the kernel names) only."""
    local: set[str] = set()
    for s in inner:
        if syn.is_declaration(s):
            for d in s.children_by_field_name("declarator"):
                d = d.child_by_field_name("declarator") if syn.is_init_declarator(d) else d
                local |= {unit.t(n) for n in syn.identifiers(d)[:1]}
        elif not (syn.is_expression_statement(s) and s.named_children and syn.is_write(s.named_children[0])):
            return f"`{' '.join(unit.t(s).split())}` in the k loop is not a local declaration or an accumulator update"
    types = {unit.t(t) for t in syn.type_names(unit.body)}
    for c in syn.calls(lb):
        fn = unit.t(c.child_by_field_name("function"))
        if fn not in BODY_MATH and fn not in types:
            return f"the k loop calls {fn}, which the tiles would run in every thread, also outside the bounds"
    accs: list[str] = []
    for w in syn.writes(lb):
        target = w.child_by_field_name("left") or w.child_by_field_name("argument")
        if not syn.is_identifier(target):
            return f"the k loop writes `{unit.t(target)}`, not a local or an accumulator"
        if unit.t(target) in _pointer_names(unit):
            return f"the k loop moves the pointer {unit.t(target)}; the tiles need A and B indexed by k"
        if unit.t(target) not in local and unit.t(target) not in accs:
            accs.append(unit.t(target))
    return accs or "the k loop updates no accumulator"


def _tile_types(unit: CudaUnit, a_ptr: str, b_ptr: str) -> tuple[str, str] | None:
    """The element types of the A and B tiles of a general k body: the pointees of ``a_ptr`` and ``b_ptr``
    (qualifiers dropped), so that the body computes in the types it read (a ``double`` accumulator of ``float``
    differences keeps the float subtraction); ``None`` when one is unknown."""
    out = []
    for ptr in (a_ptr, b_ptr):
        pf = unit.facts.pointer(ptr)
        t = " ".join(w for w in (pf.element_type or "").split() if w not in ("const", "volatile")) if pf else ""
        if not t:
            return None
        out.append(t)
    return out[0], out[1]


def _pointer_names(unit: CudaUnit) -> set[str]:
    """The names the kernel declares as pointers: its pointer parameters and pointer locals
    (``const float *a = A + row * K;``)."""
    out = {p.name for p in unit.kernel.params if unit.facts.pointer(p.name) is not None}
    for d in syn.declarations(unit.body):
        for v in d.children_by_field_name("declarator"):
            v = v.child_by_field_name("declarator") if syn.is_init_declarator(v) else v
            if syn.is_pointer_declarator(v):
                out |= {unit.t(n) for n in syn.identifiers(v)[:1]}
    return out


def _general_body(unit: CudaUnit, lb: Node, inner: list[Node], kname: str) -> KBody | str:
    """The k body ``lb`` as a general :class:`KBody` (see :func:`k_body`), or why not."""
    accs = _body_accumulators(unit, lb, inner)
    if isinstance(accs, str):
        return accs
    if kname in accs:
        return f"the k loop body writes {kname}"
    lo, hi = unit.file_byte(lb), lb.end_byte + unit.base
    inside = [a for a in unit.facts.accesses if lo <= a.span[0] < hi]
    if len(inside) != 2 or any(a.kind != "read" or a.space != "global" or a.vector for a in inside):
        return ("the k loop body does not read exactly two global arrays (A at row and k, B at column and k) "
                "with no other memory access")
    loads = [_load(unit, n) if (n := _node_at(unit, *a.span)) is not None else None for a in inside]
    if any(ld is None for ld in loads):
        return "a load of the k loop body is not a subscript (nor a macro's)"
    spans = [(ld[2].start_byte, ld[2].end_byte) for ld in loads]  # type: ignore[index]
    if any(not any(s <= r.start_byte < e for s, e in spans) for r in references(lb, unit.src, kname)):
        return f"the k loop body reads {kname} outside its two loads; the tiles count {kname} from 0"
    return KBody(accs, loads, lb, True, inner)  # type: ignore[arg-type]


def _consumed_aliases(unit: CudaUnit, aliases: list[PointerAlias], prod: Node) -> list[Node]:
    """The declaration statements of ``aliases`` (spelled out in the operands) that nothing else reads: no use of
    the name outside its own declaration and the product ``prod``; those are dropped from the rewrite."""
    out = []
    for al in aliases:
        stmt = next((d for d in syn.declarations(unit.body) if (unit.file_byte(d), d.end_byte + unit.base)
                     == al.span), None)
        if stmt is None or len(stmt.children_by_field_name("declarator")) != 1:
            continue
        uses = [n for n in references(unit.body, unit.src, al.name)
                if not (stmt.start_byte <= n.start_byte < stmt.end_byte or prod.start_byte <= n.start_byte
                        < prod.end_byte)]
        if not uses:
            out.append(stmt)
    return out


def match_naive_matmul(unit: CudaUnit) -> dict | str:
    """Match the naive matmul ``if (row < M && col < N) { acc = init; for (k = 0; k < K; ++k) acc += A[row*K+k] *
    B[k*N+col]; rest }`` at the end of the kernel body, or say why it does not match.

    Returns a dict with the index variables ``row``/``col`` (:class:`IndexVar`), the ``guard`` statement, the
    ``bounds`` (``{var: bound text}``), the k loop variable ``kname`` and bound ``K``, the operand names and index
    parts ``A``/``A_parts``/``B``/``B_parts`` (:func:`operand_index` spells them; a load through a pointer-offset
    local, ``w = weight + o * C; w[i]``, is ``weight`` at ``(o * C) + (i)``), the accumulator declaration
    ``acc_decl``, its name ``acc``, initializer ``acc_init`` (a node or ``None``) and whether that reads memory
    (``init_loads``: a bias, ``(bias != NULL) ? bias[o] : 0.0f``; the rewrite must keep it under the bounds
    check) and its type ``etype``, the statements before the k loop that move out of the check ``pre``, the alias
    declarations the operands replace ``consumed``, the statements after the k loop ``rest``, the body statements
    ``stmts``, the index declarations ``ivs`` and the ``layout``: ``"NN"`` for ``B[k * N + col]``, ``"NT"`` for
    ``B[col * K + k]`` (B stored transposed), ``a_layout`` ``"A"`` or ``"AT"`` (``A[k * M + row]``). The k loop body may also be a general one (:func:`k_body`):
    ``general`` says so, ``body_stmts`` are its statements and ``body_loads`` its A and B load nodes (A first).
    Shared by the shared-memory and the register tiling transforms (the latter takes the plain product only).
    """
    ivs = index_vars(unit)
    stmts = statement_list(unit.body)
    g = closing_bounds_guard(stmts, unit.src)
    flat = unit.facts.flat_index_split()
    if len(ivs) < 2 and flat is not None:
        return (f"the output's row and column are one 1-D thread index split as idx / {flat[1]} and idx % {flat[1]} "
                "(a 1-D launch); the 2-D tiles need a 2-D block, which this step does not write")
    if len(ivs) < 2 or g == "no bounds check":
        return "no two global thread indices followed by a bounds check"
    if isinstance(g, str):
        return g
    guard = g.stmt
    bounds: dict[str, Node] = {**g.bounds(), **{f"htam_cond{i}": t.node for i, t in enumerate(g.terms)
                                                 if t.var is None}}
    if not g.bounds():
        return f"{describe_form(g, unit.src)} is not `row < M && col < N` (nor `if (row >= M || col >= N) return;`)"
    body = list(g.body)
    loop = next((s for s in body if syn.is_for(s)), None)
    if loop is None:
        return "no k loop"
    k_init = loop.child_by_field_name("initializer")
    kd = [d for d in syn.init_declarators(k_init)] if k_init is not None else []
    if len(kd) != 1 or unit.t(kd[0].child_by_field_name("value")) != "0":
        return "the k loop does not start at 0"
    kname = unit.t(kd[0].child_by_field_name("declarator"))
    cond = syn.unwrap_parens(loop.child_by_field_name("condition"))
    if not syn.is_binary(cond) or unit.t(cond.child_by_field_name("operator")) != "<" or unit.t(
        cond.child_by_field_name("left")
    ) != kname:
        return "the k loop is not `k < K`"
    kbound = unit.t(cond.child_by_field_name("right"))
    if unit.t(loop.child_by_field_name("update")).replace(" ", "") not in (f"++{kname}", f"{kname}++", f"{kname}+=1"):
        return "the k loop does not step by 1"
    kb = k_body(unit, loop.child_by_field_name("body"), kname)
    if isinstance(kb, str):
        return kb
    found = _operands(unit, ivs, loop, kname, kb.loads, bounds, kb.general)
    if isinstance(found, str):
        return found
    (a_name, a_parts, a_alias), (b_name, b_parts, b_alias), a_ptr, b_ptr, row, col, layout, a_node, a_layout = found
    acc, prod = kb.accs[0], kb.span
    extra = [c for c in bounds if c not in (row.name, col.name)]
    for c in extra:
        if references(bounds[c], unit.src, row.name) or references(bounds[c], unit.src, col.name) or any(
                (builtin_field(unit, f) or "").startswith("threadIdx.") for f in syn.fields(bounds[c])):
            return f"the bounds check `{unit.t(bounds[c])}` depends on the thread; every thread of a tile must load"
    pre = body[: body.index(loop)]
    declared = {unit.t(s).split("=")[0].split()[-1]: s for s in pre if syn.is_declaration(s)}
    acc_decl = declared.get(acc)
    if missing := [a for a in kb.accs if a not in declared]:
        return f"{missing[0]} is not declared before the k loop"
    consumed = _consumed_aliases(unit, [al for al in (a_alias, b_alias) if al is not None], prod)
    hoisted = [s for s in pre if s is not acc_decl and s not in consumed]
    loads = {a.span for a in unit.facts.accesses}
    init = acc_decl.child_by_field_name("declarator")
    acc_init = init.child_by_field_name("value") if init is not None and syn.is_init_declarator(init) else None
    init_loads = acc_init is not None and any(
        unit.file_byte(acc_init) <= sp[0] < acc_init.end_byte + unit.base for sp in loads)
    if init_loads and len([d for d in acc_decl.named_children if syn.is_init_declarator(d)]) != 1:
        return f"`{unit.t(acc_decl)}` declares more than the accumulator; its loads cannot be guarded"
    for s in hoisted:
        if not syn.is_declaration(s) or any(unit.file_byte(s) <= sp[0] < s.end_byte + unit.base for sp in loads):
            return (f"`{unit.t(s)}` before the k loop is not a declaration without memory accesses; "
                    "it cannot move out of the bounds check")
    rest = body[body.index(loop) + 1 :]
    if any(references(s, unit.src, kname) for s in rest):
        return "the code after the k loop uses k"
    decl_t = acc_decl.child_by_field_name("type")
    return {
        "row": row, "col": col, "guard": guard, "bounds": {v: unit.t(n) for v, n in bounds.items()},
        "cond": g.condition, "end": g.end_byte, "form": g.form,
        "extra": [next(t.text for t in g.terms if t.node == bounds[c]) if c.startswith("htam_cond")
                  else f"{c} < {unit.t(bounds[c])}" for c in extra],
        "kname": kname, "K": kbound,
        "A": a_name, "A_parts": a_parts, "A_ptr": a_ptr, "B": b_name, "B_parts": b_parts, "B_ptr": b_ptr,
        "acc_decl": acc_decl, "acc": acc, "acc_init": acc_init, "init_loads": init_loads, "pre": hoisted,
        "consumed": consumed,
        "etype": unit.t(decl_t), "rest": rest, "stmts": stmts, "ivs": ivs,
        "row_stride": row.stride, "col_stride": col.stride, "layout": layout, "a_layout": a_layout,
        # a k body other than `acc += A * B`: its statements, run on the tiles (the A load first)
        "general": kb.general, "body_stmts": kb.stmts,
        "tile_types": _tile_types(unit, a_ptr, b_ptr) if kb.general else (unit.t(decl_t), unit.t(decl_t)),
        "body_loads": sorted((s[2] for s in kb.loads), key=lambda n: n.start_byte != a_node.start_byte),
        # batched: the operands move with blockIdx.z (one matrix per z block)
        "batched": any(a.stride("blockIdx.z") not in (None, 0) for a in unit.facts.accesses
                       if a.pointer in (a_ptr, b_ptr)),
    }


def _inner_loop(unit: CudaUnit, m: dict, tile: int) -> list[str]:
    """The lines of the tiled kernel's loop over one tile's k for a matched matmul ``m``
    (:func:`match_naive_matmul`): the plain product summed over the whole tile (a padded element is 0, which adds
    nothing), or the kernel's own general k body (:class:`KBody`) with its A load read from ``htam_As`` and its B
    load from ``htam_Bs``, bounded by K as well: a padded 0 is not neutral for any body (``expf(0)`` is 1, a
    distance of 0 and 0 is not the 0 of a max)."""
    k = m["kname"]
    if not m["general"]:
        return [f"    for (int {k} = 0; {k} < {tile}; ++{k})",
                f"        {unit.t(m['acc_decl'].child_by_field_name('declarator').child_by_field_name('declarator'))}"
                f" += htam_As[threadIdx.y][{k}] * htam_Bs[{k}][threadIdx.x];"]
    a, b = m["body_loads"]
    reps = sorted([(a, f"htam_As[threadIdx.y][{k}]"), (b, f"htam_Bs[{k}][threadIdx.x]")],
                  key=lambda r: -r[0].start_byte)
    body = []
    for st in m["body_stmts"]:
        text = bytearray(unit.src[st.start_byte : st.end_byte])
        for n, rep in reps:
            if st.start_byte <= n.start_byte < st.end_byte:
                text[n.start_byte - st.start_byte : n.end_byte - st.start_byte] = rep.encode()
        body.append("        " + text.decode())
    return [f"    for (int {k} = 0; {k} < {tile} && htam_k0 + {k} < {m['K']}; ++{k}) {{  "
            "// the kernel's own k body on the tiles", *body, "    }"]


def _a_tile_lines(m: dict, tile: int, a_index: str, at_index: str, at: str) -> list[str]:
    """The lines loading the A tile ``htam_As[row][k]`` of one k step of the shared-memory tiling for a matched
    matmul ``m`` (:func:`match_naive_matmul`), coalesced for A's layout (``m["a_layout"]``): ``A[row * K + k]``
    with ``threadIdx.x`` along k (``a_index``: the index at ``htam_ka``); ``A[k * M + row]`` with ``threadIdx.x``
    along the row (``at_index``: the index at ``htam_kb``, ``htam_ma``), stored transposed into the tile (padded
    by one column by the caller) so that the inner loop still reads ``htam_As[threadIdx.y][k]``. An element past
    M or K is 0 (``at`` its type), so sizes that are not multiples of the tile add nothing."""
    row, M, K = m["row"], m["bounds"][m["row"].name], m["K"]
    extra = "".join(f" && {c}" for c in m["extra"])
    if m["a_layout"] == "AT":
        return [f"    const int htam_ma = blockIdx.{row.dim} * {tile} + threadIdx.x;",
                f"    htam_As[threadIdx.x][threadIdx.y] = (htam_ma < {M} && htam_kb < {K}{extra}) "
                f"? {m['A']}[{at_index}] : ({at})0;"]
    return [f"    htam_As[threadIdx.y][threadIdx.x] = ({row.name} < {M} && htam_ka < {K}{extra}) "
            f"? {m['A']}[{a_index}] : ({at})0;"]


#: The step that gives a flattened 1-D index a 2-D block (:mod:`htam_core.transforms.cuda_flat_remap`).
FLAT_REMAP = "cuda.flat_index_2d"


def after_flat_remap(then: CudaTransform, model: SourceModel, kernel: Kernel, profile: Profile | None, why: str
                     ) -> list[Candidate] | NotApplicable:
    """``then`` (a matmul tiling) made after the 2-D remap of a flattened 1-D index (:data:`FLAT_REMAP`, composed
    by :func:`~htam_core.transforms.registry.compose_after`): one step, "remap, then tile". ``why``: the naive
    pattern's refusal on the flat kernel, said with the remap's own refusal when that is not made."""
    res = compose_after(FLAT_REMAP, then, model, kernel, profile)
    if isinstance(res, NotApplicable):
        return then.not_applicable(f"{why}; the 2-D remap first: {res.reason}")
    return res


@register
class CudaSmemTilingMatmul(CudaTransform):
    """Shared-memory tiling of ``C[row*N+col] = f(sum_k A[row*K+k] * B[k*N+col])``."""

    id = "cuda.smem_tiling_matmul"
    languages = CUDA_LANGS
    summary = "shared-memory tiled matmul (TILE 16 or 32) from the naive pattern"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Candidates for TILE 16 and 32: the launch keeps its block when it is TILE x TILE, else (any constant
        2-D block shape) gets TILE x TILE blocks where it can be retuned consistently with its grid; a block set at
        run time (``dim3 block(b, b)``, the index strides ``blockDim``) gets TILE x TILE blocks and a grid sized
        from the launch's M and N arguments (:func:`launch_sizes`). A kernel that is not the naive pattern but already
        gives each thread a TM x TN tile of an NT dot nest (in its body or in a ``__device__`` helper it calls) gets
        its operand panels staged instead (:class:`~htam_core.transforms.cuda_panel_tiling.CudaSmemPanelTiling`)."""
        m = match_naive_matmul(unit)
        if not isinstance(m, str) and m["tile_types"] is None:
            return self.not_applicable(f"the element type of {m['A_ptr']} or {m['B_ptr']} is unknown; the tiles "
                                       "of the k body need it")
        if isinstance(m, str) and unit.facts.flat_index_split() is not None:
            return after_flat_remap(self, model, kernel, profile, m)
        if isinstance(m, str):
            # an already register-tiled NT nest (each thread a TM x TN tile): its panels are staged instead
            panels = CudaSmemPanelTiling().propose_unit(unit, model, kernel, profile)
            if not isinstance(panels, NotApplicable):
                return panels
            return self.not_applicable(f"not the naive matmul pattern: {m}; and {panels.reason}")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; the block size is unknown")
        cur = _block_shape(unit)
        if isinstance(cur, str) and any(s is not None for s in (m["row_stride"], m["col_stride"])):
            return self.not_applicable(cur)
        sizes = launch_sizes(unit, m) if isinstance(cur, str) else []
        if isinstance(sizes, str):
            return self.not_applicable(f"{cur}, and {sizes}")
        if isinstance(cur, str) and {m["row"].dim, m["col"].dim} != {"x", "y"}:
            return self.not_applicable(f"{cur}, and the output indices are not on x and y")
        out, reasons = [], []
        for tile in (16, 32):
            launch_edits: list[TextEdit] | str = []
            if isinstance(cur, str):
                # a block set at run time (`dim3 block(b, b)`): every launch gets TILE x TILE blocks and a grid
                # sized from its own M and N arguments (the batch component kept)
                launch_edits = self._sized_launch(unit, m, tile, sizes)
                if isinstance(launch_edits, str):
                    reasons.append(launch_edits)
                    continue
            elif (tile, tile) != cur:  # any block shape: the launch gets TILE x TILE blocks, the grid follows
                launch_edits = retune_block(unit, (tile, tile), mapping_rewritten=True)
                if isinstance(launch_edits, str):
                    reasons.append(launch_edits)
                    continue
            for v, s in ((m["row"], m["row_stride"]), (m["col"], m["col_stride"])):
                size = cur["xy".index(v.dim)] if v.dim in "xy" and not isinstance(cur, str) else None
                if s not in (None, size):
                    reasons.append(f"{v.name} uses a block stride of {s}, not the block's {size} threads in {v.dim}")
                    break
            else:
                # a retuned block's bounds follow in retune_block; a block sized here is checked here
                bounds = bounds_edit(unit, None, tile * tile) if isinstance(cur, str) else None
                if isinstance(bounds, str):
                    reasons.append(bounds)
                    continue
                launch_edits = [*launch_edits, *([bounds] if bounds is not None else [])]
                body = self._rewrite(unit, m, tile)
                out.append(
                    self.candidate(
                        model,
                        f"tile {kernel.name} through shared memory with {tile}x{tile} tiles of A and B "
                        f"(blocks of {tile}x{tile} threads; bounds checks kept)",
                        {"tile": tile, "layout": m["layout"], "a_layout": m["a_layout"], "batched": m["batched"]},
                        [body, *launch_edits],
                    )
                )
        if not out:
            return self.not_applicable(reasons[0] if reasons else "no tile size fits")
        return out

    def _sized_launch(self, unit: CudaUnit, m: dict, tile: int, sizes: list[tuple[str, str]]
                      ) -> list[TextEdit] | str:
        """Edits giving every launch ``dim3(tile, tile)`` blocks and a grid of ``ceil(M / tile) x ceil(N / tile)``
        (row and column on the block dimensions the kernel reads them from; a z component kept)."""
        edits: list[TextEdit] = []
        for la, (mh, nh) in zip(unit.launches, sizes, strict=True):
            dims = unit.block_dims(la) or []
            if len(dims) == 3 and (dims[2].const is None or dims[2].const.value != 1):
                return f"the block on line {la.site.line} has {unit.t(dims[2].expr)} threads in z; the tiles need 1"
            grid = ["1", "1"]
            grid["xy".index(m["row"].dim)] = f"(({mh}) + {tile - 1}) / {tile}"
            grid["xy".index(m["col"].dim)] = f"(({nh}) + {tile - 1}) / {tile}"
            gdims = unit.dims_of(la.grid, la.host)
            if len(gdims) > 2:
                grid.append(unit.t(gdims[2]))
            edits.append(launch_dims_edit(unit, la, la.grid, grid))
            edits.append(launch_dims_edit(unit, la, la.block, [str(tile), str(tile)]))  # type: ignore[arg-type]
        return edits

    def _rewrite(self, unit: CudaUnit, m: dict, tile: int) -> TextEdit:
        def sub(parts: Parts, mapping: dict[str, str]) -> str:
            return operand_index(unit, parts, mapping, paren=False)

        row, col, et = m["row"], m["col"], m["etype"]
        at, bt = m["tile_types"]  # the accumulator's type for the plain product, else the operands'
        first = min(row.decl.start_byte, col.decl.start_byte)
        indent = syn.indent_of(unit.src, first)
        others = [s for s in m["stmts"] if first <= s.start_byte < m["guard"].start_byte
                  and s not in (row.decl, col.decl) and s not in m["consumed"]]
        def decl_prefix(v: IndexVar) -> str:
            init = next(d for d in v.decl.named_children if syn.is_init_declarator(d))
            return unit.src[v.decl.start_byte : init.start_byte].decode()

        N, K = m["bounds"][col.name], m["K"]
        extra = "".join(f" && {c}" for c in m["extra"])
        acc_decl = unit.t(m["acc_decl"])
        if m["init_loads"]:  # a bias: read it only where the original did, under the bounds check
            cond = m["cond"]
            head = unit.src[m["acc_decl"].start_byte : m["acc_init"].start_byte].decode()
            acc_decl = f"{head}{cond} ? ({unit.t(m['acc_init'])}) : ({et})0;"
        a_lines = _a_tile_lines(m, tile, sub(m["A_parts"], {m["kname"]: "htam_ka"}),
                                sub(m["A_parts"], {m["kname"]: "htam_kb", row.name: "htam_ma"}), at)
        if m["layout"] == "NT":
            # B[col * K + k]: consecutive threadIdx.x take consecutive k of one B row (coalesced), stored
            # transposed into a padded tile so that the inner loop still reads htam_Bs[k][threadIdx.x]
            b_lines = [
                f"    const int htam_nb = blockIdx.{col.dim} * {tile} + threadIdx.y;",
                f"    htam_Bs[threadIdx.x][threadIdx.y] = (htam_ka < {K} && htam_nb < {N}{extra}) "
                f"? {m['B']}[{sub(m['B_parts'], {m['kname']: 'htam_ka', col.name: 'htam_nb'})}] : ({bt})0;",
            ]
        else:
            b_lines = [
                f"    htam_Bs[threadIdx.y][threadIdx.x] = (htam_kb < {K} && {col.name} < {N}{extra}) "
                f"? {m['B']}[{sub(m['B_parts'], {m['kname']: 'htam_kb'})}] : ({bt})0;",
            ]
        pad, a_pad = (" + 1" if m["layout"] == "NT" else ""), (" + 1" if m["a_layout"] == "AT" else "")
        lines = [
            f"{decl_prefix(row)}{row.name} = blockIdx.{row.dim} * {tile} + threadIdx.y;",
            f"{decl_prefix(col)}{col.name} = blockIdx.{col.dim} * {tile} + threadIdx.x;",
            *[unit.t(s) for s in others],
            *[unit.t(s) for s in m["pre"]],
            f"__shared__ {at} htam_As[{tile}][{tile}{a_pad}];",
            f"__shared__ {bt} htam_Bs[{tile}][{tile}{pad}];",
            acc_decl,
            f"for (int htam_k0 = 0; htam_k0 < {K}; htam_k0 += {tile}) {{",
            *(["    const int htam_ka = htam_k0 + threadIdx.x;"] if m["layout"] == "NT" or m["a_layout"] == "A" else []),
            *(["    const int htam_kb = htam_k0 + threadIdx.y;"] if m["layout"] == "NN" or m["a_layout"] == "AT" else []),
            *a_lines,
            *b_lines,
            "    __syncthreads();",
            "#pragma unroll",
            *_inner_loop(unit, m, tile),
            "    __syncthreads();",
            "}",
            f"if {m['cond']} {{",
            *["    " + unit.t(s) for s in m["rest"]],
            "}",
        ]
        text = "\n".join(ln if ln.startswith("#") else indent + ln for ln in lines)
        return unit.edit(syn.line_start(unit.src, first), m["end"], text)


@register
class CudaTransposeSmemTile(CudaTransform):
    """``out[x*rows+y] = in[y*cols+x]`` -> transpose through a padded 32x33 shared tile."""

    id = "cuda.transpose_smem_tile"
    languages = CUDA_LANGS
    summary = "transpose through a 32x33 padded shared-memory tile (coalesced, no bank conflicts)"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Candidates: the samples' loop over rows through a padded tile with its own header and block when the
        launch gives that block (:meth:`_propose_rows`); else, for any element-copy transpose the analysis layer
        computes (:attr:`KernelFacts.transposes`), a body that moves the whole matrix through padded 32x33 tiles
        with loops correct for any block shape and grid (:meth:`_tile_loop_body`) and the launch as it is; before
        it, whenever every launch's block is 32x8 or can be made so (its block argument belongs to this kernel's
        launches alone, in this file or another of the workspace), the textbook 32x8 tile in which each thread
        moves 4 rows (:meth:`_rows_variant`). That coarsened tile goes first whatever the launch's own block: on
        an H100 the family suite's 32x32-block transpose took 0.243 ms with it and 0.516 ms with the launch's
        1024 threads moving one element each; on a batched textbook pair the expert's 32x8 tile with 4 rows per
        thread ran at 0.036 ms where the best of the element-loop tiles ran at 0.052 ms. A kernel whose launch is
        not found, or whose block cannot be changed, gets the launch-independent form alone."""
        rows = self._propose_rows(unit, model, kernel)
        if isinstance(rows, list):
            return rows
        if not unit.facts.transposes:
            return self.not_applicable("not a transpose: the kernel's only accesses are not one load in[row * cols "
                                       f"+ col] stored to out[col * rows + row]; nor a loop over rows: {rows}")
        tp = unit.facts.transposes[0]
        shape = _block_shape(unit) if unit.launches else "no launch"
        body = self._tile_loop_body(unit, tp, None if isinstance(shape, str) else shape[0] * shape[1])
        if isinstance(body, str):
            return self.not_applicable(body)
        if not unit.launches:  # the registry's note says that no launch was found and the form fits any grid
            return [self.candidate(model, f"transpose in {kernel.name} through a 32x33 padded shared tile, a tile "
                                   "loop correct for any block shape (launch-independent)",
                                   dict(tile=32, block="any", launch="independent"), [body])]
        if isinstance(shape, str):
            title = (f"transpose in {kernel.name} through a 32x33 padded shared tile, a tile loop correct for any "
                     f"block and grid (launch-independent: {shape})")
            out = [dataclasses.replace(self.candidate(model, title, dict(tile=32, block="any"), [body]),
                                       title_note="block not constant: correct for any block and grid")]
        else:
            why = tile_coverage(tp, unit.facts.loops, shape)
            if why is not None:
                return self.not_applicable(why)
            title = (f"transpose in {kernel.name} through a 32x33 padded shared tile: coalesced reads and writes, "
                     f"the launch's {shape[0]}x{shape[1]} threads moving each tile")
            out = [self.candidate(model, title, dict(tile=32, block=list(shape)), [body])]
        rows = self._rows_variant(unit, model, kernel, tp, shape)
        return out if rows is None else [rows, *out]

    def _rows_variant(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, tp: Transpose,
                      shape: tuple[int, int] | str) -> Candidate | None:
        """The textbook coarsened tile (TILE_DIM 32, BLOCK_ROWS 8: 256 threads, each moving 4 rows of a tile,
        :meth:`_rows_body`) under a 32x8 block: the launch's own when every launch has it, else with every
        launch's block set to 32x8 (and a ``__launch_bounds__`` below 256 raised); the grid sized to one tile per
        block where it was sized for another block (:meth:`_grid_edits`). ``None`` when a block argument cannot be
        edited alone (shared with another launch, or a launch through a pointer that runs other kernels too), the
        bounds cannot follow, or the body cannot be written: the body is correct for a 32x8 block only."""
        body = self._rows_body(unit, tp)
        if isinstance(body, str):
            return None
        params = dict(tile=32, block=[32, 8], rows_per_thread=4)
        # a launch through a pointer or table that runs other kernels too: its block and grid are theirs as well
        shared = any(set(la.site.pointer_kernels) - {kernel.name} for la in unit.launches)
        grid = [] if shared else self._grid_edits(unit, tp, shape)
        sized = "; the launch's grid sized to one tile per block" if grid else ""
        if shape == (32, 8):
            return self.candidate(model, f"transpose in {kernel.name} through a 32x33 padded shared tile, the "
                                  f"launch's 32x8 threads each moving 4 rows of a tile{sized}", params, [body, *grid])
        if shared:
            return None
        bounds = bounds_edit(unit, None if isinstance(shape, str) else shape[0] * shape[1], 256)
        if isinstance(bounds, str):
            return None
        launch_edits = self._block_edits(unit, 32, 8)
        if not launch_edits:
            return None
        if bounds is not None:
            launch_edits.append(bounds)
        return self.candidate(
            model, f"transpose in {kernel.name} through a 32x33 padded shared tile, 32x8 threads per block "
            f"(the launch's block changes with the kernel; each thread moves 4 rows of a tile{sized})",
            params, [body, *launch_edits, *grid])

    def _grid_edits(self, unit: CudaUnit, tp: Transpose, shape: tuple[int, int] | str) -> list[TextEdit]:
        """Edits sizing every launch's grid to ``(cols + 31) / 32`` and ``(rows + 31) / 32`` blocks along the
        transpose's grid sides (:func:`grid_sides`; its other components kept) for the coarsened tile, so that
        each block moves one tile; ``[]`` when the launch's grid already has one block per 32x32 tile (the
        kernel's blocks advanced 32 rows and 32 columns under the launch's block ``shape``:
        :func:`grid_strides`), or when a launch's sizes or grid components cannot be read or belong to another
        launch too (the tile walk is correct for any grid: the launch's grid is then kept, its blocks past the
        tiles idle). Each component is replaced where it is written, as the block's are (:meth:`_block_edits`),
        so a launch written in Python (a cupy call) gets Python text."""
        sides = grid_sides(tp)
        if sides is None or grid_strides(tp, None if isinstance(shape, str) else shape) == (32, 32):
            return []
        names = param_names(unit)
        edits = []
        for la in unit.launches:
            sizes = []
            for n in (str(tp.cols), str(tp.rows)):
                arg = la.site.args[names.index(n)].strip() if n in names and names.index(n) < len(la.site.args) \
                    else constant_size(unit, la, n)
                if not arg or not side_effect_free(arg):
                    return []
                sizes.append(arg if re.fullmatch(r"[\w.]+", arg) else f"({arg})")
            if la.grid is None or not self._own_config(unit, la, la.grid):
                return []
            gdims = unit.dims_of(la.grid, la.host)
            if len(gdims) <= max("xyz".index(d) for d in sides):
                return []
            edits += [unit.replace(gdims["xyz".index(d)], f"({size} + 31) / 32")
                      for d, size in zip(sides, sizes, strict=True)]
        return edits

    def _rows_body(self, unit: CudaUnit, tp: Transpose) -> TextEdit | str:
        """The kernel's new body for transpose ``tp`` under a 32x8 block (the caller makes every launch's block
        so), or why not: the samples' coarsened tile (TILE_DIM 32, BLOCK_ROWS 8), each thread reading 4 rows of a
        32x32 tile of the input, ``j += 8``, into a ``[32][33]`` shared tile (+1 column: the transposed reads hit
        32 banks) and writing 4 rows of the transposed tile, coalesced both ways, the loops unrolled so 4 loads
        are in flight per thread. Beyond the samples' form, as the textbook pairs' experts do: each element is
        checked against the matrix's sides (any rows and columns, not only multiples of 32), a batch slice's
        base is kept, the flat index is 64-bit when the kernel's was, and the blocks walk the tiles with the grid
        (tile columns along the ``blockIdx`` dimension the kernel's column advanced with, :func:`grid_sides`, tile
        rows along the other; a linear tile id otherwise), so any grid moves every element exactly once and the
        launch's grid, sized for those sides, gives each block one tile. Idea source: CUDA samples' transpose
        (``transposeNoBankConflicts``) and Harris, "An Efficient Matrix Transpose in CUDA C/C++" (2013)."""
        frame = _tile_frame(unit, tp)
        if isinstance(frame, str):
            return frame
        etype, ct, it, batch, rb, wb = frame
        src, dst = tp.read.pointer, tp.write.pointer
        wide = f"({it})" if it != ct else ""
        element = stored_value(tp, "htam_tile[htam_x][htam_y + htam_k]")
        ins, outs, pitch = _strides(tp, it)
        rr, rc = tp.place("read", "(htam_r0 + htam_k)", "htam_c", "htam_rows", "htam_cols")
        wr, wc = tp.place("write", "htam_oc", "(htam_or0 + htam_k)", "htam_rows", "htam_cols")
        lines = [
            f"// 32x32 tiles, 32x8 threads each moving 4 rows: rows of {src} read coalesced into a padded tile (+1",
            "// column: no shared-memory bank conflicts), then written out transposed with coalesced rows",
            *batch,
            f"__shared__ {etype} htam_tile[32][33];",
            f"const {ct} htam_rows = {tp.rows}, htam_cols = {tp.cols};",
            *pitch,
            f"const {ct} htam_tiles_x = (htam_cols + 31) / 32, htam_tiles_y = (htam_rows + 31) / 32;",
            "const int htam_x = threadIdx.x, htam_y = threadIdx.y;",
            *_tile_walk(tp, ct, [
                f"const {ct} htam_c = htam_tx * 32 + htam_x, htam_r0 = htam_ty * 32 + htam_y;  // in: column, first row",
                "#pragma unroll",
                "for (int htam_k = 0; htam_k < 32; htam_k += 8)",
                "    if (htam_r0 + htam_k < htam_rows && htam_c < htam_cols)",
                f"        htam_tile[htam_y + htam_k][htam_x] = {src}[{rb}{wide}{rr} * {ins} + {rc}];",
                "__syncthreads();",
                f"const {ct} htam_oc = htam_ty * 32 + htam_x, htam_or0 = htam_tx * 32 + htam_y;  // out: column, first row",
                "#pragma unroll",
                "for (int htam_k = 0; htam_k < 32; htam_k += 8)",
                "    if (htam_or0 + htam_k < htam_cols && htam_oc < htam_rows)",
                f"        {dst}[{wb}{wide}{wc} * {outs} + {wr}] = {element};",
                "__syncthreads();  // the tile is refilled by the block's next tile",
            ]),
        ]
        return _replace_body(unit, tp, lines)

    def _tile_loop_body(self, unit: CudaUnit, tp: Transpose, threads: int | None = None) -> TextEdit | str:
        """The kernel's new body for transpose ``tp``: every 32x32 tile of the ``rows x cols`` input read with
        coalesced rows into a ``[32][33]`` shared tile (+1 column: the transposed reads hit 32 banks), then
        written out transposed with coalesced rows. The tiles are shared among the blocks of the whole grid (linear
        block id, stride the grid's size) and the elements of a tile among the threads of the block (linear thread
        id, stride the block's size), so each output element is written exactly once whatever the launch; the
        bounds are those of the matrix, so sizes that are not multiples of 32 are moved too. Or why not.

        ``threads``: the block's thread count at every launch when it is a compile-time constant dividing 1024
        (e.g. 256 for 32x8): the element loops then get a fully unrolled path for that count (``1024 / threads``
        guarded loads in flight per thread, as the samples' ``j += BLOCK_ROWS`` loop has), taken when the block
        has that many threads, beside the general loop for any other block. The unrolled loads are what hides
        the memory latency (CUDA C++ Best Practices Guide, "Shared memory in matrix multiplication" and the
        transpose sample's analysis)."""
        frame = _tile_frame(unit, tp)
        if isinstance(frame, str):
            return frame
        etype, _, it, batch, rb, wb = frame
        src, dst = tp.read.pointer, tp.write.pointer
        ins, outs, pitch = _strides(tp, it)
        rr, rc = tp.place("read", "htam_r", "htam_c", "htam_rows", "htam_cols")
        wr, wc = tp.place("write", "htam_r", "htam_c", "htam_rows", "htam_cols")
        load = [f"const {it} htam_r = htam_r0 + htam_e / 32, htam_c = htam_c0 + htam_e % 32;",
                "if (htam_r < htam_rows && htam_c < htam_cols)",
                f"    htam_tile[htam_e / 32][htam_e % 32] = {src}[{rb}{rr} * {ins} + {rc}];"]
        store = [f"const {it} htam_c = htam_c0 + htam_e / 32, htam_r = htam_r0 + htam_e % 32;  // row, column of out",
                 "if (htam_r < htam_rows && htam_c < htam_cols)",
                 f"    {dst}[{wb}{wc} * {outs} + {wr}] = {stored_value(tp, 'htam_tile[htam_e % 32][htam_e / 32]')};"]
        first_tile, tile_step = _tile_ids(tp.batch, it)
        lines = [
            f"// 32x32 tiles: rows of {src} read coalesced into a padded tile (+1 column: no shared-memory bank",
            "// conflicts), then written out transposed with coalesced rows; correct for any block shape and grid",
            *batch,
            f"__shared__ {etype} htam_tile[32][33];",
            f"const {it} htam_rows = {tp.rows}, htam_cols = {tp.cols};",
            *pitch,
            f"const {it} htam_tiles_x = (htam_cols + 31) / 32, htam_tiles = htam_tiles_x * ((htam_rows + 31) / 32);",
            "const int htam_threads = blockDim.x * blockDim.y * blockDim.z;",
            "const int htam_tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
            f"for ({it} htam_t = {first_tile};",
            f"     htam_t < htam_tiles; htam_t += {tile_step}) {{",
            f"    const {it} htam_r0 = htam_t / htam_tiles_x * 32, htam_c0 = htam_t % htam_tiles_x * 32;",
            *("    " + ln for ln in _element_loop(load, threads)),
            "    __syncthreads();",
            *("    " + ln for ln in _element_loop(store, threads)),
            "    __syncthreads();  // the tile is refilled by the block's next tile",
            "}",
        ]
        return _replace_body(unit, tp, lines)

    def _propose_rows(self, unit: CudaUnit, model: SourceModel, kernel: Kernel) -> list[Candidate] | str:
        """The samples' row loop (:meth:`KernelFacts.transpose_loops`), header and block kept, via a padded tile."""
        facts = unit.facts
        tls = facts.transpose_loops()
        if len(tls) != 1:
            return "no loop over rows moves a tile (in[(y + j) * W + x] to out[x * H + y + j])"
        tl = tls[0]
        if not (tl.tile.is_Integer and tl.rows.is_Integer):
            return f"the tile {tl.tile} or the rows per pass {tl.rows} is not a compile-time constant"
        tile, rows = int(tl.tile), int(tl.rows)
        lp = next(lp for lp in facts.loops if lp.id == tl.loop)
        node = unit.node_at(lp.span, syn.FOR_LOOP)
        stmts = statement_list(unit.body)
        if node is None or not any(s.start_byte == node.start_byte for s in stmts):
            return "the row loop is not a statement of the kernel's body"
        if len(facts.global_accesses()) != 2 or facts.block_barriers() or facts.atomics or facts.returns or any(
                t.bounds or t.uniform_bounds for t in facts.transposes):  # a bounded loop or an early return takes the tile loop
            return "the kernel does more than the transpose loop, returns early or checks bounds"
        if not unit.launches:
            return f"{kernel.name} has no launch site in this file; the block size is unknown"
        for la in unit.launches:
            dims = unit.block_dims(la)
            if not dims or len(dims) not in (2, 3) or any(d.const is None for d in dims):
                return f"the launch on line {la.site.line} has no constant 2-D block"
            shape = tuple(d.const.value for d in dims)  # type: ignore[union-attr]
            if shape[:2] != (tile, rows) or shape[2:] not in ((), (1,)):
                return (f"the block on line {la.site.line} is {'x'.join(map(str, shape))}; the loop needs "
                        f"{tile}x{rows} threads")
        pf = facts.pointer(tl.read.pointer)
        etype = " ".join(w for w in (pf.element_type or "").split() if w not in ("const", "volatile")) if pf else ""
        if not etype:
            return f"the element type of {tl.read.pointer} is unknown"
        body = node.child_by_field_name("body")
        cond = node.child_by_field_name("condition")
        bound = cond.child_by_field_name("right") if cond is not None else None
        if body is None or bound is None:
            return "the row loop's header is not read"
        header = " ".join(unit.src[node.start_byte : body.start_byte].decode().split())
        t, j = unit.t(bound), lp.var
        height = next((p for p in param_names(unit) if tl.height == sym(p)), None) or f"({tl.height})"
        read = unit.node_at(tl.read.span)
        write = unit.node_at(tl.write.span)
        if read is None or write is None:
            return "the loop's load or store is not found"
        asg = write.parent
        if asg is None or not syn.is_assignment(asg) or asg.child_by_field_name("right") is None or \
                syn.unwrap_parens(asg.child_by_field_name("right")) != read:
            return "the row loop stores a function of the loaded element, not the element itself"
        ind = syn.indent_of(unit.src, node.start_byte)
        lines = [
            f"__shared__ {etype} htam_tile[{t}][{t} + 1];  // +1 column: no shared-memory bank conflicts",
            header,
            f"    htam_tile[threadIdx.y + {j}][threadIdx.x] = {unit.t(read)};",
            "__syncthreads();",
            f"{header}  // the transposed block: coalesced writes",
            f"    {tl.write.pointer}[(blockIdx.x * {t} + threadIdx.y + {j}) * {height} + blockIdx.y * {t} + threadIdx.x]"
            f" = htam_tile[threadIdx.x][threadIdx.y + {j}];",
        ]
        edits = [unit.replace(node, ("\n" + ind).join(lines)), *_orphan_locals(unit, stmts, write)]
        edits.sort(key=lambda e: e.start_byte)
        return [self.candidate(
            model,
            f"transpose in {kernel.name} through a {t}x({t} + 1) padded shared tile, {rows} rows per pass as "
            "before: coalesced reads and writes",
            {"tile": tile, "block": [tile, rows]},
            edits,
        )]

    def _block_edits(self, unit: CudaUnit, bx: int, by: int) -> list[TextEdit]:
        """Edits that make every launch's block ``bx x by``, or ``[]`` when a block argument is shared with
        another launch or is not a 2-D ``dim3``."""
        edits = []
        for la in unit.launches:
            if la.block is None or not self._own_config(unit, la, la.block):
                return []
            dims = unit.dims_of(la.block, la.host)
            if len(dims) != 2:
                return []
            edits += [unit.replace(dims[0], str(bx)), unit.replace(dims[1], str(by))]
        return edits

    @staticmethod
    def _own_config(unit: CudaUnit, la: Launch, arg: Node) -> bool:
        """Whether launch ``la``'s grid or block argument ``arg`` is its own: an expression, or a variable no
        other launch of its scope passes."""
        node = syn.unwrap_parens(arg)
        if not syn.is_identifier(node):
            return True
        name = unit.t(node)
        uses = [lc for lc in launch_calls(la.host or unit.root, unit.src)
                if any(references(a, unit.src, name) for a in lc.config)]
        return len(uses) == 1


def stored_value(tp: Transpose, element: str) -> str:
    """The C text of the transpose ``tp``'s stored value (:attr:`~htam_core.source.analysis.facts.Transpose.value`)
    with the loaded element read from ``element`` (a postfix expression: a tile entry). The tile holds the raw
    loaded element and the store applies the expression: the tile's element type is then the input's pointee type,
    which the analysis knows, where the expression's result type (``make_float2``, a cast, a library call) is not
    known to it; each element is still computed once."""
    return re.sub(rf"\b{LOADED}\b", lambda _m: element, tp.value)


def _tile_frame(unit: CudaUnit, tp: Transpose) -> tuple[str, str, str, list[str], str, str] | str:
    """What both tile bodies of transpose ``tp`` are written with, or why it cannot be: ``(element type, size type,
    index type, batch lines, read base, write base)``. The size type is ``long long`` when a side is not a 32-bit
    parameter (``size_t``, ``int64_t``, ``long``: a side may then pass 2^31), else ``int``; the index type (of
    the flat ``row * cols + col``) is ``long long`` also when the kernel's own indices were 64-bit (a cast to
    ``size_t``: a matrix of 2^31 elements or more fits), else ``int``. The bases are ``"htam_rb + "`` and
    ``"htam_wb + "`` for a batched transpose (:func:`_batch_lines`), else empty."""
    pf = unit.facts.pointer(tp.read.pointer)
    etype = " ".join(w for w in (pf.element_type or "").split() if w not in ("const", "volatile")) if pf else ""
    if not etype:
        return f"the element type of {tp.read.pointer} is unknown"
    if not (tp.rows.is_Symbol and tp.cols.is_Symbol):
        return f"the sizes {tp.rows} and {tp.cols} are not parameters"
    if tp.pitched and (stride_text(tp.in_stride) is None or stride_text(tp.out_stride) is None):
        return f"the row strides {tp.in_stride} and {tp.out_stride} are not spelled back"
    types = {p.name: (p.type or "") for p in unit.kernel.params}

    def wide(names: set) -> bool:
        return any(w in types.get(str(n), "long") for n in names for w in ("64", "size", "long", "ptrdiff"))
    long_sides = wide({tp.rows, tp.cols})
    strides = {s for e in (tp.in_stride, tp.out_stride) for s in e.free_symbols if str(s) in types}
    ct = "long long" if long_sides else "int"
    it = "long long" if long_sides or tp.read.wide_index or tp.write.wide_index or wide(strides) else "int"
    batch = _batch_lines(tp)
    if isinstance(batch, str):
        return batch
    rb, wb = ("htam_rb + " if tp.read_base != 0 else "", "htam_wb + " if tp.write_base != 0 else "")
    return etype, ct, it, batch, rb, wb


def _strides(tp: Transpose, it: str) -> tuple[str, str, list[str]]:
    """``(input row stride, output row stride, lines)`` for the tile bodies' flat indices: ``htam_cols`` and
    ``htam_rows`` for a dense transpose (no lines); for a pitched one (:attr:`Transpose.pitched`: leading
    dimensions ``lda``/``ldb``, element or byte pitches divided by ``sizeof``) ``htam_ld_in``/``htam_ld_out``,
    declared of the index type ``it`` from the kernel's own strides (:func:`stride_text`), so the tile reads and
    writes the rows the kernel did while its bounds stay the matrix's extents. The caller checked (in
    :func:`_tile_frame`) that both strides are spelled."""
    if not tp.pitched:
        return "htam_cols", "htam_rows", []
    ins, outs = stride_text(tp.in_stride), stride_text(tp.out_stride)
    return "htam_ld_in", "htam_ld_out", [
        f"const {it} htam_ld_in = {ins}, htam_ld_out = {outs};  // row strides (elements) of {tp.read.pointer}, "
        f"{tp.write.pointer}"]


def _tile_walk(tp: Transpose, ct: str, body: list[str]) -> list[str]:
    """``body`` (which reads the tile ``(htam_tx, htam_ty)`` of a ``htam_tiles_x x htam_tiles_y`` grid of tiles)
    inside the loops, of type ``ct``, that give each block its tiles, each tile once over the whole grid of blocks
    whatever its size: tile columns along the ``blockIdx`` dimension the kernel's column advanced with and tile
    rows along the row's (:func:`grid_sides`; the third dimension, when not a batch's, folded into the rows), so
    the launch's grid, sized for those sides, gives each block one tile; a linear tile id over the dimensions
    that are not a batch's otherwise (one division per tile)."""
    sides = grid_sides(tp)
    if sides is None:
        first, step = _tile_ids(tp.batch, ct)
        return [f"for ({ct} htam_t = {first}, htam_tiles = htam_tiles_x * htam_tiles_y;",
                f"     htam_t < htam_tiles; htam_t += {step}) {{",
                f"    const {ct} htam_ty = htam_t / htam_tiles_x, htam_tx = htam_t % htam_tiles_x;",
                *("    " + ln for ln in body), "}"]
    cd, rd = sides
    rest = [d for d in "xyz" if d not in (cd, rd, *tp.batch)]
    first = f"blockIdx.{rd}" + "".join(f" + gridDim.{rd} * blockIdx.{d}" for d in rest)
    step = " * ".join(f"gridDim.{d}" for d in (rd, *rest))
    return [f"for ({ct} htam_ty = {first}; htam_ty < htam_tiles_y; htam_ty += {step}) {{",
            f"    for ({ct} htam_tx = blockIdx.{cd}; htam_tx < htam_tiles_x; htam_tx += gridDim.{cd}) {{",
            *("        " + ln for ln in body), "    }", "}"]


def _replace_body(unit: CudaUnit, tp: Transpose, lines: list[str]) -> TextEdit | str:
    """The edit that replaces the body of transpose ``tp``'s kernel with ``lines`` (indented one level below the
    old body's first line), or why not."""
    first = unit.node_at(tp.body)
    if first is None:
        return "the kernel's body is not found"
    ind = syn.indent_of(unit.src, first.start_byte) + "    "
    text = "{\n" + "".join(f"{ind}{ln}\n" for ln in lines) + syn.indent_of(unit.src, first.start_byte) + "}"
    return unit.replace_span(tp.body, text)


def _tile_ids(batch: tuple[str, ...], it: str) -> tuple[str, str]:
    """``(first, step)``: C text of a block's first tile (its linear id over the grid's dimensions that are not
    ``batch``) and of the stride between its tiles (the product of those dimensions' extents), in type ``it``."""
    dims = [d for d in "xyz" if d not in batch]
    first = f"blockIdx.{dims[-1]}"
    for k in range(len(dims) - 2, -1, -1):
        inner = first if k == len(dims) - 2 else f"({first})"
        first = f"blockIdx.{dims[k]} + ({it})gridDim.{dims[k]} * {inner}"
    step = f"({it})" + " * ".join(f"gridDim.{d}" for d in dims)
    return first, step


def _batch_lines(tp: Transpose) -> list[str] | str:
    """The tile body's first lines for a batched transpose (:attr:`Transpose.batch`): the checks uniform across
    the block as an early return (before any barrier, so the whole block leaves together) and the read's and the
    write's base offsets as 64-bit ``htam_rb``/``htam_wb``; ``[]`` for a single matrix; why not when a base or a
    check is not an integer polynomial (:func:`c_text`), or when a batched store is not checked against both
    sides (a slice's rows could then be split over the batch dimension, ``in[(r + blockIdx.z * K) * C + c]``)."""
    lines: list[str] = []
    if tp.batch and len({(b.lo, b.hi) for b in (*tp.bounds, *tp.loop_bounds)}) < 2:
        return ("a batched transpose without both checks row < rows and col < cols: the grid alone decides which "
                "elements of each slice are moved, which a tile loop over the whole slice would not keep")
    for b in tp.uniform_bounds:
        cond = c_condition(b.hi - b.lo, {}, "long long")
        if cond is None:
            return f"the check {b.lo} < {b.hi} is not spelled back"
        lines.append(f"if (!({cond})) return;  // the same for the whole block")
    for name, base in (("htam_rb", tp.read_base), ("htam_wb", tp.write_base)):
        if base == 0:
            continue
        spelled = c_text(base, {}, "long long")
        if spelled is None:
            return f"the base offset {base} is not spelled back"
        lines.append(f"const long long {name} = {spelled};  // this block's batch slice")
    return lines


def _orphan_locals(unit: CudaUnit, stmts: list[Node], write: Node) -> list[TextEdit]:
    """Edits removing the declarations among ``stmts`` that only the removed store ``write`` read, directly or
    through another such local (``int index_out = y + height * x;``): they would be left unused."""
    edits: list[TextEdit] = []
    gone = [write]
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if not syn.is_declaration(s) or any(g.start_byte == s.start_byte for g in gone):
                continue
            ds = [d for d in s.named_children if syn.is_init_declarator(d)]
            if len(ds) != 1:
                continue
            name = unit.t(ds[0].child_by_field_name("declarator"))
            uses = [r for r in references(unit.body, unit.src, name)
                    if not any(g.start_byte <= r.start_byte < g.end_byte for g in [*gone, s])]
            if references(write, unit.src, name) and not uses:
                gone.append(s)
                edits.append(unit.edit(syn.line_start(unit.src, s.start_byte), s.end_byte + 1, ""))
                changed = True
    return edits
