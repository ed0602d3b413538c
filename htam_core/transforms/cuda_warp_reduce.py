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

A guard that combines several shared arrays (a min and a max in one loop) gets one register and one shuffle
chain per array in the same warp, and thread 0 writes every ``array[0]``. A max/min written as a comparison and a
choice combines with that very comparison (``htam_v = htam_w > htam_v ? htam_w : htam_v;``, the shuffled value taken
into ``htam_w`` first so every lane runs each shuffle).

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
from htam_core.source.analysis.counted import counted_loop
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, statement_list
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_loops import model_line
from htam_core.transforms.cuda_reduction import (
    _HALVING,
    Combine,
    CudaSequentialAddressing,
    _is_sync,
    _launch_problem,
    _norm,
    _operand,
    _tid_problem,
    combines_problem,
    element_type,
    guard_combines,
    loop_edits,
    match_tree,
    tid_text,
    tree_body,
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


def _sequential(unit: CudaUnit, loop: Node) -> tuple[str, str, list[Combine], Node, int | None, bool] | str:
    """``(s, tid, combines, bound node, bound value, barrier first)`` of a sequential-addressing tree loop (the
    guard's :class:`~htam_core.transforms.cuda_reduction.Combine` list: one per shared array), or why not. The body is a guarded combine and ``__syncthreads();``, in either order (``barrier first``: the
    barrier opens each step, so the last step's writes are not yet synchronized when the loop ends)."""
    cl = counted_loop(unit, loop)
    if isinstance(cl, str):
        return cl
    s, init, cond, upd = cl.var, cl.init, cl.cond, cl.update
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
    stmts = tree_body(unit, cl)
    first = len(stmts) == 2 and _is_sync(unit, stmts[0]) and syn.is_if(stmts[1])
    if not first and (len(stmts) != 2 or not syn.is_if(stmts[0]) or not _is_sync(unit, stmts[1])):
        return "the loop body is not exactly a guarded combine and a block barrier (__syncthreads();), in either order"
    guard = stmts[1] if first else stmts[0]
    got = _guard_tid(unit, guard, s)
    if got is None:
        return f"the guard is not `tid < {s}`"
    tid, text = got
    combs = guard_combines(unit, guard.child_by_field_name("consequence"), tid, s, text)
    if isinstance(combs, str):
        return combs
    why = _tid_problem(unit, tid) or combines_problem(unit, loop, combs, value)
    if why:
        return why
    return s, text, combs, bound, value, first


def _shuffle_step(c: Combine, v: str, etype: str) -> list[str]:
    """The statements that combine the register ``v`` (of type ``etype``) with its value ``htam_o`` lanes down, as
    the combine ``c`` does; a selection takes the shuffled value into a register first, so that every lane runs
    the shuffle once (a shuffle in a conditional branch would leave lanes out)."""
    shfl = f"__shfl_down_sync(0xffffffffu, {v}, htam_o)"
    if c.select is not None:
        w = v.replace("htam_v", "htam_w", 1)
        return [f"{etype} {w} = {shfl};", f"{v} = {c.expr(v, w)};"]
    return [f"{v} += {shfl};" if c.op == "+" else f"{v} = {c.expr(v, shfl)};"]


def _finish(tid: str, combs: list[Combine], etypes: list[str], indent: str, barrier_first: bool = False,
            when: str | None = None) -> str:
    """The warp finish after the tree loop, one register and one shuffle chain per combine of ``combs`` (their
    element types ``etypes``); thread 0 writes every result back to ``array[0]``. ``barrier_first`` synchronizes
    the last step's writes first; ``when`` (a block-uniform condition) wraps it for a block size known only at run
    time."""
    regs = ["htam_v"] if len(combs) == 1 else [f"htam_v_{c.array}" for c in combs]
    steps = [ln for c, v, t in zip(combs, regs, etypes, strict=True) for ln in _shuffle_step(c, v, t)]
    writes = [f"{c.array}[0] = {v};" for c, v in zip(combs, regs, strict=True)]
    lines = ["__syncthreads();  // the tree's last step wrote without a barrier after it"] if barrier_first else []
    lines.append(f"if ({tid} < {WARP}) {{  // the last warp finishes in registers: the same pairs, no barriers")
    lines += [f"    {t} {v} = {c.expr(f'{c.array}[{tid}]', f'{c.array}[{tid} + {WARP}]')};"
              for c, v, t in zip(combs, regs, etypes, strict=True)]
    loop = f"    for (int htam_o = {WARP // 2}; htam_o > 0; htam_o >>= 1)"
    lines += [loop, f"        {steps[0]}"] if len(steps) == 1 else [loop + " {", *(f"        {x}" for x in steps), "    }"]
    lines.append(f"    if ({tid} == 0) {writes[0]}" if len(writes) == 1 else f"    if ({tid} == 0) {{ {' '.join(writes)} }}")
    lines += ["}", "__syncthreads();"]
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
        """One candidate for the first tree loop directly in the kernel body (sequential or interleaved), finishing
        every shared array its guard combines."""
        loops = [s for s in statement_list(unit.body) if syn.is_loop(s)]
        if not loops:
            return self.not_applicable(f"{kernel.name} has no loop directly in its body")
        reasons = []
        for loop in loops:
            line = model_line(model.text, unit.base + loop.start_byte)
            found = _tree_edits(unit, loop)
            if isinstance(found, str):
                reasons.append(f"line {line}: {found}")
                continue
            return self._made(unit, model, kernel, loop, line, found)
        return self.not_applicable("no shared-memory tree loop qualifies: " + "; ".join(reasons))

    def _made(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, loop: Node, line: int,
              found: _Found) -> list[Candidate] | NotApplicable:
        """The candidate for the tree ``loop`` read as ``found``, or why its launches or types refuse it."""
        s, tid, combs, bound, value, barrier_first, edits, form = found
        why, sizes = _launch_problem(unit, value, runtime_ok=True)
        if why:
            return self.not_applicable(why.replace("sequential addressing needs", "the warp finish needs"))
        known = [n for n in sizes if n is not None]
        if known and min(known) < 2 * WARP:
            return self.not_applicable(f"the launch uses {min(known)} threads per block; the warp finish needs "
                                       f"at least {2 * WARP} (the tree's last 64 values)")
        etypes = [element_type(unit, c.array) for c in combs]
        missing = next((c.array for c, t in zip(combs, etypes, strict=True) if t is None), None)
        if missing is not None:
            return self.not_applicable(f"the element type of {missing} is unknown")
        when = None
        if None in sizes:
            # the block size is known only at run time: the loop stops at 32 only where the finish runs
            when = _runtime_guard(unit, bound)
            edits = _runtime_edits(unit, loop, edits, s, when, form)
        edits.append(unit.insert(loop.end_byte, _finish(tid, combs, [t for t in etypes if t is not None], syn.indent_of(
            unit.src, loop.start_byte), barrier_first, when)))
        exact = form == "sequential" or all(
            c.op != "+" or t in ("int", "unsigned int", "unsigned") for c, t in zip(combs, etypes, strict=True))
        arrays = ", ".join(c.array for c in combs)
        cand = self.candidate(
            model,
            f"finish the shared-memory tree of {kernel.name} (line {line}"
            + ("" if len(combs) == 1 else f", arrays {arrays}")
            + f") in the first warp with __shfl_down_sync once {2 * WARP} values are left: 5 barriers fewer"
            + ("" if when is None else f" (when `{when}` holds at run time; other blocks keep the tree)")
            + ("" if form == "sequential" else "; the interleaved tree also gets sequential addressing")
            + ("" if exact else " (float sums change order)"),
            {"line": line, "form": form, "combine": "/".join(c.op for c in combs),
             "block": sorted(set(known)) if known else "runtime",
             **({"arrays": [c.array for c in combs]} if len(combs) > 1 else {})},
            edits,
        )
        cand.changes_numerics = cand.reorders_only = not exact  # shuffles pair the same terms otherwise
        return [cand]


#: A tree loop read for the finish: ``(s, tid text, combines, bound node, bound value, barrier first, the loop's
#: edits, "sequential" or "interleaved")``.
_Found = tuple[str, str, list[Combine], Node, int | None, bool, list[TextEdit], str]


def _tree_edits(unit: CudaUnit, loop: Node) -> _Found | str:
    """The tree ``loop`` read for the finish, with the edits that stop it at 32 (an interleaved tree also gets
    sequential addressing), or why it is neither tree."""
    seq = _sequential(unit, loop)
    if not isinstance(seq, str):
        s, tid, combs, bound, value, first = seq
        return s, tid, combs, bound, value, first, _stop_at(unit, loop, f"{s} > {WARP}"), "sequential"
    tree = match_tree(unit, loop)
    if isinstance(tree, str):
        return tree if seq.startswith("the loop is not a sequential-addressing tree") else seq
    s = tree.var
    edits = CudaSequentialAddressing._edits(unit, tree)
    head = edits[0]
    edits[0] = TextEdit(head.start_byte, head.end_byte, head.new_text.replace(f"{s} > 0", f"{s} > {WARP}"))
    return s, tree.tid_text, tree.combines, tree.bound, tree.bound_value, False, edits, "interleaved"


def _stop_at(unit: CudaUnit, loop: Node, cond: str) -> list[TextEdit]:
    """The edits that give the sequential tree ``loop`` the condition ``cond``: in place in a ``for`` header; a
    ``while``/``do`` loop becomes the ``for`` loop (:func:`~htam_core.transforms.cuda_reduction.loop_edits`), since a
    ``do`` loop would run its body once more than the new condition admits."""
    cl = counted_loop(unit, loop)
    assert not isinstance(cl, str), cl
    if cl.kind == "for":
        return [unit.replace(cl.cond, cond)]
    return loop_edits(unit, cl, f"{cl.type} {cl.var} = {unit.t(cl.init)}; {cond}; {unit.t(cl.update)}")


def _runtime_edits(unit: CudaUnit, loop: Node, edits: list[TextEdit], s: str, when: str,
                   form: str) -> list[TextEdit]:
    """The loop's edits for a block size known only at run time: the tree stops at 32 only where ``when`` holds."""
    if form == "sequential":
        cl = counted_loop(unit, loop)
        cond = cl.cond if not isinstance(cl, str) else loop.child_by_field_name("condition")
        return _stop_at(unit, loop, f"{unit.t(cond)} && !({when} && {s} <= {WARP})")
    head = edits[0]
    return [TextEdit(head.start_byte, head.end_byte, head.new_text.replace(
        f"{s} > {WARP}", f"{s} > 0 && !({when} && {s} <= {WARP})")), *edits[1:]]
