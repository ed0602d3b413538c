"""The values an inferred CUDA harness draws for each integer input buffer, from how the kernel uses them.

``main()`` allocates the buffers but seldom says what their values mean; the analysis layer does:

* **indices** into another buffer (a gather, :func:`~htam_core.source.analysis.gathers.gather_indices`:
  ``table[ids[t] * C + c]``): uniform over ``[0, len(table) / C)``, or over one row's length where a row offset
  selects the row the index moves in (``row[idx[r]]`` with ``row = x + r * V``: ``[0, V)``); an index whose other
  terms cannot be bounded (``x[i + idx[i]]``) keeps the whole buffer's range with a note saying so;
* an **offsets array** (:func:`~htam_core.source.analysis.offsets.offsets_loops`: ``for (j = p[r]; j < p[r + 1];
  ++j)``, CSR's ``row_ptr``): sorted positions from 0 to the length of the buffers the loop indexes
  (``init = "offsets"``), so every row's range lies inside them and a GPU run is bounded;
* **values**, never an index, an address or a loop's range (:func:`~htam_core.source.analysis.offsets.index_sources`:
  only compared or computed with, ``if (v[i] != 0)``): a small range around zero, ``[-8, 8)`` (``[0, 16)`` when
  unsigned), in which comparisons go both ways and zeros occur;
* anything else keeps the guess (the smallest buffer of more than one element: a 1-element buffer is a counter or
  a scalar output, not a length) with a note saying it is a guess.

A range of a single value (``[0, 1)``: every element the same) cannot tell a wrong candidate from a right one on
that input: it is widened to two values when it is a guess, and noted when the kernel's use proves it (a valid index
into a 1-element buffer). ``main()``'s own fill (``cudaMemset(v, 1, ...)``) is noted, not copied: one value in every
element would not exercise the kernel.

Idea source: the gather/scatter and CSR data of sparse kernels (Bell and Garland, "Efficient Sparse Matrix-Vector
Multiplication on CUDA", 2008); input-domain coverage in differential testing (McKeeman, "Differential Testing for
Software", 1998).
"""

from __future__ import annotations

import re
from typing import Any

from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.cu_eval import Ptr
from htam_core.source.analysis import KernelFacts
from htam_core.source.analysis.gathers import gather_indices, index_bound
from htam_core.source.analysis.offsets import index_sources, offsets_loops

__all__ = ["SIGNED_VALUES", "UNSIGNED_VALUES", "integer_ranges"]

#: The range ``[low, high)`` of a signed integer input whose values the kernel only compares or computes with.
SIGNED_VALUES = (-8, 8)
#: The same for an unsigned (or bool) input.
UNSIGNED_VALUES = (0, 16)


def _gather_bounds(spec_of: dict[str, InputSpec], values: dict[str, int], facts: KernelFacts,
                   param: str) -> list[tuple[int, bool, str]]:
    """``(number of valid indices, proven, note)`` for each gather that indexes a buffer with ``param``'s values
    (:func:`~htam_core.source.analysis.gathers.index_bound`: inside one row where a row offset selects it)."""
    out: list[tuple[int, bool, str]] = []
    params = frozenset(spec_of)
    for g in (g for g in gather_indices(facts) if g.pointer == param):
        target = spec_of.get(g.target)
        if target is None or not target.shape or not isinstance(target.shape[0], int):
            continue
        b = index_bound(g, int(target.shape[0]), values, params)
        if b is None:
            continue
        name = spec_of[param].name
        per = "" if g.stride == 1 else f", {g.stride.subs(values)} per index: `{g.stride}`"
        if not b.proven:
            out.append((b.high, False, f"`{name}` indexes `{target.name}` on line {g.line} (`{g.text}`) with other "
                        f"index terms htam cannot bound: randint over [0, {b.high}) spans the whole buffer and may "
                        "read past what the kernel's rows allow; adjust `high` to the valid range"))
            continue
        into = f"a row of `{target.name}` ({b.row} elements" if b.in_row else \
            f"`{target.name}` ({b.row} elements"
        out.append((b.high, True, f"`{name}` holds indices into {into}{per}, line {g.line}): randint over "
                    f"[0, {b.high})"))
    return out


def _offsets(spec: InputSpec, spec_of: dict[str, InputSpec], facts: KernelFacts, param: str) -> str | None:
    """Make ``spec`` an offsets array when ``param`` bounds a loop from ``p[r]`` to ``p[r + 1]``; the note, or
    ``None`` when it does not."""
    loops = [lp for lp in offsets_loops(facts) if lp.pointer == param]
    if not loops:
        return None
    lengths = {int(t.shape[0]): t.name for n in loops[0].targets if (t := spec_of.get(n)) is not None and t.shape
               and isinstance(t.shape[0], int)}
    spec.init, spec.low = "offsets", 0
    spec.high = min(lengths) if lengths else spec.high
    into = f"positions into `{lengths[min(lengths)]}` ({min(lengths)} elements)" if lengths else \
        f"positions up to {spec.high} (a guess: the buffers it points into have no known length)"
    return f"`{spec.name}` is an offsets array (the loop on line {loops[0].line} runs from `{loops[0].first}` to " \
        f"`{loops[0].last}`): sorted {into}, from 0 to {spec.high}"


def _value_range(spec: InputSpec, type_text: str) -> str:
    """Give ``spec`` the range of a value the kernel only compares or computes with (``type_text``: the C type of
    the kernel's parameter, ``"const unsigned int *"``: an unsigned element gets no negative values); the note."""
    unsigned = spec.dtype.startswith("uint") or spec.dtype == "bool" or \
        re.search(r"\b(unsigned|size_t|uint\d+_t)\b", type_text) is not None
    spec.low, spec.high = (0, 2) if spec.dtype == "bool" else (UNSIGNED_VALUES if unsigned else SIGNED_VALUES)
    return f"`{spec.name}` holds values, never an index or a loop's range (the kernel only compares or computes " \
        f"with them): randint over [{spec.low}, {spec.high}); adjust `low`/`high` to their valid range"


def _fill_note(spec: InputSpec, arg_value: Any) -> str | None:
    """A note when ``main()`` filled the input with one byte value (``cudaMemset(v, 1, ...)``)."""
    byte = arg_value.buffer.fill_byte if isinstance(arg_value, Ptr) else None
    if byte is None:
        return None
    return f"`{spec.name}`: main() sets every byte to {byte} (cudaMemset), one value in every element, which " \
        "would not exercise the kernel; the harness draws the values above instead"


def _single_value(spec: InputSpec, proven: bool) -> str | None:
    """Widen (a guess) or note (a proven index range) a ``randint`` range of a single value; the note."""
    if spec.init != "randint" or spec.high - spec.low > 1:
        return None
    if proven:
        return f"`{spec.name}`: its only valid index is {int(spec.low)}, so every element is {int(spec.low)} and a " \
            "check cannot tell candidates apart on its values"
    spec.high = spec.low + 2
    return f"`{spec.name}`: a range of one value would make every element {int(spec.low)} and a check that cannot " \
        f"fail; widened to [{int(spec.low)}, {int(spec.high)})"


def _range_of(spec: InputSpec, param: str, type_text: str, spec_of: dict[str, InputSpec], values: dict[str, int],
              facts: KernelFacts, sources: frozenset[str] | None) -> tuple[str, bool]:
    """Set ``spec``'s range from ``param``'s use (``type_text``: its C type); the note and whether the use proves
    it."""
    offsets = _offsets(spec, spec_of, facts, param)  # first: an offsets array may index its buffers too
    if offsets is not None:
        return offsets, True
    bounds = _gather_bounds(spec_of, values, facts, param)
    if bounds:
        high, proven, note = min(bounds, key=lambda b: (b[0], not b[1]))
        spec.high = max(1, high)
        proven = proven and all(b[1] for b in bounds)
        return "; ".join([note] + [b[2] for b in bounds if not b[1] and b[2] != note]), proven
    if sources is not None and param not in sources:
        return _value_range(spec, type_text), True
    return f"`{spec.name}`: randint over [0, {spec.high}) is a guess (the smallest buffer's length): htam did not " \
        "find how the kernel uses its values; adjust `high` to their valid range", False


def integer_ranges(h: Harness, by_param: dict[str, tuple[Any, InputSpec]], facts: KernelFacts) -> Harness:
    """Give each integer input drawn by ``randint`` the values its use in the kernel calls for (module docstring),
    with a note for each, written as a comment of the spec.

    Args:
        h: the inferred harness; its inputs are changed in place and notes appended.
        by_param: kernel parameter -> (the argument passed, with ``.value`` and ``.pointer``; its input spec).
        facts: the kernel's analysis facts.

    Returns:
        ``h``.
    """
    spec_of = {k: s for k, (_a, s) in by_param.items()}
    values = {k: a.value for k, (a, _s) in by_param.items() if isinstance(a.value, int) and not a.pointer}
    sources = index_sources(facts)
    for param, (arg, spec) in by_param.items():
        if spec.init != "randint":
            continue
        note, proven = _range_of(spec, param, getattr(arg, "type_text", ""), spec_of, values, facts, sources)
        h.notes.extend(n for n in (note, _single_value(spec, proven), _fill_note(spec, arg.value)) if n)
    return h
