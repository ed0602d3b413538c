"""``triton.grouped_ordering``: L2-friendly grouped program ordering for 2-D tiled kernels.

Programs are launched in linear order; with the plain row-major mapping, consecutive programs walk one
row of output tiles and re-read all of B. Grouping ``GROUP_M`` rows of tiles makes consecutive programs
share A rows and B columns in L2. The mapping is a bijection of the same grid, so the launch is
unchanged. Idea source: Triton tutorial 03 "Matrix Multiplication" (L2 cache optimizations).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.triton import dependents, program_axis
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._triton import TritonTransform, TritonUnit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.transforms.triton_launch import TRITON_LANGS
from htam_core.types.profile import Profile

GROUPS = (8, 4)
_NO_SHARED = ("no operand is shared along one program axis only: grouped ordering reuses, in L2, data indexed by "
              "{pm} alone (rows of A) and by {pn} alone (columns of B), and no tl.load reads such data")


def _top_assignments(unit: TritonUnit) -> list[Node]:
    out = []
    for st in unit.body.named_children:
        if syn.is_expression_statement(st) and st.named_children and syn.is_py_assignment(st.named_children[0]):
            out.append(st.named_children[0])
    return out


def _program_id_axis(unit: TritonUnit, rhs: Node | None) -> int | None:
    if rhs is None or not syn.is_py_call(rhs) or unit.callee(rhs) != "tl.program_id":
        return None
    axis = program_axis(rhs, unit.src)
    return int(axis) if axis in ("0", "1", "2") else None


def _stmt_range(unit: TritonUnit, a: Node) -> tuple[int, int]:
    st = a.parent
    start = syn.line_start(unit.src, st.start_byte)
    nl = unit.src.find(b"\n", st.end_byte)
    return start, (nl + 1 if nl != -1 else st.end_byte)


def _dot_operand_loads(unit: TritonUnit) -> list[Node] | None:
    """The ``tl.load`` calls whose values reach a ``tl.dot`` (a load inside the dot's arguments, or assigned to a
    name the dot's operands are computed from, through ``.to()``/``tl.trans`` wrappers); ``None`` when the kernel has no ``tl.dot`` or none
    of its operands is a load found so (then every load counts)."""
    dots = unit.calls(unit.body, "tl.dot")
    if not dots:
        return None
    read = {unit.t(n) for d in dots for n in syn.walk(d.child_by_field_name("arguments")) if syn.is_identifier(n)}
    assigns = syn.any_py_assignments(unit.body)
    grown = True
    while grown:  # every name the dot's operands are computed from (grad_z = grad_mix * invr)
        before = len(read)
        for a in assigns:
            if unit.t(a.child_by_field_name("left")) in read and a.child_by_field_name("right") is not None:
                read |= {unit.t(n) for n in syn.walk(a.child_by_field_name("right")) if syn.is_identifier(n)}
        grown = len(read) > before
    out = []
    for ld in unit.calls(unit.body, "tl.load"):
        node: Node | None = ld
        while node is not None and not syn.is_any_py_assignment(node) and node not in dots:
            node = node.parent
        if node in dots:
            out.append(ld)
        elif node is not None and unit.t(node.child_by_field_name("left")) in read:
            out.append(ld)
    return out or None


def shares_operands(unit: TritonUnit, pm: str, pn: str) -> bool:
    """Whether grouping ``pm``/``pn`` can give L2 reuse: some ``tl.load`` reads data indexed by ``pm`` and not
    ``pn`` (an A row panel, which programs of one tile row share) and another by ``pn`` and not ``pm`` (a B
    column panel). In a kernel with ``tl.dot`` only the dot's operands count (:func:`_dot_operand_loads`): the
    reuse is of A's rows and B's columns, and a mask or bias tile indexed by one axis shares nothing the remap
    brings closer. When every operand depends on ``pm`` (a batch x head axis), programs of different ``pm``
    share no operand and the remap cannot help (Triton tutorial 03, "L2 cache optimizations")."""
    on_m = set(dependents(unit.body, unit.src, [pm]))
    on_n = set(dependents(unit.body, unit.src, [pn]))
    kinds = set()
    for ld in _dot_operand_loads(unit) or unit.calls(unit.body, "tl.load"):
        args = ld.child_by_field_name("arguments").named_children
        if args and not syn.is_keyword_argument(args[0]):
            read = {unit.t(n) for n in syn.walk(args[0]) if syn.is_identifier(n)}
            kinds.add((bool(read & on_m), bool(read & on_n)))
    return (True, False) in kinds and (False, True) in kinds


def _grouped_pair(unit: TritonUnit, by_axis: dict[int, Node]) -> tuple[int, int] | None:
    """The two program axes to group: the first pair (in axis order) whose ids index different operands
    (:func:`shares_operands`); a third axis (batch x head, ``tl.program_id(0)`` of an attention kernel) is kept."""
    names = {ax: unit.t(a.child_by_field_name("left")) for ax, a in by_axis.items()}
    axes = sorted(names)
    for i, a in enumerate(axes):
        for b in axes[i + 1:]:
            if shares_operands(unit, names[a], names[b]):
                return a, b
    return None


@register
class TritonGroupedOrdering(TritonTransform):
    """Grouped (swizzled) ``pid_m``/``pid_n`` for 2-D tiled kernels."""

    id = "triton.grouped_ordering"
    languages = TRITON_LANGS
    summary = "grouped (L2-friendly) program ordering for 2-D tiled kernels"

    def propose_unit(
        self, unit: TritonUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Candidates with GROUP_M = 8 and 4."""
        if unit.facts.triton is not None and unit.facts.triton.grouped_program_ids:
            return self.not_applicable(f"{kernel.name} already groups its programs")
        if not (kernel.features.uses_dot or kernel.features.uses_2d_index):
            return self.not_applicable(f"{kernel.name} is not a 2-D tiled kernel (no tl.dot, no [:, None] tiles)")
        assigns = _top_assignments(unit)
        by_axis: dict[int, Node] = {}
        for a in assigns:
            ax = _program_id_axis(unit, a.child_by_field_name("right"))
            if ax is not None and syn.is_identifier(a.child_by_field_name("left")):
                by_axis.setdefault(ax, a)
        indent = unit.body_indent
        out: list[Candidate] = []
        if len(by_axis) >= 2:
            pair = _grouped_pair(unit, by_axis)
            if pair is None:
                first = sorted(by_axis)[:2]
                return self.not_applicable(_NO_SHARED.format(
                    pm=unit.t(by_axis[first[0]].child_by_field_name("left")),
                    pn=unit.t(by_axis[first[1]].child_by_field_name("left"))))
            return self._grid_candidates(unit, by_axis, pair)
        # 1-D grid: pid_m = pid // num_pid_n ; pid_n = pid % num_pid_n
        div = mod = None
        for a in assigns:
            r = a.child_by_field_name("right")
            if r is not None and syn.is_binary_operator(r):
                op = unit.t(r.child_by_field_name("operator"))
                if op == "//" and div is None:
                    div = a
                elif op == "%" and mod is None:
                    mod = a
        names = {unit.t(a.child_by_field_name("left")) for a in assigns}
        if div is None or mod is None or "num_pid_m" not in names:
            return self.not_applicable(
                "no pid_m/pid_n from tl.program_id(0)/(1), nor pid // num_pid_n with num_pid_m defined"
            )
        rd, rm = div.child_by_field_name("right"), mod.child_by_field_name("right")
        pid, npn = unit.t(rd.child_by_field_name("left")), unit.t(rd.child_by_field_name("right"))
        if unit.t(rm.child_by_field_name("left")) != pid or unit.t(rm.child_by_field_name("right")) != npn:
            return self.not_applicable("the pid_m/pid_n split is not pid // n and pid % n over the same n")
        pm, pn = unit.t(div.child_by_field_name("left")), unit.t(mod.child_by_field_name("left"))
        if not shares_operands(unit, pm, pn):
            return self.not_applicable(_NO_SHARED.format(pm=pm, pn=pn))
        for g in GROUPS:
            code = [
                "# grouped ordering: GROUP_M rows of tiles per group, for L2 reuse",
                f"htam_group = {g} * {npn}",
                f"htam_first_m = ({pid} // htam_group) * {g}",
                f"htam_group_m = {unit.tl}.minimum(num_pid_m - htam_first_m, {g})",
                f"{pm} = htam_first_m + (({pid} % htam_group) % htam_group_m)",
                f"{pn} = ({pid} % htam_group) // htam_group_m",
            ]
            out.append(self._cand(unit, div, mod, code, indent, g, pm, pn))
        return out

    def _grid_candidates(self, unit: TritonUnit, by_axis: dict[int, Node], pair: tuple[int, int]) -> list[Candidate]:
        """The remap of program axes ``pair`` = (m axis, n axis) of a 2-D or 3-D grid, GROUP_M in :data:`GROUPS`."""
        (xm, xn), tl = pair, unit.tl
        am, an = by_axis[xm], by_axis[xn]
        pm, pn = unit.t(am.child_by_field_name("left")), unit.t(an.child_by_field_name("left"))
        out = []
        for g in GROUPS:
            code = [
                "# grouped ordering: GROUP_M rows of tiles per group, for L2 reuse (same grid, remapped)",
                f"htam_pid = {tl}.program_id({xn}) * {tl}.num_programs({xm}) + {tl}.program_id({xm})",
                f"htam_num_pid_m = {tl}.num_programs({xm})",
                f"htam_num_pid_n = {tl}.num_programs({xn})",
                f"htam_group = {g} * htam_num_pid_n",
                f"htam_first_m = (htam_pid // htam_group) * {g}",
                f"htam_group_m = {tl}.minimum(htam_num_pid_m - htam_first_m, {g})",
                f"{pm} = htam_first_m + ((htam_pid % htam_group) % htam_group_m)",
                f"{pn} = (htam_pid % htam_group) // htam_group_m",
            ]
            out.append(self._cand(unit, am, an, code, unit.body_indent, g, pm, pn))
        return out

    def _cand(self, unit: TritonUnit, a1: Node, a2: Node, code: list[str], indent: str, g: int, pm: str, pn: str):
        s1, e1 = _stmt_range(unit, a1)
        s2, e2 = _stmt_range(unit, a2)
        text = "".join(f"{indent}{ln}\n" for ln in code)
        edits = [TextEdit(s1, e1, text), TextEdit(s2, e2, "")] if s2 >= e1 else [TextEdit(s2, e2, ""), TextEdit(s1, e1, text)]
        return self.candidate(
            unit.model,
            f"remap {pm}/{pn} of {unit.kernel.name} to grouped ordering with GROUP_M={g} (same grid, L2 reuse)",
            {"group_m": g},
            edits,
        )
