"""The last steps of a block's shared-memory sum: where a halving tree stops, and a warp-shuffle finish after it.

A tree ``for (s = blockDim.x / 2; s >= 32; s /= 2) { if (tid < s) sh[tid] += sh[tid + s]; __syncthreads(); }``
leaves the block's partial sums in ``sh[0 .. 31]`` (:func:`tree_left`); a warp then adds them with shuffles
(:func:`warp_finish`)::

    if (tid < 32) {
        float v = sh[tid];                      // or sh[tid] + sh[tid + 32] after a tree that leaves 64
        for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
        if (tid == 0) out[c] = v;               // lane 0 holds the block's total
    }

Read from nodes in one place for the transforms that replace such a total (``cuda.lane_columns``). Idea source:
M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007: the last warp unrolled), in the shuffle form of
the CUDA C++ Programming Guide, "Warp Shuffle Functions".
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import BUILTIN_CONSTANTS, literal_value
from htam_core.source.analysis.facts import LoopFact
from htam_core.source.analysis.forms import KernelView
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import statements


@dataclass(frozen=True)
class WarpFinish:
    """A warp-shuffle finish (module docstring).

    Attributes:
        write: the expression statement lane 0 runs (it reads ``var`` as the block's total).
        var: the variable the lanes sum (``v``).
        decl: its declaration, whose shared-memory reads are the partial sums the tree left.
    """

    write: Node
    var: str
    decl: Node


def tree_left(tree: LoopFact) -> int | None:
    """How many elements a halving tree ``for (s = blockDim.x / 2; s >= K; s /= 2)`` leaves holding partial sums:
    its last stride, the least power of two the condition admits (``>= 32`` and ``> 16`` leave 32; a tree to ``s >
    0`` leaves 1); ``None`` when the loop does not halve or its bound is not a constant."""
    if (tree.update, tree.step) not in (("/", 2), (">>", 1)) or tree.cmp not in (">", ">=") or \
            not getattr(tree.bound, "is_Integer", False):
        return None
    least = int(tree.bound) + (1 if tree.cmp == ">" else 0)  # type: ignore[arg-type]
    left = 1
    while left < least:
        left *= 2
    return left


def _is_thread_x(view: KernelView, node: Node | None) -> bool:
    """``node`` is the thread's index along x, in any spelling (:attr:`KernelFacts.thread_x_spans`)."""
    n = syn.unwrap_parens(node) if node is not None else None
    return n is not None and (view.file_byte(n), n.end_byte + view.base) in set(view.facts.thread_x_spans)


def _condition(st: Node) -> Node | None:
    c = syn.unwrap_parens(st.child_by_field_name("condition"))
    return syn.unwrap_parens(c.named_children[0]) if syn.is_condition_clause(c) else c


def _thread_compare(view: KernelView, st: Node, op: str, value: int) -> list[Node] | None:
    """The statements of ``if (tid op value) { … }`` without an else (``value`` a literal or ``warpSize``), else
    ``None``."""
    if not syn.is_if(st) or st.child_by_field_name("alternative") is not None:
        return None
    c = _condition(st)
    if not syn.is_binary(c) or view.t(c.child_by_field_name("operator")) != op:
        return None
    k = view.t(c.child_by_field_name("right")).strip()
    if not _is_thread_x(view, c.child_by_field_name("left")) or \
            (literal_value(k) if k not in BUILTIN_CONSTANTS else BUILTIN_CONSTANTS[k]) != value:
        return None
    return statements(st.child_by_field_name("consequence"))


def warp_finish(view: KernelView, st: Node, width: int = 32) -> WarpFinish | None:
    """The :class:`WarpFinish` that statement ``st`` is (``if (tid < width) { T v = …; <shuffle sum of v>; if (tid
    == 0) <write>; }``, :func:`shuffle_sum`), else ``None``."""
    body = _thread_compare(view, st, "<", width)
    if body is None or len(body) != 3 or not syn.is_declaration(body[0]) or not syn.is_for(body[1]):
        return None
    decls = syn.init_declarators(body[0])
    inner = _thread_compare(view, body[2], "==", 0)
    if len(decls) != 1 or inner is None or len(inner) != 1 or not syn.is_expression_statement(inner[0]):
        return None
    var = view.t(decls[0].child_by_field_name("declarator"))
    return WarpFinish(inner[0], var, body[0]) if shuffle_sum(view, body[1], var) else None


def shuffle_sum(view: KernelView, loop: Node, var: str) -> bool:
    """``loop`` is ``for (off = 16; off > 0; off /= 2) var += __shfl_down_sync(m, var, off);`` (or ``>>= 1``,
    ``off >= 1``, ``__shfl_xor_sync``): the 32 lanes' values summed into lane 0."""
    span = (view.file_byte(loop), loop.end_byte + view.base)
    fact = next((lp for lp in view.facts.loops if lp.span == span), None)
    if fact is None or fact.var is None or fact.start != 16 or (fact.update, fact.step) not in (("/", 2), (">>", 1)) \
            or (fact.cmp, fact.bound) not in ((">", 0), (">=", 1)):
        return False
    stmts = statements(loop.child_by_field_name("body"))
    sets = syn.assignments(stmts[0]) if len(stmts) == 1 and syn.is_expression_statement(stmts[0]) else []
    if len(sets) != 1 or view.t(sets[0].child_by_field_name("left")) != var or \
            view.t(sets[0].child_by_field_name("operator")) != "+=":
        return False
    call = syn.unwrap_parens(sets[0].child_by_field_name("right"))
    args = call.child_by_field_name("arguments") if syn.is_call(call) else None
    fn = view.t(call.child_by_field_name("function")) if args is not None else ""
    return fn in ("__shfl_down_sync", "__shfl_xor_sync") and args is not None and len(args.named_children) >= 3 \
        and view.t(args.named_children[1]) == var and view.t(args.named_children[2]) == fact.var
