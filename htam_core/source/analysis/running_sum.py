"""Running sums (and running extremes): a loop that stores its accumulator after each step, a prefix scan along
the loop (:class:`RunningSum`).

``for (c = 0; c < cols; ++c) { acc += in[r * cols + c]; out[r * cols + c] = acc; }`` is not a reduction: every
partial value is an output, so splitting the loop over the lanes of a warp or the threads of a block (as the row
steps do for a sum) would store partial sums of the wrong elements. Parallelizing it takes a scan (a block-wide scan
over chunks of the row with a carry between chunks). The row steps read this fact to say so in one line instead of
the generic "reads acc while it reduces into it", naming the warp-per-row scan (``row_scan``) where it applies.

The shape is read from the facts: a sum accumulator of a loop (:attr:`~htam_core.source.analysis.facts.LoopFact.
accumulators`) whose value is stored to global memory inside that loop by an assignment whose right side names it
(``out[i] = acc``, ``out[i] = acc * scale``), before or after the update (exclusive or inclusive).

Idea source: Blelloch, "Prefix Sums and Their Applications" (1990): a running sum is a scan, parallel only through
a scan algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import KernelView
from htam_core.source.analysis.row_scan import RowScan, row_scan

__all__ = ["RunningSum", "running_sum", "running_sum_refusal"]

_ACCESS_KINDS = ("subscript_expression", "pointer_expression", "call_expression")


@dataclass(frozen=True)
class RunningSum:
    """A loop that stores its sum accumulator after each step.

    Attributes:
        line: the loop's 1-based line.
        acc: the accumulator.
        store: the store as written (``out[r * cols + c] = acc``).
        op: the accumulator's operation (``"sum"``; ``"max"``, ``"min"``, ``"prod"`` for a running extreme or
            product, scans alike).
    """

    line: int
    acc: str
    store: str
    op: str = "sum"


def running_sum(view: KernelView) -> RunningSum | None:
    """The kernel's first loop that stores a sum (or max, min, product) accumulator to global memory at each step,
    or ``None``.

    Args:
        view: the kernel's parsed unit with its facts (:class:`~htam_core.source.analysis.forms.KernelView`).
    """
    f = view.facts
    for lp in f.loops:
        sums = {a.name: a.op for a in lp.accumulators if a.op in ("sum", "prod", "max", "min")}
        if not sums:
            continue
        for a in f.accesses:
            if a.kind != "write" or a.space != "global" or lp.id not in a.loops:
                continue
            node = view.source.node_at(a.span, _ACCESS_KINDS)
            parent = node.parent if node is not None else None
            if not syn.is_assignment(parent) or parent.child_by_field_name("left") != node:
                continue
            right = parent.child_by_field_name("right")
            names = {view.t(n) for n in syn.walk(right) if n.type == "identifier"} if right is not None else set()
            hit = sorted(names & set(sums))
            if hit:
                return RunningSum(lp.line, hit[0], " ".join(view.t(parent).split()), sums[hit[0]])
    return None


def running_sum_refusal(view: KernelView, line: int | None = None) -> str | None:
    """The one line a step that splits a loop over threads says for a running sum (:func:`running_sum`; only the
    loop on ``line`` when given), or ``None`` when the kernel has none. When the loop is a thread-per-row running
    value in the form the warp-per-row scan rewrites (:func:`~htam_core.source.analysis.row_scan.row_scan`), the
    line names that step (``row_scan``, ``cuda.row_scan``)."""
    rs = running_sum(view)
    if rs is None or (line is not None and rs.line != line):
        return None
    what = (f"the loop on line {rs.line} is a running {rs.op} (`{rs.store}` stores {rs.acc} at each step: a prefix "
            "scan along the row); splitting it over threads takes")
    scan = row_scan(view)
    if isinstance(scan, RowScan) and scan.loop.line == rs.line:
        return (f"{what} a scan with a carry between the row's chunks: the row_scan step (cuda.row_scan: one warp "
                "per row, a warp scan of 32 columns at a time plus the carry) makes it")
    return f"{what} a block-wide scan with a carry between the row's chunks, which the rules engine does not make"
