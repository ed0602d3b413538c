"""Warp-shuffle finish of a shared-memory tree reduction (``cuda.warp_shuffle_finish``).

The sequential-addressing tree::

    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }

stops at ``s > 32`` and the last six steps run in the first warp, in registers::

    if (tid < 32) {
        float htam_v = sdata[tid] + sdata[tid + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (tid == 0) sdata[0] = htam_v;
    }
    __syncthreads();

Lane ``t`` combines with lane ``t + o`` exactly as thread ``t`` combined with ``sdata[t + s]`` for ``s = o``, so
``sdata[0]`` gets the same value in the same combine order (bitwise the same sums), with five barriers and ten
shared-memory round trips fewer. An interleaved tree (``tid % (2 * s) == 0``) is given sequential addressing in
the same edit (as ``cuda.sequential_addressing`` does; then the float sums change order). The block must be a
compile-time power of two of at least 64 threads, and the tree must run over the whole block.

The tree may be written over a local that holds ``blockDim.x`` (``int block_size = blockDim.x;``, a fact of the
analysis layer), over a template parameter bound at the launch, with ``threadIdx.x`` itself as the thread
variable, and with the barrier opening each step (``__syncthreads(); if (tid < s) ...``; the finish then
synchronizes the last step first). When the block size is known only at run time (a launcher argument, or a
kernel launched from another file) and the tree runs over ``blockDim.x``, the edit is guarded by the block-uniform test ``B >= 64 && (B & (B - 1)) == 0``:
the loop stops at 32 and the warp finishes only where it holds; any other block runs the whole tree as before.

Idea source: Mark Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007), kernel 5 (unrolling the last
warp); NVIDIA developer blog, "Faster Parallel Reductions on Kepler" (Luitjens, 2014), warp shuffles.
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, statement_list
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_loops import model_line
from htam_core.transforms.cuda_reduction import (
    _HALVING,
    CudaSequentialAddressing,
    _combine,
    _header,
    _is_sync,
    _launch_problem,
    _norm,
    _operand,
    _read_after,
    _tid_problem,
    element_type,
    match_tree,
    tid_text,
    tree_bound,
)
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

WARP = 32


def _guard_tid(unit: CudaUnit, guard: Node, s: str) -> tuple[str, str] | None:
    """``(key, text)`` of the thread operand of a guard ``if (tid < s)`` / ``if (s > tid)``: the key is
    ``"threadIdx.x"`` for the thread's index along x in any spelling (``tid`` holding it, ``threadIdx.x``,
    ``cta.thread_rank()``), else the name written; the text is how the guard spells it. ``None`` for another
    guard."""
    clause = guard.child_by_field_name("condition")
    gcond = clause.child_by_field_name("value") if clause is not None else None
    if gcond is None or guard.child_by_field_name("alternative") is not None:
        return None
    gcond = syn.unwrap_parens(gcond)
    if not syn.is_binary(gcond):
        return None
    op = unit.t(gcond.child_by_field_name("operator"))
    left, right = gcond.child_by_field_name("left"), gcond.child_by_field_name("right")
    sides = {"<": (left, right), ">": (right, left)}.get(op)
    if sides is None or sides[0] is None or sides[1] is None or unit.t(syn.unwrap_parens(sides[1])) != s:
        return None
    key = _operand(unit, sides[0])
    return (key, tid_text(unit, sides[0])) if key is not None else None


def _sequential(unit: CudaUnit, loop: Node) -> tuple[str, str, str, str, Node, int | None, bool] | str:
    """``(s, tid, array, combine, bound node, bound value, barrier first)`` of a sequential-addressing tree loop,
    or why not. The body is a guarded combine and ``__syncthreads();``, in either order (``barrier first``: the
    barrier opens each step, so the last step's writes are not yet synchronized when the loop ends)."""
    head = _header(unit, loop)
    if isinstance(head, str):
        return head
    s, _typ, init = head
    cond, upd = loop.child_by_field_name("condition"), loop.child_by_field_name("update")
    if _norm(unit, cond, s) not in ("s>0", "0<s", "s!=0", "s>=1") or _norm(unit, upd, s) not in {
            h.replace(" ", "") for h in _HALVING}:
        return f"the loop is not a sequential-addressing tree (`{s} > 0`, {s} halving)"
    half = syn.unwrap_parens(init)
    if not syn.is_binary(half) or unit.t(half.child_by_field_name("operator")) not in ("/", ">>") or \
            unit.t(half.child_by_field_name("right")).strip() not in ("2", "1") or (
            unit.t(half.child_by_field_name("operator")) == ">>") != (unit.t(half.child_by_field_name("right"))
                                                                       .strip() == "1"):
        return f"{s} does not start at half the block (`blockDim.x / 2` or `N / 2`)"
    bound = syn.unwrap_parens(half.child_by_field_name("left"))
    known, value = tree_bound(unit, bound)
    if not known:
        return f"the tree starts at `{unit.t(init)}`, which is neither blockDim.x / 2 nor a constant"
    body = loop.child_by_field_name("body")
    stmts = statement_list(body) if body is not None and syn.is_block(body) else []
    first = len(stmts) == 2 and _is_sync(unit, stmts[0]) and syn.is_if(stmts[1])
    if not first and (len(stmts) != 2 or not syn.is_if(stmts[0]) or not _is_sync(unit, stmts[1])):
        return "the loop body is not exactly a guarded combine and a block barrier (__syncthreads();), in either order"
    guard = stmts[1] if first else stmts[0]
    got = _guard_tid(unit, guard, s)
    if got is None:
        return f"the guard is not `tid < {s}`"
    tid, text = got
    cons = guard.child_by_field_name("consequence")
    inner = statement_list(cons) if syn.is_block(cons) else [cons]
    if len(inner) != 1:
        return "the guard does not hold exactly one combine statement"
    comb = _combine(unit, inner[0], tid, s, text)
    if isinstance(comb, str):
        return comb
    why = _tid_problem(unit, tid) or _read_after(unit, loop, comb[0])
    if why:
        return why
    return s, text, comb[0], comb[1], bound, value, first


def _finish(tid: str, array: str, combine: str, etype: str, indent: str, barrier_first: bool = False,
            when: str | None = None) -> str:
    """The warp finish after the tree loop: ``barrier_first`` synchronizes the last step's writes first; ``when``
    (a block-uniform condition) wraps it for a block size known only at run time."""
    def comb(a: str, b: str) -> str:
        return f"{a} + {b}" if combine == "+" else f"{combine}({a}, {b})"

    step = ("htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);" if combine == "+" else
            f"htam_v = {comb('htam_v', '__shfl_down_sync(0xffffffffu, htam_v, htam_o)')};")
    lines = ["__syncthreads();  // the tree's last step wrote without a barrier after it"] if barrier_first else []
    lines += [
        f"if ({tid} < {WARP}) {{  // the last warp finishes in registers: the same pairs, no barriers",
        f"    {etype} htam_v = {comb(f'{array}[{tid}]', f'{array}[{tid} + {WARP}]')};",
        f"    for (int htam_o = {WARP // 2}; htam_o > 0; htam_o >>= 1)",
        f"        {step}",
        f"    if ({tid} == 0) {array}[0] = htam_v;",
        "}",
        "__syncthreads();",
    ]
    if when is not None:
        lines = [f"if ({when}) {{", *("    " + ln for ln in lines), "}"]
    return "".join("\n" + indent + ln for ln in lines)


def _runtime_guard(unit: CudaUnit, bound: Node) -> str:
    """The block-uniform condition under which the warp finish equals the tree for a run-time block size
    ``B`` (the tree's extent, ``blockDim.x`` or a local holding it): ``B`` is a power of two of at least 64."""
    b = unit.t(syn.unwrap_parens(bound))
    return f"{b} >= {2 * WARP} && ({b} & ({b} - 1)) == 0"


@register
class CudaWarpShuffleFinish(CudaTransform):
    """Finish a shared-memory tree reduction with warp shuffles once 64 partial values are left."""

    id = "cuda.warp_shuffle_finish"
    languages = CUDA_LANGS
    summary = "warp-shuffle finish of a shared-memory tree reduction (the last 6 steps without barriers)"

    def refusal_fact(self, unit: CudaUnit, kernel: Kernel, reason: str) -> str | None:
        """A kernel with no shared-memory tree at all is refused by that fact first, the step's precondition
        (:meth:`~htam_core.source.analysis.KernelFacts.no_shared_tree`), with the transform's own reason after."""
        no_tree = unit.facts.no_shared_tree()
        return f"{no_tree}; {reason}" if no_tree else None

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate for the first tree loop directly in the kernel body (sequential or interleaved)."""
        loops = [s for s in statement_list(unit.body) if syn.is_for(s)]
        if not loops:
            return self.not_applicable(f"{kernel.name} has no for loop directly in its body")
        reasons = []
        for loop in loops:
            line = model_line(model.text, unit.base + loop.start_byte)
            seq = _sequential(unit, loop)
            barrier_first = False
            bound: Node | None = None
            if not isinstance(seq, str):
                s, tid, array, combine, bound, value, barrier_first = seq
                edits = [unit.replace(loop.child_by_field_name("condition"), f"{s} > {WARP}")]
                form = "sequential"
            else:
                tree = match_tree(unit, loop)
                if isinstance(tree, str):
                    not_seq = seq.startswith("the loop is not a sequential-addressing tree")
                    reasons.append(f"line {line}: {tree if not_seq else seq}")
                    continue
                s, tid, array, combine, value = tree.var, tree.tid_text, tree.array, tree.combine, tree.bound_value
                bound = tree.bound
                edits = CudaSequentialAddressing._edits(unit, tree)
                head = edits[0]
                edits[0] = TextEdit(head.start_byte, head.end_byte, head.new_text.replace(f"{s} > 0", f"{s} > {WARP}"))
                form = "interleaved"
            why, sizes = _launch_problem(unit, value, runtime_ok=True)
            if why:
                return self.not_applicable(why.replace("sequential addressing needs", "the warp finish needs"))
            known = [n for n in sizes if n is not None]
            if known and min(known) < 2 * WARP:
                return self.not_applicable(f"the launch uses {min(known)} threads per block; the warp finish needs "
                                           f"at least {2 * WARP} (the tree's last 64 values)")
            etype = element_type(unit, array)
            if etype is None:
                return self.not_applicable(f"the element type of {array} is unknown")
            when = None
            if None in sizes and bound is not None:
                # the block size is known only at run time: the loop stops at 32 only where the finish runs
                when = _runtime_guard(unit, bound)
                cond = loop.child_by_field_name("condition")
                if form == "sequential":
                    edits = [unit.replace(cond, f"{unit.t(cond)} && !({when} && {s} <= {WARP})")]
                else:
                    head = edits[0]
                    edits[0] = TextEdit(head.start_byte, head.end_byte, head.new_text.replace(
                        f"{s} > {WARP}", f"{s} > 0 && !({when} && {s} <= {WARP})"))
            edits.append(unit.insert(loop.end_byte, _finish(tid, array, combine, etype, syn.indent_of(
                unit.src, loop.start_byte), barrier_first, when)))
            exact = form == "sequential" or combine != "+" or etype in ("int", "unsigned int", "unsigned")
            cand = self.candidate(
                model,
                f"finish the shared-memory tree of {kernel.name} (line {line}) in the first warp with "
                f"__shfl_down_sync once {2 * WARP} values are left: 5 barriers fewer"
                + ("" if when is None else f" (when `{when}` holds at run time; other blocks keep the tree)")
                + ("" if form == "sequential" else "; the interleaved tree also gets sequential addressing")
                + ("" if exact else " (float sums change order)"),
                {"line": line, "form": form, "combine": combine,
                 "block": sorted(set(known)) if known else "runtime"},
                edits,
            )
            cand.changes_numerics = cand.reorders_only = not exact  # shuffles pair the same terms otherwise
            return [cand]
        return self.not_applicable("no shared-memory tree loop qualifies: " + "; ".join(reasons))
