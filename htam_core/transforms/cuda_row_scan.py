"""Thread-per-row running sum -> one warp per row with a warp scan and a carry (``cuda.row_scan``).

A thread-per-row kernel whose row loop stores its running value at each step (``acc += in[r * cols + c]; out[r *
cols + c] = acc;``: the analysis layer's :class:`~htam_core.source.analysis.row_scan.RowScan`) is a prefix scan
along each row; neighbouring threads read ``cols`` elements apart (uncoalesced), and splitting the loop over lanes
as a reduction would store partial sums of the wrong elements. The rewrite gives each row to a warp and walks it in
chunks of 32 columns:

* ``row`` becomes the global warp index and ``htam_lane = threadIdx.x & 31`` is added (the launch machinery of
  :mod:`htam_core.transforms.cuda_warp_row`: 32 times the blocks at every launch, a block of whole warps, a run-time
  block rounded up; a kernel launched from another file has that launch edited too);
* in each chunk every lane loads one element (zero past the row's end, the load guarded), an inclusive warp scan
  with ``__shfl_up_sync`` combines the chunk (``+``, ``*``, or the loop's own max/min call), and the carry (the
  running value of the previous chunks, the accumulator itself, the same in every lane) is combined in front;
* each lane stores its value under the column bound, with the store as written (the accumulator replaced by the
  lane's value); an exclusive scan (the store before the update) takes the value of the lane below, the carry in
  lane 0;
* the carry is updated from the chunk's last lane with ``__shfl_sync`` (lane 31 for a sum, whose padding is zero;
  the last lane holding an element for a product or a max/min, whose padding must not enter), so after the loop
  every lane holds the row's value, as the one thread did;
* a statement outside the loop that writes memory runs on lane 0 only.

Integer sums, products, maxima and minima are exact (the same values in any grouping); float sums and products
change order (``reorders_only``). Idea sources: the CUDA C++ Programming Guide, "Warp Shuffle Functions" (the
``__shfl_up_sync`` inclusive scan); CUB's ``WarpScan`` and its running prefix between tiles
(``BlockScanRunningPrefixOp``); Blelloch, "Prefix Sums and Their Applications" (1990).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.row_scan import RowScan, row_scan
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_warp_row import LANE, WARP, warp_launch_edits
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

_FULL = "0xffffffffu"


def scan_loop_lines(s: RowScan) -> list[str]:
    """The statements (one per line, unindented; a ``#pragma`` line flush left) that replace the row loop of ``s``:
    the chunked walk with the warp scan, the carry and the guarded store."""
    vt, t = s.var_type, s.acc_type
    zero = f"static_cast<{t}>(0)"
    last = "31" if s.op == "sum" else f"(int)({s.bound} - htam_c0 < {WARP} ? {s.bound} - htam_c0 - 1 : {WARP - 1})"
    lines = [f"for ({vt} htam_c0 = {s.start}; htam_c0 < {s.bound}; htam_c0 += {WARP}) {{  // the row in chunks of "
             f"{WARP}, one element per lane",
             f"    const {vt} {s.var} = htam_c0 + ({vt}){LANE};",
             f"    {t} htam_v = {s.var} < {s.bound} ? static_cast<{t}>({s.element}) : {zero};",
             "#pragma unroll",
             "    for (int htam_o = 1; htam_o < 32; htam_o <<= 1) {  // inclusive warp scan",
             f"        const {t} htam_t = __shfl_up_sync({_FULL}, htam_v, htam_o);",
             f"        if ({LANE} >= (unsigned)htam_o) htam_v = {s.combined('htam_t', 'htam_v')};",
             "    }"]
    if s.inclusive:
        run = s.combined(s.acc, "htam_v")
    else:  # the value before this element: the lane below's, the carry alone in lane 0
        lines.append(f"    const {t} htam_x = __shfl_up_sync({_FULL}, htam_v, 1);")
        run = f"{LANE} == 0u ? {s.acc} : {s.combined(s.acc, 'htam_x')}"
    lines += [f"    if ({s.var} < {s.bound}) {{",
              f"        const {t} htam_r = {run};",
              f"        {s.store_of('htam_r')}",
              "    }",
              f"    {s.acc} = {s.combined(s.acc, f'__shfl_sync({_FULL}, htam_v, {last})')};  // the carry",
              "}"]
    return lines


def _body_edits(unit: CudaUnit, s: RowScan) -> list[TextEdit]:
    """The kernel-body edits: the lane, the warp's row, the loop replaced, memory writes outside it on lane 0."""
    ew, ind = s.ew, syn.indent_of(unit.src, s.loop_stmt.start_byte)
    lines = scan_loop_lines(s)
    text = lines[0] + "".join(f"\n{ln}" if ln.startswith("#") else f"\n{ind}{ln}" for ln in lines[1:])
    edits = [unit.replace(s.loop_stmt, text)]
    edits += [unit.replace(w, f"if ({LANE} == 0) {{ {unit.t(w)} }}") for w in s.lane_writes]
    decl_indent = syn.indent_of(unit.src, ew.decl.start_byte)
    edits.append(unit.replace(ew.gid, f"({unit.t(ew.gid)}) / {WARP}"))
    edits.append(unit.insert(ew.decl.start_byte, f"const unsigned {LANE} = threadIdx.x & {WARP - 1}u;\n{decl_indent}"))
    return edits


@register
class CudaRowScan(CudaTransform):
    """A thread-per-row running sum (max, min, product) -> one warp per row, chunks of 32 scanned with a carry."""

    id = "cuda.row_scan"
    languages = CUDA_LANGS
    changes_numerics = True
    reorders_only = True
    summary = "one warp per row for a running sum: chunks of 32, __shfl_up_sync scan plus the carry, 32x the blocks"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate, or the reason the kernel is not a thread-per-row running value this rewrite can prove."""
        s = row_scan(KernelText(unit.source, unit.facts))
        if isinstance(s, str):
            return self.not_applicable(s)
        if "htam_" in unit.t(unit.body):
            return self.not_applicable(f"{kernel.name} already holds htam_ names (another step's rewrite)")
        launch = warp_launch_edits(unit, s.ew)
        if isinstance(launch, str):
            return self.not_applicable(launch)
        grid, rounded = launch
        kind = "inclusive" if s.inclusive else "exclusive"
        cand = self.candidate(
            model,
            f"give each row of {kernel.name} to a warp: the row in chunks of {WARP} columns (coalesced loads), an "
            f"{kind} running {s.op} by __shfl_up_sync scan plus the carry of the earlier chunks (__shfl_sync), "
            f"{WARP}x the blocks" + _order_note(s, unit.facts.type_instantiations)
            + ("; a block size known only at run time is rounded up to a multiple of 32" if rounded else ""),
            {"scan": kind, "op": s.op, "element_type": s.acc_type, "launches": len(unit.launches),
             "rounded_blocks": len(rounded)},
            _body_edits(unit, s) + grid + rounded,
        )
        cand.changes_numerics = cand.reorders_only = not s.exact
        return [cand]


def _order_note(s: RowScan, instantiations: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    """The description's note on the order of the combines: said only for a floating running value (an integer
    sum is exact in any grouping); for a template type no launch binds, said on that condition."""
    if s.exact:
        return ""
    floating = s.floating(instantiations)
    if floating is None:
        return f" ({s.op}s change order if {s.acc_type} is a floating type)"
    return f" (float {s.op}s change order)" if floating else ""
