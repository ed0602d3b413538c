"""Triton hint transforms: cache/eviction hints on streaming loads (``triton.cache_hints``) and
divisibility/contiguity hints on block offsets (``triton.divisibility_hints``).

Only hints that are provably true are emitted: ``tl.multiple_of``/``tl.max_contiguous`` go on offsets
of the form ``pid * BLOCK + tl.arange(0, BLOCK)``, which start at a multiple of BLOCK and are BLOCK
contiguous elements. A load is "streaming" (read once) when it is outside any loop and its address
depends on the program id without ``%`` or ``//`` (each program reads its own slice).
Idea source: Triton docs, ``tl.load`` (``eviction_policy``, ``cache_modifier``), ``tl.multiple_of``,
``tl.max_contiguous``.
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.triton import pid_axes, program_axes_of, read_program_axes
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._triton import TritonTransform, TritonUnit, add_kwarg
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.transforms.triton_launch import TRITON_LANGS
from htam_core.types.profile import Profile


def _in_loop(node: Node, stop: Node) -> bool:
    p = node.parent
    while p is not None and p != stop:
        if syn.is_for_or_while(p):
            return True
        p = p.parent
    return False


@register
class TritonCacheHints(TritonTransform):
    """``eviction_policy="evict_first"`` or ``cache_modifier=".cg"`` on loads that are read once."""

    id = "triton.cache_hints"

    kind = "hint"
    languages = TRITON_LANGS
    summary = "evict_first / .cg cache hints on streaming loads"

    def propose_unit(
        self, unit: TritonUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Two candidates: the eviction hint, and the L2-only (``.cg``) cache modifier."""
        loads = unit.calls(unit.body, "tl.load")
        if not loads:
            return self.not_applicable(f"{kernel.name} has no tl.load")
        axes = pid_axes(unit.body, unit.src, unit.names)
        # a load indexed by fewer axes is read by every program along the others
        used = read_program_axes(unit.body, unit.src, unit.names)
        streaming: list[Node] = []
        shared = 0
        for ld in loads:
            if unit.kwarg(ld, "eviction_policy") is not None or unit.kwarg(ld, "cache_modifier") is not None:
                continue
            if _in_loop(ld, unit.body):
                continue
            args = ld.child_by_field_name("arguments").named_children
            if not args or syn.is_keyword_argument(args[0]):
                continue
            dep = program_axes_of(args[0], unit.src, unit.names, axes)
            if dep and used <= dep:
                streaming.append(ld)
            elif dep:
                shared += 1
        if not streaming:
            extra = (f" ({shared} load(s) are indexed by some program axes only, so the programs along the others "
                     "read the same data again)") if shared else ""
            return self.not_applicable(
                "no streaming load: every tl.load is in a loop, already hinted, or shared between programs" + extra
            )
        out = []
        for kw, val, why in (
            ("eviction_policy", '"evict_first"', "evict them from L2 first"),
            ("cache_modifier", '".cg"', "cache them in L2 only (.cg)"),
        ):
            edits: list[TextEdit] = [add_kwarg(unit, ld, f"{kw}={val}") for ld in streaming]
            out.append(
                self.candidate(
                    model,
                    f"mark {len(streaming)} read-once load(s) of {kernel.name} to {why}",
                    {kw: val.strip('"'), "loads": [unit.t(ld)[:80] for ld in streaming]},
                    edits,
                )
            )
        return out


@register
class TritonDivisibilityHints(TritonTransform):
    """``tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)`` after ``offs = pid * BLOCK + tl.arange(0, BLOCK)``."""

    id = "triton.divisibility_hints"

    kind = "hint"
    languages = TRITON_LANGS
    summary = "tl.multiple_of / tl.max_contiguous on block offsets"

    def propose_unit(
        self, unit: TritonUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate hinting every matching offset assignment."""
        if unit.calls(unit.body, "tl.multiple_of") or unit.calls(unit.body, "tl.max_contiguous"):
            return self.not_applicable(f"{kernel.name} already has divisibility/contiguity hints")
        tainted = set(pid_axes(unit.body, unit.src, unit.names)) | {"pid"}
        edits, names = [], []
        for a in syn.py_assignments(unit.body):
            m = self._match(unit, a, tainted)
            if m is None:
                continue
            var, block = m
            indent = syn.indent_of(unit.src, a.start_byte)
            stmt_end = a.end_byte
            edits.append(unit.insert(stmt_end, f"\n{indent}{var} = {unit.tl}.max_contiguous({unit.tl}.multiple_of({var}, {block}), {block})"))
            names.append(var)
        if not edits:
            return self.not_applicable(
                "no offsets of the form `pid * BLOCK + tl.arange(0, BLOCK)` (the only form whose hints are provable)"
            )
        return [
            self.candidate(
                model,
                f"tell the compiler {', '.join(names)} in {kernel.name} start at a multiple of the block and are "
                "contiguous (tl.multiple_of / tl.max_contiguous)",
                {"offsets": names},
                edits,
            )
        ]

    @staticmethod
    def _match(unit: TritonUnit, a: Node, tainted: set[str]) -> tuple[str, str] | None:
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        if left is None or not syn.is_identifier(left) or right is None or not syn.is_binary_operator(right):
            return None
        if unit.t(right.child_by_field_name("operator")) != "+" or a.parent is None or a.parent.parent != unit.body:
            return None
        for base, ar in ((right.child_by_field_name("left"), right.child_by_field_name("right")),
                         (right.child_by_field_name("right"), right.child_by_field_name("left"))):
            if not syn.is_py_call(ar) or unit.callee(ar) != "tl.arange":
                continue
            args = ar.child_by_field_name("arguments").named_children
            if len(args) != 2 or unit.t(args[0]) != "0":
                continue
            block = unit.t(args[1])
            if block not in unit.kernel.constexpr_params:
                continue
            base = syn.unwrap_parens(base)
            if syn.is_identifier(base):
                rhs = unit.single_value(unit.body, unit.t(base), a.start_byte)
                base = syn.unwrap_parens(rhs) if rhs is not None else base
            if not syn.is_binary_operator(base) or unit.t(base.child_by_field_name("operator")) != "*":
                continue
            ops = {unit.t(base.child_by_field_name("left")), unit.t(base.child_by_field_name("right"))}
            if block not in ops:
                continue
            other = (ops - {block}) or {block}
            o = other.pop()
            if o in tainted or unit.names.canonical(o).startswith("tl.program_id("):
                return unit.t(left), block
        return None
