"""Triton launch transforms: ``BLOCK_*`` constexpr retuning (``triton.block_size``) and
``num_warps``/``num_stages`` retuning (``triton.warps_stages``) at the launch site.

A block size is only retuned when the kernel masks every ``tl.load``/``tl.store`` (so any power of two
stays in bounds) and the grid follows the block size (``triton.cdiv(n, BLOCK)`` over the same local
variable or literal, or ``meta["BLOCK"]``), or the kernel loops over the dimension in steps of the block.
Idea source: Triton tutorials (vector add, fused softmax): ``BLOCK_SIZE`` and ``num_warps`` choices.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import python_int
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.triton import launch_argument, memop_mask, module_value
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._triton import (
    TLaunch,
    TritonTransform,
    TritonUnit,
    add_kwarg,
    stale_text_notes,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

TRITON_LANGS = ("triton",)
#: Block sizes a single ``BLOCK_*`` may take, in the order they are proposed: nearest to 1024 first (the
#: Triton vector-add tutorial's ``BLOCK_SIZE=1024``), larger before smaller at equal distance. The loop tries
#: a strategy's first new candidate, so the order is the field's default guess, not a measurement.
BLOCK_CHOICES = (1024, 2048, 512, 4096, 256, 128)
#: ``num_warps`` values; proposed nearest-first to :func:`preferred_warps`.
WARPS = (1, 2, 4, 8, 16)
STAGES = (2, 3, 4, 5)


def unmasked_accesses(unit: TritonUnit) -> list[str]:
    """Source of every ``tl.load``/``tl.store`` without ``mask=`` (block pointers aside) whose address depends on
    a tile (a ``tl.arange`` or a name the analysis layer derives from one); a per-program scalar access such as
    ``tl.store(out_ptr + row, total)`` stays in bounds whatever the block size."""
    tf = unit.facts.triton
    tiled = set(tf.arange_dependents) if tf is not None else set()
    out = []
    for name in ("tl.load", "tl.store"):
        for c in unit.calls(unit.body, name):
            if memop_mask(c, name[3:], unit.src) is not None or unit.kwarg(c, "boundary_check") is not None:
                continue
            args = [a for a in c.child_by_field_name("arguments").named_children if not syn.is_keyword_argument(a)]
            addr = args[0] if args else c
            if unit.calls(addr, "tl.arange") or {unit.t(i) for i in syn.identifiers(addr)} & tiled \
                    or not (syn.is_binary_operator(addr) or syn.is_identifier(addr)):
                out.append(unit.t(c))
    return out


@dataclass
class BlockSetting:
    """Where a block constexpr's launch value comes from and how to change it consistently.

    ``literal`` is the integer node to rewrite; ``None`` when the launch leaves the parameter to its default
    (the new value is then passed as a keyword, :func:`block_edits`). ``local`` is the variable passed for it
    (a local of the launching function or a module constant), if any.
    """

    param: str
    value: int
    literal: Node | None
    local: str | None  # the local variable passed as the kwarg, if any


def block_setting(unit: TritonUnit, launch: TLaunch, param: str) -> BlockSetting | str:
    """Resolve ``param`` at ``launch`` to an integer: a literal passed by keyword or position (directly, or through
    one local assignment or a module constant), or the parameter's default when the launch does not pass it."""
    v = launch_argument(launch.call, unit.kernel, param, unit.src)
    if v is None:
        p = next((q for q in unit.kernel.params if q.name == param), None)
        d = python_int(p.default) if p is not None and p.default else None
        if d:
            return BlockSetting(param, d, None, None)
        return f"{param} is not passed at the launch on line {launch.line}"
    if syn.is_integer(v):
        return BlockSetting(param, python_int(unit.t(v)) or 0, v, None)
    if syn.is_identifier(v):
        name = unit.t(v)
        local = unit.assignments(launch.host, name) if launch.host is not None else []
        rhs = unit.single_value(launch.host, name, launch.call.start_byte) if local else module_value(unit.root, name, unit.src)
        if rhs is not None and syn.is_integer(rhs) and python_int(unit.t(rhs)):
            return BlockSetting(param, python_int(unit.t(rhs)) or 0, rhs, name)
        if rhs is not None:
            return f"{param} is computed ({unit.t(rhs)}); it is not a tunable constant"
    return f"{param} is computed ({unit.t(v)}); it is not a tunable constant"


def grid_follows(unit: TritonUnit, launch: TLaunch, s: BlockSetting) -> tuple[bool, list[Node]] | str:
    """Whether the grid follows ``s`` and which literal nodes in the grid must change with it."""
    if unit.grid_uses_meta(launch):
        return True, []
    grid = unit.grid_expr(launch)
    idents = [n for n in syn.identifiers(grid) if unit.t(n) == (s.local or s.param)]
    if s.local and idents:
        return True, []
    lits = [n for n in syn.integers(grid) if python_int(unit.t(n)) == s.value]
    if s.local is None and lits:
        for n in lits:
            call = n.parent.parent if n.parent is not None else None
            if call is None or not syn.is_py_call(call) or not unit.t(call.child_by_field_name("function")).endswith("cdiv"):
                return f"the grid uses {s.value} in {unit.t(n.parent)!r}, not as triton.cdiv(..., {s.value})"
        return True, lits
    return False, []


def loops_over_block(unit: TritonUnit, param: str) -> bool:
    """True when the kernel covers a dimension by looping over tiles of ``param`` whatever its value (the analysis
    layer's :meth:`~htam_core.source.analysis.facts.TritonFacts.loops_over_block`: ``range(0, N, PARAM)``, or
    ``for t in tl.static_range(NUM_TILES)`` over ``t * PARAM + tl.arange(0, PARAM)`` with ``NUM_TILES`` recomputed
    by ``@triton.heuristics``)."""
    tf = unit.facts.triton
    return tf is not None and tf.loops_over_block(param)


def old_value_words(param: str, value: int) -> list[str]:
    """Words whose mention in a docstring or comment describes ``param`` set to ``value`` (the old setting a
    transform changes): ``"64"`` (a block size of 8 or more), ``"4 warps"``, ``"num_warps=4"``, ``"3 stages"``, and
    ``"→ 4"``, the end of an earlier step's note that set it."""
    if param == "num_warps":
        return [f"{value} warps", f"num_warps={value}", f"num_warps = {value}", f"→ {value}"]
    if param == "num_stages":
        return [f"{value} stages", f"num_stages={value}", f"num_stages = {value}", f"→ {value}"]
    return ([str(value)] if value >= 8 else [f"{param}={value}", f"{param} = {value}", f"→ {value}"])


def block_edits(unit: TritonUnit, param: str, new: int) -> list[TextEdit] | str:
    """Edits setting ``param`` to ``new`` at every launch with the grid kept consistent."""
    edits: dict[int, TextEdit] = {}
    for la in unit.launches:
        s = block_setting(unit, la, param)
        if isinstance(s, str):
            return s
        follows = grid_follows(unit, la, s)
        if isinstance(follows, str):
            return follows
        ok, lits = follows
        if not ok and not loops_over_block(unit, param):
            return (
                f"the grid ({unit.t(la.grid)}) does not follow {param} and the kernel does not loop over it; "
                "a different block would change the coverage"
            )
        for other in unit.kernel.constexpr_params:
            if other != param and unit.is_block_param(other):
                o = block_setting(unit, la, other)
                if isinstance(o, str):
                    continue
                if o.literal is not None and s.literal is not None and o.literal.start_byte == s.literal.start_byte:
                    return f"{param} and {other} are set from the same value"
                if lits and o.value == s.value and o.local is None:
                    return f"the grid's literal {s.value} could belong to {param} or {other}"
        if s.literal is None:
            added = add_kwarg(unit, la.call, f"{param}={new}")
            edits[added.start_byte] = added
        for n in [s.literal, *lits] if s.literal is not None else lits:
            edits[n.start_byte] = unit.replace(n, str(new))
    return [edits[k] for k in sorted(edits)]


@register
class TritonBlockSize(TritonTransform):
    """Retune ``BLOCK_*`` constexprs at the launch site (powers of two, masked kernels only)."""

    id = "triton.block_size"

    kind = "launch"
    languages = TRITON_LANGS
    summary = "retune BLOCK_* constexprs at the launch site"

    def propose_unit(
        self, unit: TritonUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Candidates 128..4096 for a single block param (nearest to 1024 first); x2, then /2, per param for several.
        Each candidate's description says whether it raises or lowers the tile."""
        params = [p for p in kernel.constexpr_params if unit.is_block_param(p)]
        if not params:
            return self.not_applicable(f"{kernel.name} has no BLOCK_* constexpr parameter")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file")
        tuned = "autotune" in kernel.attributes
        if tuned and not any(p in la.kwargs for la in unit.launches for p in params):
            return self.not_applicable(f"{', '.join(params)} are chosen by @triton.autotune; use triton.autotune")
        bare = unmasked_accesses(unit)
        if bare:
            return self.not_applicable(
                f"{kernel.name} has unmasked accesses ({bare[0]}); another block size could go out of bounds"
            )
        out: list[Candidate] = []
        reasons: list[str] = []
        for p in params:
            s = block_setting(unit, unit.launches[0], p)
            if isinstance(s, str):
                reasons.append(s)
                continue
            if len(params) == 1:
                choices = [v for v in BLOCK_CHOICES if v != s.value]
            else:
                choices = [v for v in (s.value * 2, s.value // 2) if 16 <= v <= 4096]  # raise first
            for v in choices:
                edits = block_edits(unit, p, v)
                if isinstance(edits, str):
                    reasons.append(edits)
                    break
                edits += stale_text_notes(unit, f"{p} {s.value} → {v}", old_value_words(p, s.value), edits)
                out.append(
                    self.candidate(
                        model,
                        f"launch {kernel.name} with {p}={v} (was {s.value}: {_direction(s.value, v)}); the grid "
                        "follows",
                        {p: v, "previous": s.value},
                        edits,
                    )
                )
        if not out:
            return self.not_applicable(reasons[0] if reasons else "no block size to change")
        return out


def _direction(old: int, new: int) -> str:
    """What a block change does, in words (the step retunes both ways: its candidates say which)."""
    return "raises the per-program tile" if new > old else "lowers the per-program tile"


def preferred_warps(block_elems: int | None) -> int:
    """The ``num_warps`` the Triton fused-softmax tutorial picks for a tile of ``block_elems`` elements:
    4 below 2048, 8 below 4096, else 16 (4, Triton's default, when the tile size is unknown)."""
    if block_elems is None or block_elems < 2048:
        return 4
    return 8 if block_elems < 4096 else 16


def _warps_order(unit: TritonUnit, kernel: Kernel) -> list[int]:
    """:data:`WARPS` nearest-first (log2 distance) to the preferred value for the largest ``BLOCK_*`` at the
    first launch; larger before smaller at equal distance. When every ``BLOCK_*`` is a known constant, values with
    more threads (32 per warp) than the tile's elements (the product of the ``BLOCK_*``) are left out: the extra
    warps would hold replicated copies of the same tile (a 128-element tile gets at most 4 warps)."""
    elems, tile, known = None, 1, bool(unit.launches)
    if unit.launches:
        for p in kernel.constexpr_params:
            if unit.is_block_param(p):
                s = block_setting(unit, unit.launches[0], p)
                if isinstance(s, str):
                    known = False
                else:
                    elems, tile = max(elems or 0, s.value), tile * s.value
    want = preferred_warps(elems)
    fits = [w for w in WARPS if not (known and elems is not None) or 32 * w <= max(tile, 32)]
    return sorted(fits, key=lambda w: (abs(w.bit_length() - want.bit_length()), -w))


def _kw_int(unit: TritonUnit, la: TLaunch, name: str) -> tuple[int | None, Node | None]:
    kw = la.kwargs.get(name)
    if kw is None:
        return None, None
    v = kw.child_by_field_name("value")
    return python_int(unit.t(v)), v


@register
class TritonWarpsStages(TritonTransform):
    """Retune ``num_warps`` and ``num_stages`` at the launch site."""

    id = "triton.warps_stages"

    kind = "launch"
    languages = TRITON_LANGS
    summary = "retune num_warps / num_stages at the launch site"

    def propose_unit(
        self, unit: TritonUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate per other ``num_warps`` value, and per ``num_stages`` value when the kernel loops."""
        if "autotune" in kernel.attributes:
            return self.not_applicable(f"{kernel.name} is autotuned: its configs set num_warps/num_stages")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file")
        out: list[Candidate] = []
        for key, choices, default in (("num_warps", _warps_order(unit, kernel), 4), ("num_stages", STAGES, 3)):
            if key == "num_stages" and not (syn.for_loops(unit.body)):
                continue
            cur_vals = set()
            for la in unit.launches:
                v, node = _kw_int(unit, la, key)
                if node is not None and v is None:
                    break
                cur_vals.add(v if v is not None else default)
            else:
                if len(cur_vals) != 1:
                    continue
                cur = cur_vals.pop()
                for v in choices:
                    if v == cur:
                        continue
                    edits = []
                    for la in unit.launches:
                        _, node = _kw_int(unit, la, key)
                        edits.append(unit.replace(node, str(v)) if node is not None else add_kwarg(unit, la.call, f"{key}={v}"))
                    edits += stale_text_notes(unit, f"{key} {cur} → {v}", old_value_words(key, cur), edits)
                    out.append(
                        self.candidate(
                            model, f"launch {kernel.name} with {key}={v} (was {cur})", {key: v, "previous": cur}, edits
                        )
                    )
        if not out:
            return self.not_applicable(f"{kernel.name}'s launches set num_warps/num_stages from computed values")
        return out
