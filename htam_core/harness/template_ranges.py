"""The values a written ``htam.toml`` template draws for integer input buffers whose use the analysis layer reads.

The template written from a kernel's signature (:func:`htam_core.harness.template.write_template`) guesses every
buffer's values from its C type: an integer buffer would get ``randn`` or ``randint`` over ``[0, 100)``. Two uses
say what its values must be, as in the harness inferred from ``main()`` (:mod:`htam_core.harness.int_ranges`):

* an **offsets array** (:func:`~htam_core.source.analysis.offsets.offsets_loops`: ``for (j = p[r]; j < p[r + 1];
  ++j)``, a lane's share of that range too): ``init = "offsets"`` from 0 to the length of the buffers the loop
  indexes, so every row's range lies inside them;
* **indices** into another buffer (:func:`~htam_core.source.analysis.gathers.gather_indices`: ``x[col_idx[j]]``):
  ``randint`` over ``[0, len(x) / stride)``.

The lengths are the template's own shapes at its sizes' default values; the comment says to keep them in step.

Idea source: the CSR format (Saad, "Iterative Methods for Sparse Linear Systems", sec. 3.4); our own harness
inference's integer ranges.
"""

from __future__ import annotations

import re

import sympy

from htam_core.source.analysis import analyze
from htam_core.source.analysis.gathers import gather_indices
from htam_core.source.analysis.offsets import offsets_loops
from htam_core.source.model import Kernel, SourceModel

__all__ = ["integer_roles"]

_SHAPE = re.compile(r'shape = \[([^\]]*)\]')
_INIT = re.compile(r'init = "(?:randn|randint)"(?:, low = [^,}\s]+, high = [^,}\s]+)?')


def _entry(inputs: list[str], name: str) -> int | None:
    """The index of the tensor entry of ``name`` in ``inputs``, or ``None``."""
    return next((i for i, e in enumerate(inputs) if e.startswith(f'  {{ name = "{name}", shape')), None)


def _length(inputs: list[str], name: str, symbols: dict[str, int]) -> int | None:
    """The number of elements of the entry ``name`` at the sizes' values ``symbols``, or ``None`` when unknown."""
    i = _entry(inputs, name)
    m = _SHAPE.search(inputs[i]) if i is not None else None
    if m is None:
        return None
    try:
        value = sympy.prod([sympy.sympify(d.strip().strip('"'), locals=dict(symbols)) for d in m.group(1).split(",")
                            if d.strip()])
    except (sympy.SympifyError, TypeError, ValueError):
        return None
    value = sympy.sympify(value)
    return int(value) if value.is_Integer and int(value) > 0 else None


def _rewrite(inputs: list[str], name: str, init: str, note: str) -> None:
    """Give the entry ``name`` of ``inputs`` the ``init`` text (``init = "offsets", low = 0, high = 9000``) and
    ``note`` as the first words of its comment."""
    i = _entry(inputs, name)
    if i is None or _INIT.search(inputs[i]) is None or re.search(r'dtype = "u?int', inputs[i]) is None:
        return
    head, _, comment = _INIT.sub(init, inputs[i], count=1).partition("  # ")
    comment = re.sub(r";?\s*TODO: integers in \[low, high\): set high to the length they index", "", comment)
    inputs[i] = f"{head}  # {note}" + (f"; {comment}" if comment else "")


def integer_roles(model: SourceModel, kernel: Kernel, inputs: list[str], symbols: dict[str, int]) -> list[str]:
    """``inputs`` (a template's entries, one a line) with each offsets array and index buffer of ``kernel`` given
    the values its use calls for (module docstring); entries of other names (a host launcher's own parameter
    names) and buffers whose target length is unknown are left as they are. ``symbols``: the sizes' values.
    Returns ``inputs``, changed in place."""
    facts = analyze(model, kernel)
    done: set[str] = set()
    for lp in offsets_loops(facts):
        lengths = [n for t in lp.targets if (n := _length(inputs, t, symbols)) is not None]
        if lp.pointer in done or not lengths:
            continue
        done.add(lp.pointer)
        _rewrite(inputs, lp.pointer, f'init = "offsets", low = 0, high = {min(lengths)}',
                 f"an offsets array (the loop on line {lp.line} runs from {lp.first} to {lp.last}): sorted positions "
                 f"from 0 to the length of {', '.join(lp.targets)}; keep high equal to it when the sizes change")
    for g in gather_indices(facts):
        n = _length(inputs, g.target, symbols)
        if g.pointer in done or n is None or not g.stride.is_Integer or int(g.stride) <= 0:
            continue
        done.add(g.pointer)
        i = _entry(inputs, g.target)
        todo = "TODO: its shape is a placeholder, set high to its length; " if i is not None and "TODO" in inputs[i] \
            else ""
        _rewrite(inputs, g.pointer, f'init = "randint", low = 0, high = {max(1, n // int(g.stride))}',
                 f"indices into {g.target} (line {g.line}): {todo}keep high equal to its length when the sizes change")
    return inputs
