"""Coalescing by remapping the thread index (``cuda.coalesce_remap``): swap the x and y roles of a 2-D kernel.

A 2-D kernel whose contiguous (last) array index comes from ``threadIdx.y`` makes the 32 lanes of a warp, which
differ in ``threadIdx.x``, touch addresses a whole row apart: every load and store is uncoalesced. Relabeling the
two dimensions, ``x <-> y`` in every ``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` of the kernel and in the
components of every launch's grid and block, gives each thread the same work as before (the same outputs, the
same loop order), only with consecutive lanes on the contiguous index. The decision comes from the analysis
layer's affine index strides: the rewrite is offered when fewer global accesses are strided along the new x
than along the old one.

Refused: kernels that depend on which threads share a warp (shuffles, ``__syncwarp``, ``warpSize``, ballots),
kernels calling a device function that reads the thread indices itself, kernels reading an x or y builtin inside a
macro's text (``#define TX(i) (threadIdx.x + (i))``: the edit cannot reach it), kernels without a launch in the file
(the grid must follow), and kernels where the swap does not reduce the strided accesses. A grid's y component is
limited to 65535 blocks, so a grid x larger than that fails to launch after the swap (the verifier sees it).

Idea source: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; S. Boehm, "How to Optimize a
CUDA Matmul Kernel" (2022), kernel 2 (global memory coalescing).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, launch_dims_edit, stale_comment_notes
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_WARP_LEVEL = ("__shfl_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_down_sync", "__syncwarp", "warpSize",
               "__ballot_sync", "__activemask", "__any_sync", "__all_sync", "__match_any_sync", "__reduce_add_sync")
_SWAP = {"x": "y", "y": "x"}
#: Comment phrases that state which thread dimension runs over what (they get a note of the swap).
_DIM_WORDS = ("x runs", "y runs", "rows on x", "columns on x", "rows on y", "columns on y", "x over", "y over")


def _strided(unit: CudaUnit, dim: str) -> list[str]:
    """Global accesses whose index strides along ``threadIdx.<dim>`` (neither 0 nor 1), as written."""
    return [f"{a.pointer}[{a.index_text}]" for a in unit.facts.global_accesses() if a.pattern(dim) == "strided"]


def _device_helpers_with_builtins(unit: CudaUnit) -> list[str]:
    """Functions of the file, other than the kernel, that read thread indices and that the kernel calls."""
    called = {unit.t(c.child_by_field_name("function")) for c in syn.calls(unit.body)}
    out = []
    for f in syn.function_definitions(unit.root):
        if f == unit.func:
            continue
        decl = f.child_by_field_name("declarator")
        name = unit.t(decl.child_by_field_name("declarator")) if decl is not None and syn.is_function_declarator(decl) else ""
        if name in called and any(unit.t(i) in _BUILTINS for i in syn.identifiers(f)):
            out.append(name)
    return out


@register
class CudaCoalesceRemap(CudaTransform):
    """Swap the x and y thread/block dimensions of a 2-D kernel so that lanes walk the contiguous index."""

    id = "cuda.coalesce_remap"
    languages = CUDA_LANGS
    summary = "coalesce by swapping the x and y thread dimensions (kernel builtins and launch grid/block)"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate, or why the swap would not help or is not safe."""
        fields = [n for n in syn.fields(unit.body)
                  if unit.t(n.child_by_field_name("argument")) in _BUILTINS
                  and unit.t(n.child_by_field_name("field")) in _SWAP]
        if not any(unit.t(n.child_by_field_name("field")) == "y" for n in fields):
            return self.not_applicable(f"{kernel.name} uses no y thread or block index; there is nothing to swap")
        words = {unit.t(i) for i in syn.identifiers(unit.body)}
        warp = sorted((words & set(_WARP_LEVEL)) | {b.text for b in unit.facts.barriers if b.scope == "warp"})
        if warp:
            return self.not_applicable(f"{kernel.name} uses {', '.join(warp)}; swapping x and y changes which "
                                       "threads share a warp")
        helpers = _device_helpers_with_builtins(unit)
        if helpers:
            return self.not_applicable(f"{kernel.name} calls {', '.join(helpers)}, which reads the thread indices "
                                       "itself; swap its dimensions by hand")
        hidden = [f"{b} in {m}" for m, b in unit.facts.macro_builtins if b.split(".")[-1] in _SWAP]
        if hidden:
            return self.not_applicable(
                f"{kernel.name} reads {', '.join(hidden[:3])} inside a macro; swapping x and y in the kernel's "
                "text would not reach the macro's, so swap them there by hand")
        before, after = _strided(unit, "x"), _strided(unit, "y")
        if not before:  # whether the swap would help comes first: without a launch site it is still true
            return self.not_applicable(f"no global access of {kernel.name} is strided along threadIdx.x")
        if len(after) >= len(before):
            return self.not_applicable(
                f"swapping x and y does not make more accesses coalesced ({len(before)} strided along x now: "
                f"{', '.join(before[:3])}; {len(after)} would be after the swap)")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; its grid must be swapped too")
        edits: list[TextEdit] = [unit.replace(n.child_by_field_name("field"), _SWAP[unit.t(n.child_by_field_name(
            "field"))]) for n in fields]
        for la in unit.launches:
            if la.block is None:
                return self.not_applicable(f"the launch on line {la.site.line} has no block argument")
            for expr in (la.grid, la.block):
                comps = [unit.t(c) for c in unit.dims_of(expr, la.host)] + ["1"]
                edits.append(launch_dims_edit(unit, la, expr, [comps[1], comps[0], *comps[2:-1]]))
        edits += stale_comment_notes(unit, "thread dimensions x and y swapped (coalescing)", list(_DIM_WORDS), edits)
        return [self.candidate(
            model,
            f"swap the x and y thread dimensions of {kernel.name} and of its launch grid and block: the accesses "
            f"{', '.join(before[:3])} become coalesced along threadIdx.x (same work per thread)",
            {"strided_before": len(before), "strided_after": len(after)},
            edits,
        )]
