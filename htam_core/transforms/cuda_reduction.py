"""CUDA reduction transforms: sequential addressing in a shared-memory tree reduction
(``cuda.sequential_addressing``).

The interleaved tree::

    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }

becomes sequential addressing::

    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }

The active threads stay contiguous (whole warps retire instead of diverging) and the shared accesses of a
warp hit consecutive words (no bank conflicts). Both trees leave the combination of all ``blockDim.x``
inputs in ``sdata[0]``; the other entries differ, so the array may be read only at ``[0]`` after the loop.
The strided-index form (``int index = 2 * s * tid; if (index < blockDim.x) sdata[index] += ...``)
is rewritten the same way.

The guard may hold several combines, one per shared array, all indexed alike (a min and a max, or a sum and a sum
of squares, reduced by one loop: ``smin[tid] = fminf(smin[tid], smin[tid + s]); smax[tid] = fmaxf(...);``); each
array is its own tree, so every combine is kept as written and only the loop and the guard change. Arrays that are
views of one buffer (``float *smax = smem + blockDim.x;``) must not share an entry within the tree (the analysis
layer's :func:`~htam_core.source.analysis.views.overlapping_views`). A combine may also be a max or min written as a
comparison and a choice (``sdata[tid] = sdata[tid + s] > sdata[tid] ? sdata[tid + s] : sdata[tid];`` or ``if
(sdata[tid + s] > sdata[tid]) sdata[tid] = sdata[tid + s];``, the analysis layer's
:func:`~htam_core.source.analysis.select.select_step`); its comparison stays as written.

A tree over ``blockDim.x`` needs no known launch: for a block size ``B`` that is not a power of two the
interleaved tree reads ``sdata[B]``, past the block's values (``B = 2^k * m``, ``m > 1`` odd: at ``s = 2^k`` the
thread ``tid = B - 2^k`` is a multiple of ``2s`` and reads ``sdata[B]``), so it is defined only for power-of-two
blocks, where the two trees agree. The step is therefore made for a block size known only at run time and for
a kernel launched from another file; a tree over a constant ``N`` still needs launches whose block is ``N``. The order of the combines changes, so float sums may differ in the last bits.

Idea source: Mark Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007), kernels 1-3.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.counted import CountedLoop, counted_loop
from htam_core.source.analysis.facts import sym
from htam_core.source.analysis.forms import builtin_field, cond_parts, is_lvalue
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.select import Selection, select_step
from htam_core.source.analysis.views import overlapping_views
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, references, statement_list, statement_span
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_loops import model_line
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: Two-argument combines that are associative and commutative (so the tree may pair elements differently).
COMBINE_FUNCS = ("fmaxf", "fminf", "fmax", "fmin", "max", "min")
_HALVING = ("s >>= 1", "s /= 2", "s = s >> 1", "s = s / 2")


@dataclass(frozen=True)
class Combine:
    """One combine statement of a tree step: ``array[i] = op(array[i], array[i + s])`` (or ``+=``).

    Attributes:
        array: the shared array (``sdata``).
        op: ``"+"``, one of :data:`COMBINE_FUNCS`, or ``"max"``/``"min"`` for a selection.
        stmt: the combine statement as written.
        select: for a combine written as a comparison and a choice (``s[i] = s[i + k] > s[i] ? s[i + k] : s[i];``
            or ``if (s[i + k] > s[i]) s[i] = s[i + k];``, read by the analysis layer's
            :func:`~htam_core.source.analysis.select.select_step`), its :class:`Selection`, else ``None``.
    """

    array: str
    op: str
    stmt: Node
    select: Selection | None = None

    def expr(self, acc: str, cand: str) -> str:
        """The C expression combining ``acc`` (the element kept, ``array[i]``) with ``cand`` (``array[i + s]``) as
        the original does: ``acc + cand``, ``fmaxf(acc, cand)``, or the selection with its own comparison (both
        arguments are C expressions; a selection reads them twice, so they must be free of side effects)."""
        if self.select is not None:
            return self.select.combine(acc, cand)
        return f"{acc} + {cand}" if self.op == "+" else f"{self.op}({acc}, {cand})"


@dataclass
class Tree:
    """One interleaved shared-memory tree loop that can take sequential addressing.

    Attributes:
        loop: the loop statement (``for``, or a ``while``/``do`` loop read as counted).
        var: the loop variable (``s``).
        type: its declared type as written (``"unsigned int"``).
        bound: the loop bound expression (``blockDim.x`` or a constant such as ``THREADS``).
        bound_value: the bound's value when it is a compile-time constant, else ``None`` (``blockDim.x``).
        cond: the guard's condition expression (inside the parentheses of the ``if``).
        tid: the thread index's key: :data:`THREAD_X` for the thread's index along x in any spelling, else the
            name written (refused by :func:`_tid_problem`).
        combines: the guard's combines (:class:`Combine`), one per shared array, in source order (a min and a
            max, or a sum and a sum of squares, reduced by one loop).
        index_decl: the ``int index = 2 * s * tid;`` declaration of the strided form, else ``None``.
        index: the strided index variable, else ``None``.
        tid_text: how the guard spells the thread index (``tid``, ``threadIdx.x``, ``cta.thread_rank()``), the
            spelling the edits write.
        counted: the loop's parts (:class:`~htam_core.source.analysis.counted.CountedLoop`: a ``for``, ``while`` or
            ``do`` form).
    """

    loop: Node
    var: str
    type: str
    bound: Node
    bound_value: int | None
    cond: Node
    tid: str
    combines: list[Combine]
    index_decl: Node | None = None
    index: str | None = None
    tid_text: str = "threadIdx.x"
    counted: CountedLoop | None = None

    @property
    def array(self) -> str:
        """The first combine's shared array (the only one of a one-array tree)."""
        return self.combines[0].array

    @property
    def combine(self) -> str:
        """The first combine's operation (:attr:`Combine.op`)."""
        return self.combines[0].op


def _strip(node: Node) -> Node:
    return syn.unwrap_parens(node)


#: The key of the thread's index along x in every spelling (:meth:`KernelFacts.is_thread_x`): ``threadIdx.x``,
#: ``tid`` holding it, ``cta.thread_rank()``, ``block.thread_index().x``.
THREAD_X = "threadIdx.x"


def _is_thread_x(unit: CudaUnit, node: Node) -> bool:
    """``node`` (parentheses stripped) is the thread's index along x: the analysis layer's normal form."""
    node = _strip(node)
    return unit.facts.is_thread_x((unit.file_byte(node), node.end_byte + unit.base))


def _ident(unit: CudaUnit, node: Node | None, name: str | None = None) -> bool:
    """``node`` is an identifier (spelled ``name`` when given), or, for ``name`` :data:`THREAD_X`, the thread's
    index along x in any spelling."""
    if node is None:
        return False
    node = _strip(node)
    if name == THREAD_X:
        return _is_thread_x(unit, node)
    if name is not None and "." in name:
        return builtin_field(unit, node) == name
    return syn.is_identifier(node) and (name is None or unit.t(node) == name)


def _operand(unit: CudaUnit, node: Node) -> str | None:
    """:data:`THREAD_X` for the thread's index along x (any spelling), the name of another identifier operand, the
    builtin it is (``threadIdx.y``), else ``None``."""
    node = _strip(node)
    if _is_thread_x(unit, node):
        return THREAD_X
    if syn.is_identifier(node):
        return unit.t(node)
    return builtin_field(unit, node)


def tid_text(unit: CudaUnit, node: Node) -> str:
    """How an edit spells the thread index ``node`` (its text, parentheses stripped, on one line)."""
    return " ".join(unit.t(_strip(node)).split())


def _binary(unit: CudaUnit, node: Node, ops: tuple[str, ...]) -> tuple[str, Node, Node] | None:
    node = _strip(node)
    if not syn.is_binary(node):
        return None
    op = unit.t(node.child_by_field_name("operator"))
    if op not in ops:
        return None
    return op, node.child_by_field_name("left"), node.child_by_field_name("right")


def _is_int(unit: CudaUnit, node: Node, value: int) -> bool:
    c = unit.resolve(node, unit.func)
    return c is not None and c.value == value


def _is_two_s(unit: CudaUnit, node: Node, s: str) -> bool:
    """``2 * s``, ``s * 2``, ``s << 1`` or ``s + s``."""
    b = _binary(unit, node, ("*", "<<", "+"))
    if b is None:
        return False
    op, left, right = b
    if op == "*":
        return (_ident(unit, left, s) and _is_int(unit, right, 2)) or (
            _ident(unit, right, s) and _is_int(unit, left, 2)
        )
    if op == "<<":
        return _ident(unit, left, s) and _is_int(unit, right, 1)
    return _ident(unit, left, s) and _ident(unit, right, s)


def _multiple_test(unit: CudaUnit, node: Node, s: str) -> Node | None:
    """The tid operand of ``tid % (2*s)`` or ``tid & (2*s - 1)`` (a name or the thread index in any spelling),
    else ``None``."""
    b = _binary(unit, node, ("%", "&"))
    if b is None:
        return None
    op, left, right = b
    if _operand(unit, left) is None:
        return None
    if op == "%" and _is_two_s(unit, right, s):
        return _strip(left)
    minus = _binary(unit, right, ("-",)) if op == "&" else None
    if minus is not None and _is_two_s(unit, minus[1], s) and _is_int(unit, minus[2], 1):
        return _strip(left)
    return None


def _interleaved_guard(unit: CudaUnit, cond: Node, s: str) -> Node | None:
    """The tid operand of ``tid % (2*s) == 0``, ``(tid & (2*s-1)) == 0`` or ``!(tid % (2*s))``, else None.

    ``tid & (2*s-1) == 0`` without parentheses parses as ``tid & ((2*s-1) == 0)`` (C precedence) and does
    not match.
    """
    cond = _strip(cond)
    if syn.is_unary(cond) and unit.t(cond.child_by_field_name("operator")) == "!":
        return _multiple_test(unit, cond.child_by_field_name("argument"), s)
    b = _binary(unit, cond, ("==",))
    if b is None:
        return None
    _, left, right = b
    if _is_int(unit, right, 0):
        return _multiple_test(unit, left, s)
    if _is_int(unit, left, 0):
        return _multiple_test(unit, right, s)
    return None


def _strided_index(unit: CudaUnit, value: Node, s: str) -> Node | None:
    """The tid operand of ``2 * s * tid`` (factors in any order and grouping; tid a name or the thread index in
    any spelling), else ``None``."""
    factors: list[Node] = []
    stack = [value]
    while stack:
        n = _strip(stack.pop())
        b = _binary(unit, n, ("*",))
        if b is None:
            factors.append(n)
        else:
            stack.extend((b[1], b[2]))
    if len(factors) != 3 or sum(_is_int(unit, f, 2) for f in factors) != 1:
        return None
    named = [(_operand(unit, f), f) for f in factors if not _is_int(unit, f, 2)]
    if len(named) != 2 or [n for n, _ in named].count(s) != 1 or None in [n for n, _ in named]:
        return None
    return next(f for n, f in named if n != s)


def _subscript(unit: CudaUnit, node: Node) -> tuple[str, Node] | None:
    """``(array, index)`` for ``array[index]``, else ``None``."""
    node = _strip(node)
    if not syn.is_subscript(node):
        return None
    arg, idx = node.child_by_field_name("argument"), node.child_by_field_name("indices")
    if arg is None or not syn.is_identifier(arg) or idx is None:
        return None
    inner = idx.named_children if syn.is_subscript_arguments(idx) else [idx]
    if len(inner) != 1:
        return None
    return unit.t(arg), inner[0]


def _is_at(unit: CudaUnit, node: Node, array: str, idx: str) -> bool:
    sub = _subscript(unit, node)
    return sub is not None and sub[0] == array and _ident(unit, sub[1], idx)


def _is_at_plus_s(unit: CudaUnit, node: Node, array: str, idx: str, s: str) -> bool:
    sub = _subscript(unit, node)
    if sub is None or sub[0] != array:
        return False
    b = _binary(unit, sub[1], ("+",))
    if b is None:
        return False
    names = sorted(n for n in (_operand(unit, x) for x in b[1:]) if n is not None)
    return names == sorted([idx, s])


def _not_reorderable(text: str, op: str) -> str:
    return (f"the combine `{text}` uses {op}, which is not associative and commutative "
            f"(only +, {', '.join(COMBINE_FUNCS)} can be reordered)")


def _selection(unit: CudaUnit, stmt: Node, key: str, s: str) -> Combine | None:
    """The combine ``A[idx] = A[idx + s] > A[idx] ? A[idx + s] : A[idx]`` (any comparison and branch order, or the
    statement form ``if (A[idx + s] > A[idx]) A[idx] = A[idx + s];``) read as a max/min, else ``None``."""
    step = select_step(unit.src, stmt, element=True)
    sub = _subscript(unit, step.target) if step is not None and step.target is not None else None
    if step is None or sub is None or not _ident(unit, sub[1], key):
        return None
    if not _is_at_plus_s(unit, step.candidate, sub[0], key, s):
        return None
    return Combine(sub[0], step.selection.kind, step.stmt, step.selection)


def _combine(unit: CudaUnit, stmt: Node, idx: str, s: str, shown: str | None = None) -> Combine | str:
    """The :class:`Combine` of ``A[idx] += A[idx + s]``, ``A[idx] = A[idx] + A[idx + s]``,
    ``A[idx] = f(A[idx], A[idx + s])`` with ``f`` in :data:`COMBINE_FUNCS`, or a max/min written as a comparison
    and a choice (:func:`_selection`); else why not. ``idx`` is a name or :data:`THREAD_X` (any spelling of the
    thread index); ``shown`` is how a refusal spells it (``idx`` when ``None``)."""
    key, idx = idx, shown or idx
    text = " ".join(unit.t(stmt).split())
    sel = _selection(unit, stmt, key, s)
    if sel is not None:
        return sel
    expr = stmt.named_children[0] if syn.is_expression_statement(stmt) and stmt.named_children else None
    if expr is None or not syn.is_assignment(expr):
        return f"the guarded statement `{text}` is not a combine `sdata[{idx}] += sdata[{idx} + {s}]`"
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    op = unit.t(expr.child_by_field_name("operator"))
    sub = _subscript(unit, left)
    if sub is None or not _ident(unit, sub[1], key):
        return f"the guarded statement `{text}` does not write `array[{idx}]`"
    array = sub[0]
    if op != "=" and op != "+=":
        return _not_reorderable(text, op)
    if op == "+=" and _is_at_plus_s(unit, right, array, key, s):
        return Combine(array, "+", stmt)
    kind = _pair_kind(unit, right, array, key, s) if op == "=" else None
    if kind is not None and (kind == "+" or kind in COMBINE_FUNCS):
        return Combine(array, kind, stmt)
    if kind is not None:
        return _not_reorderable(text, kind)
    return (
        f"the guarded statement `{text}` is not `{array}[{idx}] += {array}[{idx} + {s}]` "
        f"or a {'/'.join(COMBINE_FUNCS)} of the two (or a comparison choosing one)"
    )


def _pair_kind(unit: CudaUnit, right: Node, array: str, key: str, s: str) -> str | None:
    """The operator or function of ``right`` when it is ``A[idx] op A[idx + s]`` or ``f(A[idx], A[idx + s])`` (either
    order), else ``None``."""
    r = _strip(right)
    pair: list[Node] = []
    kind = ""
    b = _binary(unit, r, ("+", "-", "*", "/"))
    if b is not None:
        kind, pair = b[0], [b[1], b[2]]
    elif syn.is_call(r) and r.child_by_field_name("arguments") is not None:
        kind = unit.t(r.child_by_field_name("function"))
        pair = list(r.child_by_field_name("arguments").named_children)
    if len(pair) == 2 and any(_is_at(unit, x, array, key) for x in pair) and any(
            _is_at_plus_s(unit, x, array, key, s) for x in pair):
        return kind
    return None


def guard_combines(unit: CudaUnit, cons: Node | None, idx: str, s: str,
                   shown: str | None = None) -> list[Combine] | str:
    """The combines a tree step's guard holds (its consequence ``cons``, braces or not): every statement a
    :func:`_combine` of its own shared array, no array twice; else why not (``idx``, ``s``, ``shown`` as there)."""
    inner = statement_list(cons) if cons is not None and syn.is_block(cons) else [cons]
    if not inner or inner[0] is None:
        return "the guard holds no combine statement"
    combs: list[Combine] = []
    for st in inner:
        c = _combine(unit, st, idx, s, shown)
        if isinstance(c, str):
            return c
        if any(c.array == o.array for o in combs):
            return f"the guard combines {c.array} twice in one step"
        combs.append(c)
    return combs


def combines_problem(unit: CudaUnit, loop: Node, combs: list[Combine], bound_value: int | None) -> str | None:
    """Why the combines of the tree ``loop`` (over ``bound_value`` elements, ``None`` for ``blockDim.x``) cannot be
    rewritten: one of their arrays is used after the loop other than at ``[0]`` (:func:`_read_after`), or two of
    them may share memory (views of one buffer that overlap: the analysis layer's
    :func:`~htam_core.source.analysis.views.overlapping_views`); else ``None``."""
    why = next((w for w in (_read_after(unit, loop, c.array) for c in combs) if w), None)
    if why or len(combs) < 2:
        return why
    extent = sym("blockDim.x") if bound_value is None else sympy.Integer(bound_value)
    both = overlapping_views(unit.facts, [c.array for c in combs], extent)
    if both is None:
        return None
    return (f"{both[0]} and {both[1]} may share shared-memory entries within the tree's {extent} elements, so a "
            "rewrite could not keep each array's result")


def _is_sync(unit: CudaUnit, stmt: Node) -> bool:
    """``stmt`` is a block-wide barrier statement however spelled (``__syncthreads();``, ``cg::sync(cta);``,
    ``cta.sync();``): the analysis layer's barrier fact (:meth:`KernelFacts.is_block_barrier`); ``__syncwarp();``
    is not one."""
    return unit.facts.is_block_barrier((unit.file_byte(stmt), stmt.end_byte + unit.base))


def _tid_problem(unit: CudaUnit, tid: str) -> str | None:
    """Why ``tid`` is neither ``threadIdx.x`` itself nor a local that always holds it (the analysis layer's
    :meth:`~htam_core.source.analysis.KernelFacts.builtin_alias`), or ``None``."""
    if tid == THREAD_X or unit.facts.builtin_alias(tid) == "threadIdx.x":
        return None
    if "." in tid:
        return f"the tree indexes with {tid}, not with the thread's index along x (threadIdx.x)"
    inits = unit.local_inits(unit.body, tid)
    if len(inits) != 1:
        return f"{tid} is not a local variable initialised once to threadIdx.x"
    if builtin_field(unit, inits[0]) != "threadIdx.x":
        return f"{tid} is initialised to `{unit.t(inits[0])}`, not threadIdx.x"
    if unit.assigned_in(unit.body, tid):
        return f"{tid} is modified after its declaration"
    return None


def _header(unit: CudaUnit, loop: Node) -> tuple[str, str, Node] | str:
    """``(var, type, init value)`` of a counted loop: ``for (T s = A; ...)``, or a ``while``/``do`` loop the analysis
    layer reads as one (``T s = A; do { ...; s <<= 1; } while (...);``: :func:`counted_loop`), else why not."""
    cl = counted_loop(unit, loop)
    return cl if isinstance(cl, str) else (cl.var, cl.type, cl.init)


def loop_edits(unit: CudaUnit, cl: CountedLoop, header: str) -> list[TextEdit]:
    """The edits that give the counted loop ``cl`` the ``for`` header ``header`` (the text between the parentheses,
    ``unsigned s = N / 2; s > 0; s >>= 1``), the header's edit first. A ``for`` loop's header is replaced in place; a
    ``while``/``do`` loop becomes that ``for`` loop: its keyword and condition become the header, and the
    initialisation before it and the update at the end of its body go (the analysis layer has checked that its
    variable is named nowhere else)."""
    loop = cl.loop
    if cl.kind == "for":
        init, upd = loop.child_by_field_name("initializer"), loop.child_by_field_name("update")
        return [unit.edit(init.start_byte, upd.end_byte, header)]
    body = loop.child_by_field_name("body")
    edits = [unit.edit(loop.start_byte, body.start_byte, f"for ({header}) ")]
    if cl.kind == "do":
        edits.append(unit.edit(body.end_byte, loop.end_byte, ""))
    for st in (cl.init_stmt, cl.update_stmt):
        if st is not None:
            a, b = statement_span(unit, st)
            edits.append(unit.edit(a, b, ""))
    return edits


def _norm(unit: CudaUnit, node: Node | None, var: str) -> str:
    """Text of ``node`` without spaces, with ``var`` renamed to ``s`` (for comparing simple forms)."""
    if node is None:
        return ""
    src = unit.t(node)
    base = node.start_byte
    out, pos = [], 0
    for ref in references(node, unit.src, var):
        out.append(src[pos : ref.start_byte - base])
        out.append("s")
        pos = ref.end_byte - base
    out.append(src[pos:])
    return "".join(out).replace(" ", "")


def tree_bound(unit: CudaUnit, bound: Node) -> tuple[bool, int | None]:
    """``(known, value)`` of a tree's extent: ``(True, None)`` for ``blockDim.x`` (or a local that always holds it,
    ``int block_size = blockDim.x;``, or a 1-D thread block's ``block.size()``: the analysis layer's
    :meth:`~htam_core.source.analysis.KernelFacts.is_block_dim_x`), ``(True, v)`` for a compile-time constant ``v`` (a template parameter bound at
    the launch, ``BLOCK`` of ``k<T, 256><<<...>>>``, included: the analysis layer's constants), ``(False, None)``
    otherwise."""
    name = unit.t(_strip(bound)) if syn.is_identifier(_strip(bound)) else None
    if builtin_field(unit, bound) == "blockDim.x" or (name and unit.facts.builtin_alias(name) == "blockDim.x") or \
            unit.facts.is_block_dim_x((unit.file_byte(_strip(bound)), _strip(bound).end_byte + unit.base)):
        return True, None
    c = unit.resolve(bound, unit.func)
    if c is None and name is not None and unit.facts.constant(name) is not None:
        return True, unit.facts.constant(name)
    return (c is not None), (c.value if c is not None else None)


def match_tree(unit: CudaUnit, loop: Node) -> Tree | str:
    """Match an interleaved shared-memory tree loop (see the module docstring), or say why it is not one."""
    cl = counted_loop(unit, loop)
    if isinstance(cl, str):
        return cl
    s, typ, init, cond, upd = cl.var, cl.type, cl.init, cl.cond, cl.update
    cond_s, upd_s = _norm(unit, cond, s), _norm(unit, upd, s)
    if cond_s in ("s>0", "0<s", "s!=0", "s>=1") and upd_s in {h.replace(" ", "") for h in _HALVING}:
        return f"the loop already uses sequential addressing ({s} halves down to 1)"
    if not _is_int(unit, init, 1):
        return f"the loop variable {s} starts at `{unit.t(init)}`, not at 1 as in an interleaved tree"
    parts = cond_parts(unit, cond) if cond is not None else None
    if parts is None or parts[0] != s or parts[1] != "<":
        return f"the loop condition `{unit.t(cond)}` is not `{s} < blockDim.x` or `{s} < N`"
    bound = _strip(parts[2])
    known, bound_value = tree_bound(unit, bound)
    if not known:
        return f"the loop bound `{unit.t(bound)}` is neither blockDim.x nor a compile-time constant"
    if upd_s not in ("s*=2", "s<<=1", "s=s*2", "s=2*s", "s=s<<1", "s+=s", "s=s+s"):
        return f"the loop update `{unit.t(upd)}` does not double {s}"
    stmts = tree_body(unit, cl)
    if len(stmts) not in (2, 3) or not _is_sync(unit, stmts[-1]) or not syn.is_if(stmts[-2]):
        return "the loop body is not exactly a guarded combine followed by a block barrier (__syncthreads();)"
    guard = stmts[-2]
    if guard.child_by_field_name("alternative") is not None:
        return "the guard has an else branch"
    clause = guard.child_by_field_name("condition")
    gcond = clause.child_by_field_name("value") if clause is not None else None
    if gcond is None:
        return "the guard has no plain condition"
    index_decl = index = None
    if len(stmts) == 3:
        index_decl = stmts[0]
        head2 = _header_decl(unit, index_decl)
        if head2 is None:
            return "the loop body is not exactly a guarded combine followed by a block barrier (__syncthreads();)"
        index, value = head2
        tid_node = _strided_index(unit, value, s)
        if tid_node is None:
            return f"`{unit.t(index_decl)}` is not the strided index `{index} = 2 * {s} * tid`"
        gparts = cond_parts(unit, gcond)
        if gparts is None or gparts[0] != index or gparts[1] != "<" or _norm(unit, gparts[2], s) != _norm(
            unit, bound, s
        ):
            return f"the guard `{unit.t(gcond)}` is not `{index} < {unit.t(bound)}`"
        idx = index
    else:
        found = _interleaved_guard(unit, gcond, s)
        if found is None:
            why = f"the guard `{unit.t(gcond)}` is not `tid % (2 * {s}) == 0`"
            amp = _binary(unit, gcond, ("&",))
            if amp is not None and _binary(unit, amp[2], ("==",)) is not None:
                why += " (`a & b == 0` parses as `a & (b == 0)`; parenthesize `(a & b) == 0`)"
            return why
        tid_node = found
        idx = _operand(unit, found) or ""
    combs = guard_combines(unit, guard.child_by_field_name("consequence"), idx, s,
                           None if index_decl is not None else tid_text(unit, tid_node))
    if isinstance(combs, str):
        return combs
    tid = _operand(unit, tid_node) or ""
    why = _tid_problem(unit, tid) or combines_problem(unit, loop, combs, bound_value)
    if why:
        return why
    return Tree(loop, s, typ, bound, bound_value, gcond, tid, combs, index_decl, index, tid_text(unit, tid_node), cl)


def tree_body(unit: CudaUnit, cl: CountedLoop) -> list[Node]:
    """The statements of the counted loop ``cl``'s body without a ``while``/``do`` loop's update at its end (what a
    ``for`` loop's body holds)."""
    body = cl.loop.child_by_field_name("body")
    stmts = statement_list(body) if body is not None and syn.is_block(body) else []
    return [st for st in stmts if st != cl.update_stmt]


def _header_decl(unit: CudaUnit, decl: Node) -> tuple[str, Node] | None:
    """``(name, value)`` of a one-variable declaration ``T name = value;``."""
    if not syn.is_declaration(decl):
        return None
    ds = [d for d in decl.named_children if syn.is_init_declarator(d)]
    if len(ds) != 1 or not _ident(unit, ds[0].child_by_field_name("declarator")):
        return None
    value = ds[0].child_by_field_name("value")
    return (unit.t(ds[0].child_by_field_name("declarator")), value) if value is not None else None


def _read_after(unit: CudaUnit, loop: Node, array: str) -> str | None:
    """Why ``array`` is used after ``loop`` other than as ``array[0]`` (the two trees differ elsewhere)."""
    for ref in references(unit.body, unit.src, array):
        if ref.start_byte < loop.end_byte:
            continue
        p = ref.parent
        sub = _subscript(unit, p) if p is not None else None
        at_zero = sub is not None and p.child_by_field_name("argument") == ref and _is_int(unit, sub[1], 0)
        if not at_zero or is_lvalue(p):
            return (
                f"{array} is used after the tree as `{unit.t(p) if p is not None else array}`; sequential "
                f"addressing leaves other partial values outside {array}[0]"
            )
    return None


def _launch_problem(unit: CudaUnit, bound_value: int | None,
                    runtime_ok: bool = False) -> tuple[str | None, list[int | None]]:
    """Why a launch of the kernel has no compile-time power-of-two 1-D block equal to a constant bound.

    With ``runtime_ok``, a 1-D block whose size is not a compile-time constant (``<<<grid, block_size>>>`` with
    ``block_size`` a launcher argument) is accepted when the tree runs over ``blockDim.x`` (``bound_value`` is
    ``None``); its size is ``None`` in the list, and the caller's edit must hold for any such block (a guard at
    run time, or an argument that it does). A kernel with no launch in the file is then accepted the same way,
    with ``[None]``: its block is known only at run time.

    Returns:
        ``(reason, [])`` on a problem, else ``(None, threads per block of each launch)``.
    """
    need = "sequential addressing needs a power-of-two block"
    if not unit.launches:
        if runtime_ok and bound_value is None:
            return None, [None]
        return f"the block size is unknown (no launch in this file); {need}", []
    sizes: list[int | None] = []
    for la in unit.launches:
        line = la.site.line
        dims = unit.block_dims(la)
        threads = unit.block_threads(la)
        if dims and any((d.const is None and runtime_ok) or (d.const is not None and d.const.value != 1)
                        for d in dims[1:]):
            return f"the launch on line {line} has a multi-dimensional block", []
        if dims and threads is None and runtime_ok and bound_value is None:
            sizes.append(None)
            continue
        if dims is None or threads is None:
            if dims and bound_value is not None and runtime_ok:
                return (f"the tree runs to {bound_value} but the block of the launch on line {line} is not a "
                        "compile-time constant"), []
            return f"the block of the launch on line {line} is not a compile-time constant; {need}", []
        if threads <= 0 or threads & (threads - 1):
            why = f"the launch on line {line} uses {threads} threads per block, not a power of two"
            return f"{why}; {need}", []
        if bound_value is not None and threads != bound_value:
            why = f"the tree runs to {bound_value} but the launch on line {line} has {threads} threads/block"
            return why, []
        sizes.append(threads)
    return None, sizes


_INT_TYPES = {
    "int", "unsigned", "unsigned int", "signed", "signed int", "long", "long long", "unsigned long",
    "unsigned long long", "short", "unsigned short", "char", "unsigned char", "int8_t", "int16_t", "int32_t",
    "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t",
}


def element_type(unit: CudaUnit, array: str) -> str | None:
    """The declared element type of array ``array`` (kernel body first, then file level), else ``None``; a local
    pointer that the analysis layer reads as a shared array (``T *sdata = SharedMemory<T>();``) has its pointee
    type."""
    alias = unit.facts.pointer_alias(array)  # a view into a shared buffer (`float *smax = smem + blockDim.x;`)
    base = alias.pointer if alias is not None and not alias.vector else array
    shared_ptr = any(a.pointer in (array, base) and a.space == "shared" for a in unit.facts.accesses)
    for scope in (unit.body, unit.root):
        for decl in syn.declarations(scope):
            for d in decl.children_by_field_name("declarator"):
                while syn.is_declarator_around_name(d, pointers=shared_ptr):
                    d = d.child_by_field_name("declarator")
                if d is not None and syn.is_identifier(d) and unit.t(d) == array:
                    return " ".join(unit.t(decl.child_by_field_name("type")).split())
    return None


def _combines_note(combs: list[Combine]) -> str:
    """What a description adds for a tree of several arrays, or of a combine written as a comparison: the arrays
    reduced together, and that such a comparison keeps or drops a NaN by where it meets it (only inputs without
    NaN give the same extreme in any pairing)."""
    note = ""
    if len({c.array for c in combs}) > 1:
        note += f"; every step combines {', '.join(dict.fromkeys(c.array for c in combs))} together"
    if any(c.select is not None for c in combs):
        note += "; the comparison is kept as written (inputs without NaN get the same extreme)"
    return note


def _bound_text(unit: CudaUnit, bound: Node) -> str:
    text = unit.t(bound)
    if syn.is_simple_operand(bound):
        return text
    return f"({text})"


@register
class CudaSequentialAddressing(CudaTransform):
    """Sequential addressing in a shared-memory tree reduction (``tid % (2*s) == 0`` -> ``tid < s``)."""

    id = "cuda.sequential_addressing"
    languages = CUDA_LANGS
    changes_numerics = True
    reorders_only = True  # the same tree of additions, paired differently
    summary = "sequential addressing in a shared-memory tree reduction (no divergence, no bank conflicts)"

    def refusal_fact(self, unit: CudaUnit, kernel: Kernel, reason: str) -> str | None:
        """A kernel with no shared-memory tree at all is refused by that fact first, the step's precondition
        (:meth:`~htam_core.source.analysis.KernelFacts.no_shared_tree`), with the transform's own reason after."""
        no_tree = unit.facts.no_shared_tree()
        return f"{no_tree}; {reason}" if no_tree else None

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate rewriting every interleaved tree loop directly in the kernel body.

        Refuses when there is no such loop, the combine is not associative and commutative, ``tid`` is
        not ``threadIdx.x``, or some launch in the file does not use a compile-time power-of-two block.
        """
        loops = [s for s in statement_list(unit.body) if syn.is_loop(s)]
        if not loops:
            return self.not_applicable(f"{kernel.name} has no loop directly in its body")
        trees: list[Tree] = []
        skipped = []
        for loop in loops:
            m = match_tree(unit, loop)
            if isinstance(m, str):
                skipped.append(f"line {model_line(model.text, unit.base + loop.start_byte)}: {m}")
            else:
                trees.append(m)
        if not trees:
            why = "no interleaved shared-memory tree loop qualifies: " + "; ".join(skipped)
            return self.not_applicable(why)
        bounds = {t.bound_value for t in trees if t.bound_value is not None}
        if len(bounds) > 1:
            return self.not_applicable(f"the tree loops run to different bounds {sorted(bounds)}")
        # A tree over blockDim.x is defined only for power-of-two blocks (module docstring), so a block known
        # only at run time, or a kernel launched from another file, takes the same edit.
        why, sizes = _launch_problem(unit, next(iter(bounds), None), runtime_ok=not bounds)
        if why:
            return self.not_applicable(why)
        edits: list[TextEdit] = []
        lines = []
        for t in trees:
            edits.extend(self._edits(unit, t))
            lines.append(model_line(model.text, unit.base + t.loop.start_byte))
        ops = sorted({c.op for t in trees for c in t.combines})
        sums = any(c.op == "+" and element_type(unit, c.array) not in _INT_TYPES for t in trees for c in t.combines)
        where = ("line " if len(lines) == 1 else "lines ") + ", ".join(str(x) for x in lines)
        desc = (
            f"sequential addressing in the shared-memory tree of {kernel.name} ({where}): the stride halves "
            f"from the block size and threads {trees[0].tid_text} < {trees[0].var} combine: active threads stay "
            "contiguous (no divergence inside warps) and shared accesses are conflict-free"
        )
        desc += (
            "; the float additions happen in a different order, so the sum may differ in the last bits"
            if sums
            else f"; {'/'.join(ops)} on these types is exact in any order"
        )
        desc += _combines_note([c for t in trees for c in t.combines])
        cand = self.candidate(
            model,
            desc,
            {
                "loops": [
                    {"line": ln, "bound": t.bound_value if t.bound_value is not None else "blockDim.x",
                     "combine": "/".join(c.op for c in t.combines), "form": "strided" if t.index else "interleaved",
                     **({"arrays": [c.array for c in t.combines]} if len(t.combines) > 1 else {})}
                    for ln, t in zip(lines, trees, strict=True)
                ],
                "block": sorted({n for n in sizes if n is not None}) if None not in sizes else "runtime",
            },
            edits,
        )
        cand.changes_numerics = cand.reorders_only = sums  # more terms per thread before the tree: order only
        return [cand]

    @staticmethod
    def _edits(unit: CudaUnit, t: Tree) -> list[TextEdit]:
        s = t.var
        header = f"{t.type} {s} = {_bound_text(unit, t.bound)} / 2; {s} > 0; {s} >>= 1"
        cl = t.counted if t.counted is not None else counted_loop(unit, t.loop)
        assert not isinstance(cl, str), cl
        edits = [*loop_edits(unit, cl, header), unit.replace(t.cond, f"{t.tid_text} < {s}")]
        if t.index_decl is not None and t.index is not None:
            a, b = statement_span(unit, t.index_decl)
            edits.append(unit.edit(a, b, ""))
            for c in t.combines:
                edits.extend(unit.replace(ref, t.tid_text) for ref in references(c.stmt, unit.src, t.index))
        return edits
