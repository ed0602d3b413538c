"""The sizes of a thread-per-row kernel's rows at its launches: how many rows, how long each.

A kernel that gives each thread a row (``row = blockIdx.x * blockDim.x + threadIdx.x``, a loop along the row) can
give the row to a warp or to a whole block instead. Which is better depends on the sizes the host code launches it
with: a few long rows (64 channels of 100352 elements each) leave the device nearly idle with a warp per row (64
warps on 132 SMs), while many short rows fill it with warps and would leave most threads of a block idle.

:func:`row_launches` reads, per launch of the kernel in its file, what the launch gives:

* ``rows``: the threads the launch starts (grid times block, constants of the host code folded by the launch
  facts, :attr:`~htam_core.source.analysis.facts.LaunchFacts.grid`), at least the number of rows, since a
  thread-per-row launch starts a thread for each row (rounded up to a whole block);
* ``length``: the elements of a row, the trip count of the longest row loop
  (:meth:`~htam_core.source.analysis.facts.KernelFacts.row_loops`) times the trip counts of the loops around it
  (a nest ``n < N, i < HW`` gives ``N * HW``), with the kernel's parameters replaced by the launch's arguments
  (:attr:`~htam_core.source.analysis.facts.LaunchFacts.arg_exprs`);

each ``None`` when it is not a constant there. :func:`few_long_rows` says whether some launch has few rows for the
device and long ones. These are only for ranking and sizing: the rewrites stay correct for any sizes at run time.

Idea source: CUDA C++ Best Practices Guide, "Occupancy" and "Thread and Block Heuristics" (enough warps on every
SM); the block-per-row layer-norm/softmax kernels of Apex and PyTorch, which switch from a warp to a block per row
for long rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy

from htam_core.source.analysis.device_queries import REFERENCE_SM_COUNT
from htam_core.source.analysis.facts import KernelFacts, LaunchFacts, LoopFact, sym

__all__ = ["LONG_ROW", "WARPS_PER_SM", "RowLaunch", "few_long_rows", "row_launches"]

#: A row at least this long (elements) keeps a block of threads busy for many steps.
LONG_ROW = 1024
#: Fewer rows than this many per SM (a warp each) leave the device mostly idle with a warp per row.
WARPS_PER_SM = 4


@dataclass(frozen=True)
class RowLaunch:
    """What one launch of a thread-per-row kernel gives its rows (see the module docstring).

    Attributes:
        line: 1-based line of the launch.
        rows: threads the launch starts (at least the rows), or ``None`` when not a constant.
        length: elements per row, or ``None`` when not a constant.
    """

    line: int
    rows: int | None
    length: int | None


def _integer(expr: sympy.Expr | None) -> int | None:
    """The value of a sympy expression that is an integer constant once its C divisions and remainders of
    non-negative integers (the facts' ``div``/``mod``: ``CEIL_DIV(64, 32)`` is ``div(95, 32)``) are worked out, else
    ``None``."""
    if expr is None:
        return None
    done = expr.replace(sympy.Function("div"), lambda a, b: sympy.floor(a / b) if _naturals(a, b) else
                        sympy.Function("div")(a, b))
    done = done.replace(sympy.Function("mod"), lambda a, b: sympy.Mod(a, b) if _naturals(a, b) else
                        sympy.Function("mod")(a, b))
    return int(done) if getattr(done, "is_Integer", False) else None


def _naturals(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Both are integer constants, ``a >= 0`` and ``b > 0`` (where C's truncating division is the floor)."""
    return bool(getattr(a, "is_Integer", False) and getattr(b, "is_Integer", False) and a >= 0 and b > 0)


def _threads(la: LaunchFacts) -> int | None:
    """Threads a launch starts when its grid and block are constants, else ``None``."""
    grid = [d.value if d.value is not None else _integer(d.expr) for d in la.grid]
    if not grid or None in grid or la.threads is None:
        return None
    out = la.threads
    for g in grid:
        out *= g  # type: ignore[operator]
    return out


def _row_trips(facts: KernelFacts, loop: LoopFact) -> sympy.Expr | None:
    """The trip count of ``loop`` times those of the loops around it, or ``None`` when one is unreadable."""
    total: sympy.Expr = sympy.Integer(1)
    lp: LoopFact | None = loop
    while lp is not None:
        if lp.trip_count is None:
            return None
        total = total * lp.trip_count
        lp = facts.loops[lp.parent] if lp.parent is not None else None
    return total


def _length(facts: KernelFacts, params: Sequence[str], la: LaunchFacts) -> int | None:
    """The longest row loop's elements at launch ``la`` (parameters replaced by its arguments), or ``None``."""
    subs = {sym(p): e for p, e in zip(params, la.arg_exprs, strict=False) if e is not None}
    known = [_integer(sympy.simplify(t.subs(subs))) for lp in facts.row_loops(groups=True)
             if (t := _row_trips(facts, lp)) is not None]
    values = [v for v in known if v is not None]
    return max(values) if values else None


def row_launches(facts: KernelFacts, params: Sequence[str]) -> tuple[RowLaunch, ...]:
    """Per launch of the kernel in its file, the rows it starts and their length (:class:`RowLaunch`).

    Args:
        facts: the kernel's facts read in its file (with its launches).
        params: the kernel's parameter names, in order (matched to the launch arguments).

    Returns:
        One :class:`RowLaunch` per launch, in source order; ``()`` for a kernel without launches or row loops.
    """
    if not facts.row_loops(groups=True):
        return ()
    return tuple(RowLaunch(la.line, _threads(la), _length(facts, params, la)) for la in facts.launches)


def few_long_rows(facts: KernelFacts, params: Sequence[str], sm_count: int = REFERENCE_SM_COUNT["sm_90"]) -> bool | None:
    """Whether a launch gives few rows for the device and long ones: fewer than :data:`WARPS_PER_SM` per SM (a warp
    per row would leave most SMs idle) of at least :data:`LONG_ROW` elements.

    Args:
        facts: the kernel's facts read in its file.
        params: its parameter names, in order.
        sm_count: SMs of the device (the reference device's by default).

    Returns:
        ``True`` when a launch with both sizes known has such rows, ``False`` when launches have both sizes known
        and none has, ``None`` when no launch has both known (or there is no row loop).
    """
    known = [r for r in row_launches(facts, params) if r.rows is not None and r.length is not None]
    if not known:
        return None
    return any(r.rows < WARPS_PER_SM * sm_count and r.length >= LONG_ROW for r in known)  # type: ignore[operator]
