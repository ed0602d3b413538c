"""Block-wide scan with warp shuffles (``cuda.block_scan``): a segment prefix loop becomes a warp-shuffle scan.

A kernel whose threads each sum their block's segment up to their own element in a serial loop
(:class:`~htam_core.source.analysis.prefix_loop.PrefixLoop`: ``for (j = seg; j <= i; ++j) s += in[j];``, ``O(blockDim)``
loads per thread) is rewritten to the textbook's block scan: each thread loads its own element (zero past the bound,
so every thread of the block takes part in the shuffles and barriers), an inclusive warp scan with
``__shfl_up_sync``, the warps' totals in a ``__shared__`` array of 32, a scan of those totals by warp 0, and the
previous warps' total added to each thread's value. An exclusive loop (``j < i``) takes the value of the lane below
(``__shfl_up_sync`` by one, zero in lane 0) before the warps' totals are added. The bounds check stays on the store
only: the early return goes (a thread past the bound must still reach the barriers). The block must be a multiple
of 32 threads and at most 1024 at every launch in the file (whole warps; at most 32 warps). Float sums change
order (``reorders_only``); integer sums are exact.

Idea sources: Kirk and Hwu, "Programming Massively Parallel Processors", "Parallel scan"; the CUDA C++
Programming Guide, "Warp Shuffle Functions" (the ``__shfl_up_sync`` inclusive scan); M. Harris, S. Sengupta and
J. D. Owens, "Parallel Prefix Sum (Scan) with CUDA", GPU Gems 3, ch. 39 (scan of per-block partial sums).
"""

from __future__ import annotations

import re
from dataclasses import replace

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.prefix_loop import EXACT_TYPES, PrefixLoop, segment_prefix_loop
from htam_core.source.analysis.running_sum import running_sum_refusal
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, statement_span
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: The shared array of the warps' totals (one per warp of the block, at most 32).
SUMS = "htam_warp_sums"
_FULL = "0xffffffffu"


#: The names the rewrite declares (each ``htam_`` + one of these), renamed together when the kernel's file has one.
_NAMES = re.compile(r"\bhtam_(?:warp_sums|lane|warp|v|e|w|o|t)\b")


def prefix_loop(unit: CudaUnit) -> PrefixLoop | str:
    """The kernel's segment prefix loop (analysis layer, :func:`segment_prefix_loop`), or why the step is not made:
    no such loop, or a block a warp scan cannot run on."""
    view = KernelText(unit.source, unit.facts)
    found = segment_prefix_loop(view)
    if isinstance(found, str):
        running = running_sum_refusal(view)
        return f"{found}; {running}" if running else found
    return found if found.block_problem is None else found.block_problem


def fresh(text: str, src: bytes) -> str:
    """``text`` (the rewrite's code) with its ``htam_`` names given the first suffix (``""``, ``"_1"``, ...) that no
    name of ``src`` (the unit's bytes) already has, so the new declarations shadow nothing and clash with nothing."""
    taken = set(re.findall(rb"\bhtam_\w+", src))
    names = set(_NAMES.findall(text))
    k = 0
    while any(f"{m}{'_' + str(k) if k else ''}".encode() in taken for m in names):
        k += 1
    suffix = f"_{k}" if k else ""
    return _NAMES.sub(lambda m: m.group(0) + suffix, text)


def _warp_scan(value: str, t: str) -> list[str]:
    """An inclusive scan of ``value`` (a local of type ``t``) over the lanes of a warp."""
    return ["#pragma unroll",
            "for (int htam_o = 1; htam_o < 32; htam_o <<= 1) {",
            f"    const {t} htam_t = __shfl_up_sync({_FULL}, {value}, htam_o);",
            f"    if (htam_lane >= (unsigned)htam_o) {value} += htam_t;",
            "}"]


def scan_lines(p: PrefixLoop) -> list[str]:
    """The block scan's statements (one per line, unindented) that replace the bounds check, the accumulator's
    declaration, the loop and the store; the store keeps its text, under the bounds check."""
    t, zero = p.acc_type, f"static_cast<{p.acc_type}>(0)"
    own = "htam_v" if p.inclusive else "htam_e"
    lines = ["// block-wide scan of the block's segment: warp shuffles, then the warps' totals (all threads take part)",
             f"__shared__ {t} {SUMS}[32];",
             "const unsigned htam_lane = threadIdx.x & 31u, htam_warp = threadIdx.x >> 5;",
             f"{t} htam_v = ({p.condition}) ? static_cast<{t}>({p.element_at(p.index)}) : {zero};",
             *_warp_scan("htam_v", t)]
    if not p.inclusive:  # exclusive: the lane below's inclusive value
        lines += [f"{t} htam_e = __shfl_up_sync({_FULL}, htam_v, 1);", f"if (htam_lane == 0u) htam_e = {zero};"]
    lines += [f"if (htam_lane == 31u) {SUMS}[htam_warp] = htam_v;",
              "__syncthreads();",
              "if (htam_warp == 0u) {  // warp 0 scans the warps' totals",
              f"    {t} htam_w = (htam_lane < (blockDim.x >> 5)) ? {SUMS}[htam_lane] : {zero};",
              *("    " + ln for ln in _warp_scan("htam_w", t)),
              f"    {SUMS}[htam_lane] = htam_w;",
              "}",
              "__syncthreads();",
              f"if (htam_warp > 0u) {own} += {SUMS}[htam_warp - 1];",
              f"if ({p.condition}) {{",
              f"    {t} {p.accumulator.name} = {own};"]
    return lines


@register
class CudaBlockScan(CudaTransform):
    """A per-thread serial prefix over the block's segment -> a warp-shuffle block scan."""

    id = "cuda.block_scan"
    languages = CUDA_LANGS
    changes_numerics = True
    reorders_only = True  # the same elements summed, in a scan's order
    summary = "block-wide scan with warp shuffles (__shfl_up_sync, then a scan of the warps' totals)"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: the kernel with its prefix loop replaced by the block scan."""
        p = prefix_loop(unit)
        if isinstance(p, str):
            return self.not_applicable(p)
        ind = syn.indent_of(unit.src, p.guard_stmt.start_byte)
        # the kernel's own texts (bound check, element, accumulator) go in after the new names are made fresh
        own = {"\x01": p.condition, "\x02": p.element_at(p.index), "\x03": p.accumulator.name}
        code = scan_lines(replace(p, condition="\x01", element=("\x02",),
                                  accumulator=replace(p.accumulator, name="\x03")))
        text = fresh(code[0] + "".join(f"\n{ind}{ln}" if not ln.startswith("#") else f"\n{ln}" for ln in code[1:]),
                     unit.src)
        for mark, written in own.items():
            text = text.replace(mark, written)
        text += f"\n{ind}    {unit.t(p.store)}\n{ind}}}"
        edits: list[TextEdit] = [unit.edit(p.guard_stmt.start_byte, p.end_byte, text)]
        if p.decl.start_byte < p.guard_stmt.start_byte:  # the accumulator declared before the bounds check
            s0, s1 = statement_span(unit, p.decl)
            edits.insert(0, unit.edit(s0, s1, ""))
        kind = "inclusive" if p.inclusive else "exclusive"
        cand = self.candidate(
            model,
            f"scan each block's segment in {kernel.name} with warp shuffles: {kind} __shfl_up_sync scans, the warps' "
            f"totals in shared memory scanned by warp 0 (one load per thread instead of the loop on line "
            f"{p.loop.line})",
            {"scan": kind, "element_type": p.acc_type, "threads": p.block},
            edits,
        )
        cand.changes_numerics = cand.reorders_only = unit.types.resolve(p.acc_type) not in EXACT_TYPES
        return [cand]
