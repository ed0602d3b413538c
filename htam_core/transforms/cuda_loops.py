"""CUDA loop transforms: ``#pragma unroll`` on constant-trip loops (``cuda.unroll``) and the grid-stride
loop with an SM-count-sized grid (``cuda.grid_stride``). A kernel launched from another file (no launch site in
its own) gets the launch-independent form: the grid-stride loop alone, correct for any grid, the grid left to the
launcher.

Idea sources: CUDA C++ Programming Guide, "#pragma unroll"; NVIDIA developer blog, "CUDA Pro Tip:
Write Flexible Kernels with Grid-Stride Loops" (Harris, 2013).
"""

from __future__ import annotations

import dataclasses

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import Elementwise, carried_locals, elementwise
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    include_insert_point,
    statement_span,
    wrap_grid,
)
from htam_core.transforms._grid_loop import IndexLoop, index_loop, index_type
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS, SM_GRID_HELPER, SM_GRID_TEXT
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

FULL_UNROLL_MAX = 64


def trip_count(unit: CudaUnit, loop: Node) -> int | None:
    """Constant trip count of ``loop`` from the kernel's facts (:attr:`LoopFact.trip_value`), else ``None``."""
    fact = unit.facts.loop_at(unit.file_byte(loop))
    return fact.trip_value if fact is not None else None


def _has_unroll_pragma(unit: CudaUnit, loop: Node) -> bool:
    """``#pragma unroll`` precedes ``loop`` (:attr:`LoopFact.has_unroll_pragma`)."""
    fact = unit.facts.loop_at(unit.file_byte(loop))
    return fact is not None and fact.has_unroll_pragma


@register
class CudaUnroll(CudaTransform):
    """``#pragma unroll`` before loops with a constant trip count."""

    id = "cuda.unroll"

    kind = "hint"
    languages = CUDA_LANGS
    summary = "#pragma unroll on loops with a constant trip count"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate unrolling every eligible loop (full unroll up to 64 trips, else by 4)."""
        loops = syn.for_loops(unit.body)
        if not loops:
            return self.not_applicable(f"{kernel.name} has no for loop")
        edits: list[TextEdit] = []
        done: list[dict[str, int]] = []
        skipped = []
        for loop in loops:
            line = unit.src[: loop.start_byte].count(b"\n") + 1 + _line_offset(unit)
            if _has_unroll_pragma(unit, loop):
                skipped.append(f"line {line} already unrolled")
                continue
            if loop.parent is None or not syn.is_block(loop.parent):
                skipped.append(f"line {line} is not directly inside a block")
                continue
            n = trip_count(unit, loop)
            if n is None:
                skipped.append(f"line {line} has no constant trip count")
                continue
            pragma = "#pragma unroll" if n <= FULL_UNROLL_MAX else "#pragma unroll 4"
            indent = syn.indent_of(unit.src, loop.start_byte)
            if syn.only_space_before(unit.src, loop.start_byte):
                edits.append(unit.insert(syn.line_start(unit.src, loop.start_byte), f"{indent}{pragma}\n"))
            else:
                edits.append(unit.insert(loop.start_byte, f"\n{pragma}\n{indent}"))
            done.append({"line": line, "trip_count": n})
        if not edits:
            return self.not_applicable("no loop qualifies: " + "; ".join(skipped))
        lines = ", ".join(str(d["line"]) for d in done)
        return [
            self.candidate(
                model,
                f"add #pragma unroll to the constant-trip loop(s) of {kernel.name} on line(s) {lines}",
                {"loops": done},
                edits,
            )
        ]


def _line_offset(unit: CudaUnit) -> int:
    return model_line(unit.model.text, unit.base) - 1


def model_line(text: str, byte: int) -> int:
    """1-based line of file byte offset ``byte``."""
    return text.encode("utf-8")[:byte].count(b"\n") + 1


def grid_stride_body_edits(unit: CudaUnit) -> list[TextEdit] | str:
    """Edits turning the elementwise body into a grid-stride loop (shared with other transforms), or why not: a
    body that moves a parameter (``d_keys += base;``, ``n -= k;``) carries it from one pass of the loop into the
    next, so the second element a thread takes would start from the moved value. A guard that also tests the
    element (:attr:`Elementwise.predicate`: ``if (i < n && v[i] != 0)``) keeps that test inside the loop's body:
    ``for (...; i < n; ...) if (v[i] != 0) ...``, or ``if (v[i] == 0) continue;`` for an early return."""
    ew = elementwise(unit, invariant_terms=True, per_element_terms=True)
    if isinstance(ew, str):
        return ew
    moved = [p.name for p in unit.kernel.params if p.name and unit.assigned_in(unit.body, p.name)]
    if moved:
        return (f"the body moves parameter {moved[0]} (assigned, incremented or address-taken); in a grid-stride loop "
                "each later pass would start from the moved value")
    carried = carried_locals(unit, ew)
    if carried:
        return (f"the guarded code updates {carried[0]}, declared before the bound check; in a grid-stride loop its "
                "value would carry from one element to the next (declare it inside the guarded code)")
    loop = index_loop(unit.types, ew.name, index_type(ew), unit.t(ew.gid), unit.t(ew.bound), extra=ew.extra)
    ds, de = statement_span(unit, ew.decl)
    edits = [unit.edit(ds, de, "")]
    if ew.form == "if":
        edits += _guarded_loop(unit, ew, loop)
        noop = ew.else_span()  # the guard's no-op else (`else return;`) cannot follow the loop: it goes with the if
        if noop is not None:
            edits.append(unit.edit(*noop, ""))
    else:
        indent = syn.indent_of(unit.src, ew.guard.start_byte)
        first, last = ew.stmts[0], ew.stmts[-1]
        # from the first statement's line start when it opens its line, else from the statement itself (a guard
        # and its body on one line: the line also holds the guard, which the edit replaces)
        own_line = syn.only_space_before(unit.src, first.start_byte)
        start = syn.line_start(unit.src, first.start_byte) if own_line else first.start_byte
        bind = f"{indent}{loop.bind}\n" if loop.bind else ""
        skip = f"{indent}if ({ew.skip}) continue;\n" if ew.skip else ""
        inner = bind + skip + ("" if own_line else indent) + unit.src[start : last.end_byte].decode()
        inner = "\n".join(("    " + ln) if ln.strip() else ln for ln in inner.split("\n"))
        edits.append(unit.edit(ew.guard.start_byte, last.end_byte, f"{loop.head} {{\n{inner}\n{indent}}}"))
    return edits


def _guarded_loop(unit: CudaUnit, ew: Elementwise, loop: IndexLoop) -> list[TextEdit]:
    """The edits turning the guard ``if (i < n [&& pred]) S`` of ``ew`` into the loop ``loop`` over ``S`` (the
    element's test kept inside: ``if pred S``). They touch the guard's header and the ends of ``S`` only, never
    inside it, so a step that also edits ``S`` (the privatized histogram) composes with them. With the index
    declared from a 64-bit counter (:attr:`IndexLoop.bind`) the declaration opens the loop's body: a block ``S``
    without a test takes it after its ``{``, otherwise ``S`` goes in a new block after it."""
    assert ew.consequence is not None
    cond = ew.guard.child_by_field_name("condition")
    test = f" if {ew.predicate}" if ew.predicate else ""
    if not loop.bind:
        return [unit.edit(ew.guard.start_byte, cond.end_byte, loop.head + test)]
    indent = syn.indent_of(unit.src, ew.guard.start_byte)
    s = ew.consequence.start_byte
    if syn.is_block(ew.consequence) and not ew.predicate:  # `{ S }`: the block's braces become the loop's
        multiline = b"\n" in unit.src[s:ew.consequence.end_byte]
        sep = f"\n{indent}    " if multiline else " "
        return [unit.edit(ew.guard.start_byte, s + 1, f"{loop.head} {{{sep}{loop.bind}")]
    opening = f"{loop.head} {{\n{indent}    {loop.bind}\n{indent}    {test.lstrip()}{' ' if test else ''}"
    return [unit.edit(ew.guard.start_byte, s, opening), unit.insert(ew.consequence.end_byte, f"\n{indent}}}")]


@register
class CudaGridStride(CudaTransform):
    """Convert an ``if (i < n)`` elementwise kernel into a grid-stride loop with an SM-sized grid."""

    id = "cuda.grid_stride"
    languages = CUDA_LANGS
    summary = "grid-stride loop, grid capped at a multiple of the SM count"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Candidates with the grid capped at 8 and 32 blocks per SM; a kernel with no launch site in the file gets
        one launch-independent candidate instead: the grid-stride loop alone, correct for any grid."""
        if kernel.features.has_grid_stride_loop:
            return self.not_applicable(f"{kernel.name} already has a grid-stride loop")
        body = grid_stride_body_edits(unit)
        if isinstance(body, str):
            return self.not_applicable(body)
        if not unit.launches_editable:
            # launched from another file or through a pointer shared with other kernels: the loop alone is correct for any grid; the grid is left to the launcher
            return [self.candidate(
                model,
                f"make {kernel.name} a grid-stride loop, launch-independent: correct for any grid, so the grid is "
                "unchanged (capping it at a multiple of the SM count where it is launched is the second half of this "
                "step)",
                {"blocks_per_sm": None, "launch": "independent"},
                body,
            )]
        helper: list[TextEdit] = []
        if SM_GRID_HELPER.encode() not in unit.src:
            helper.append(unit.insert(include_insert_point(unit), SM_GRID_TEXT))
        out = []
        for per_sm in (8, 32):
            launch_edits = [wrap_grid(unit, la, SM_GRID_HELPER + "({}, " + str(per_sm) + ")") for la in unit.launches]
            bad = next((e for e in launch_edits if isinstance(e, str)), None)
            if bad:
                return self.not_applicable(bad)
            out.append(dataclasses.replace(
                self.candidate(
                    model,
                    f"make {kernel.name} a grid-stride loop and cap its grid at {per_sm} blocks per SM",
                    {"blocks_per_sm": per_sm},
                    helper + body + launch_edits,
                ),
                helpers={SM_GRID_HELPER: SM_GRID_TEXT},
            ))
        return out
