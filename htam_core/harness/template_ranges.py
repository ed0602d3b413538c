"""The values a written ``htam.toml`` template draws for integer input buffers whose use the analysis layer reads.

The template written from a kernel's signature (:func:`htam_core.harness.template.write_template`) guesses every
buffer's values from its C type: an integer buffer would get ``randn`` or ``randint`` over ``[0, 100)``. Two uses
say what its values must be, as in the harness inferred from ``main()`` (:mod:`htam_core.harness.int_ranges`):

* an **offsets array** (:func:`~htam_core.source.analysis.offsets.offsets_loops`: ``for (j = p[r]; j < p[r + 1];
  ++j)``, a lane's share of that range too): ``init = "offsets"`` from 0 to the length of the buffers the loop
  indexes, so every row's range lies inside them;
* **indices** into another buffer (:func:`~htam_core.source.analysis.gathers.gather_indices`: ``x[col_idx[j]]``):
  ``randint`` over ``[0, len(x) / stride)``, or over one row's length where a row offset selects the row
  (``x[r * V + idx[r]]``: ``[0, V)``).

The writers choose each entry's init from these facts before they render it: :func:`integer_roles` reads the
roles of the kernel's pointers, :func:`integer_inits` the init of each, from the template's own shapes (dimension
texts) at its sizes' default values; the comment says to keep them in step.

Idea source: the CSR format (Saad, "Iterative Methods for Sparse Linear Systems", sec. 3.4); our own harness
inference's integer ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sympy

from htam_core.source.analysis import analyze
from htam_core.source.analysis.gathers import GatherIndex, gather_indices, index_bound
from htam_core.source.analysis.offsets import offsets_loops
from htam_core.source.model import Kernel, SourceModel

__all__ = ["IntegerInit", "IntegerRole", "integer_inits", "integer_roles"]


@dataclass(frozen=True)
class IntegerRole:
    """What the kernel does with the values of one of its pointer parameters.

    Attributes:
        pointer: the kernel's pointer parameter (``row_ptr``).
        kind: ``"offsets"`` (a loop runs between two of its values) or ``"indices"`` (they index ``targets[0]``).
        targets: the kernel's pointer parameters the values index (``vals``, ``col_idx``; one for indices).
        line: 1-based line of the loop or of the access.
        span: for offsets, the loop's range as written (``row_ptr[r]``, ``row_ptr[r + 1]``).
        stride: for indices, elements of the target per index value (``None``: not a positive integer).
        gather: for indices, the gather fact (its other index terms size the range:
            :func:`~htam_core.source.analysis.gathers.index_bound`).
        params: the kernel's parameter names (a size among them without a value leaves a row unknown).
    """

    pointer: str
    kind: Literal["offsets", "indices"]
    targets: tuple[str, ...]
    line: int
    span: tuple[str, str] = ("", "")
    stride: int | None = 1
    gather: GatherIndex | None = None
    params: frozenset[str] = frozenset()


@dataclass(frozen=True)
class IntegerInit:
    """The init of an integer entry: ``fields`` (``init = "offsets", low = 0, high = 9000``) and ``note``, the
    first words of its comment."""

    fields: str
    note: str


def integer_roles(model: SourceModel, kernel: Kernel) -> list[IntegerRole]:
    """The roles of ``kernel``'s pointers read by the analysis layer: its offsets loops, then its gathers, in
    source order (a pointer may have several; :func:`integer_inits` takes the first that it can size)."""
    facts = analyze(model, kernel)
    out = [IntegerRole(lp.pointer, "offsets", tuple(lp.targets), lp.line, (lp.first, lp.last))
           for lp in offsets_loops(facts)]
    for g in gather_indices(facts):
        stride = int(g.stride) if g.stride.is_Integer and int(g.stride) > 0 else None
        out.append(IntegerRole(g.pointer, "indices", (g.target,), g.line, stride=stride, gather=g,
                               params=frozenset(p.name for p in kernel.params)))
    return out


def _length(shape: list[str] | None, symbols: dict[str, int]) -> int | None:
    """The number of elements of a buffer of ``shape`` (dimension texts, ``["M", "K"]``) at the sizes' values
    ``symbols``, or ``None`` when unknown."""
    if not shape:
        return None
    try:
        value = sympy.sympify(sympy.prod([sympy.sympify(d, locals=dict(symbols)) for d in shape]))
    except (sympy.SympifyError, TypeError, ValueError):
        return None
    return int(value) if value.is_Integer and int(value) > 0 else None


def _init(role: IntegerRole, shapes: dict[str, list[str] | None], symbols: dict[str, int],
          placeholders: set[str]) -> IntegerInit | None:
    """The init of ``role``'s pointer, or ``None`` when no target's length is known."""
    lengths = [n for t in role.targets if (n := _length(shapes.get(t), symbols)) is not None]
    if not lengths:
        return None
    if role.kind == "offsets":
        return IntegerInit(f'init = "offsets", low = 0, high = {min(lengths)}',
                           f"an offsets array (the loop on line {role.line} runs from {role.span[0]} to "
                           f"{role.span[1]}): sorted positions from 0 to the length of {', '.join(role.targets)}; "
                           "keep high equal to it when the sizes change")
    if role.stride is None:
        return None
    target = role.targets[0]
    todo = "TODO: its shape is a placeholder, set high to its length; " if target in placeholders else ""
    bound = index_bound(role.gather, lengths[0], symbols, role.params) if role.gather is not None else None
    if bound is not None and bound.proven and bound.in_row:
        return IntegerInit(f'init = "randint", low = 0, high = {bound.high}',
                           f"indices into a row of {target} ({bound.row} elements, line {role.line}): keep high "
                           "equal to the row's length when the sizes change")
    if bound is not None and not bound.proven:
        todo += f"htam cannot bound the index's other terms (`{role.gather.text}`), so high spans the whole " \
            "buffer: set it to the range one thread may read; "  # type: ignore[union-attr]
    return IntegerInit(f'init = "randint", low = 0, high = {max(1, lengths[0] // role.stride)}',
                       f"indices into {target} (line {role.line}): {todo}keep high equal to its length when the "
                       "sizes change")


def integer_inits(roles: list[IntegerRole], shapes: dict[str, list[str] | None], symbols: dict[str, int],
                  placeholders: set[str] = frozenset()) -> dict[str, IntegerInit]:  # type: ignore[assignment]
    """The init each pointer of ``roles`` draws (module docstring), by the kernel's pointer name: the first role
    of a pointer whose targets have a known length.

    Args:
        roles: :func:`integer_roles`.
        shapes: each buffer's shape as the template writes it (dimension texts over the sizes), by the kernel's
            pointer name; ``None`` or missing: unknown.
        symbols: the sizes' default values.
        placeholders: the buffers whose shape is a placeholder (an index range into one says so).
    """
    out: dict[str, IntegerInit] = {}
    for role in roles:
        if role.pointer not in out and (chosen := _init(role, shapes, symbols, placeholders)) is not None:
            out[role.pointer] = chosen
    return out
