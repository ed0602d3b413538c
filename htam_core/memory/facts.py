"""The fact vocabulary that knowledge-base predicates are evaluated against.

Facts come from three sources, each optional except the features:

* the kernel's syntactic :class:`~htam_core.source.model.KernelFeatures` and its language;
* the :class:`~htam_core.source.model.Kernel` itself when the caller has it (parameters, launch sites,
  attributes) - these facts are ``None`` (unknown) without it;
* the :class:`~htam_core.types.profile.Profile` - measured metrics are ``None`` unless measured.

The pattern facts (``matmul_like``, ``reduction_like``, ``transpose_like``) are read off the analysis layer
(:class:`~htam_core.source.analysis.KernelFacts`: loop accumulators, affine index strides, read/write sets,
collective calls), never off the syntax; they are unknown (``None``) without the kernel. ``has_reuse`` combines
them with the syntactic counts. Each is documented in :data:`FACTS` and in docs/MEMORY.md.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from htam_core.source.analysis import Access, KernelFacts, analyze
from htam_core.source.analysis.block_load import GuardedLoad, guarded_block_load
from htam_core.source.analysis.constants import SIZEOF, evaluate_text
from htam_core.source.analysis.device_globals import declarations_before
from htam_core.source.analysis.elementwise_uses import element_writes
from htam_core.source.analysis.flat2d import FlatRemap, flat_remap
from htam_core.source.analysis.forms import Elementwise, KernelText, elementwise
from htam_core.source.analysis.offsets import loop_bound_reads, offsets_loops
from htam_core.source.analysis.prefix_loop import PrefixLoop, segment_prefix_loop
from htam_core.source.analysis.row_launch import few_long_rows
from htam_core.source.analysis.row_scan import RowScan, row_scan
from htam_core.source.analysis.struct_params import struct_definitions, struct_type_name
from htam_core.source.analysis.syntax import parse
from htam_core.source.analysis.triton_names import binding_imports
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text
from htam_core.source.model import Kernel, KernelFeatures, SourceModel
from htam_core.source.workspace import launch_unit
from htam_core.types.language import kinds, traits
from htam_core.types.profile import Profile

__all__ = ["FACTS", "compute_facts", "normalize_language"]

#: Fact name -> description (the vocabulary predicates may use).
FACTS: dict[str, str] = {
    # language
    "language": "'cuda' or 'triton' (CUDA held in Python strings counts as 'cuda')",
    "embedded": "CUDA source held in a Python string (KernelBench load_inline style)",
    # syntactic features
    "loads": "number of global loads in the body",
    "stores": "number of global stores in the body",
    "loops": "number of loops",
    "has_loop": "loops >= 1",
    "row_passes": "CUDA: top-level loops that each walk the thread's own row (a layer norm's mean, variance and "
                  "normalize passes are 3); 0 for Triton, unknown without the analysis",
    "constant_trip_loops": "loops whose trip count is a literal constant",
    "all_loops_unrolled": "every loop carries #pragma unroll (false when there is no loop)",
    "unrollable_loops": "CUDA: `for` loops with a compile-time trip count (a literal, #define, constexpr or template "
    "argument; analysis layer: LoopFact.trip_value) and no #pragma unroll yet, the loops the unroll step marks; "
    "0 for Triton, unknown without the kernel",
    "shared_arrays": "number of __shared__ declarations",
    "uses_shared": "shared_arrays >= 1",
    "shared_tree": "a shared-memory reduction tree: a loop whose stride halves or doubles and that combines elements "
    "of one __shared__ array, sdata[tid] += sdata[tid + s] (analysis layer: KernelFacts.shared_tree_loops; "
    "unknown without the kernel)",
    "interleaved_tree": "a shared_tree whose stride doubles (s *= 2: interleaved addressing; a halving stride is "
    "sequential addressing already; analysis layer: KernelFacts.interleaved_tree_loops)",
    "max_sum_passes": "a running-max loop followed by a separate sum loop over the same index (the two-pass softmax "
    "normalizer; analysis layer: KernelFacts.max_then_sum_loops)",
    "syncthreads": "number of block-wide barriers, however spelled (__syncthreads(), cg::sync(cta), cta.sync(); "
    "analysis layer: KernelFacts.block_barriers)",
    "atomics": "number of atomic operations",
    "uses_atomics": "atomics >= 1",
    "uses_vector_types": "float4/int4/half2 ... appear",
    "scalar_contiguous_reads": "CUDA: global reads that are scalar (not through a vector type or a 16-byte load "
    "helper) and move by 1 along threadIdx.x or along an enclosing loop's variable: the reads a float4/16-byte "
    "vectorization would widen (analysis layer: Access.vector and affine strides); 0 for Triton, unknown without "
    "the kernel",
    "scalar_element_writes": "CUDA: global stores that are scalar, to a pointee narrower than 16 bytes, at the "
    "element of the 1-D global thread index (out[idx], or out + b * T * C + t * C + c with b, t, c split from idx by "
    "/ and %) or at an element that moves by 1 with the global x index of a 2-D/3-D grid (out[(c * Ho + r) * Wo + "
    "q]), in a kernel without loops: the stores a one-element-per-thread kernel's 16-byte vector form widens "
    "when its reads are table gathers or a strided window (analysis layer: elementwise_uses.element_writes); 0 for Triton, "
    "unknown without the kernel",
    "uses_dot": "tl.dot is called (Triton)",
    "masks": "number of masked loads/stores (Triton)",
    "masked_tile_loop": "Triton: a loop over tiles of a dimension (the K loop of a matmul) holds a masked "
    "tl.load/tl.store (analysis layer: KernelFacts.masked_tile_loops); false for CUDA, unknown without the kernel",
    "reductions": "number of reduction operations (tl.sum/tl.max, warp shuffles ...)",
    "has_reduction": "reductions >= 1",
    "uses_2d_index": "indices of the form row * stride + col",
    "uses_ldg": "__ldg is already used",
    "math_calls": "list of math functions called (expf, tl.exp ...)",
    "uses_math": "math_calls is not empty",
    "has_grid_stride_loop": "a grid-stride loop is present",
    "matmul_like": "tl.dot (Triton), or a loop that sums (or takes the max or min of) combinations of two "
    "pointers indexed by the loop variable with different strides or different thread/block dimensions (or of one pointer "
    "read along two thread dimensions, X X^T), in the kernel or (with the file known) in a "
    "__device__ function it calls (analysis layer: KernelFacts.matmul_loops, device_callees; unknown without the "
    "kernel)",
    "reduction_like": "not matmul_like, and the kernel combines many elements into fewer values: a loop whose "
    "accumulator (a sum, product, max/min by call or by comparison and choice, or the extreme of an arg step) reads "
    "elements that move with the loop variable and writes none that do, a shared-memory "
    "tree, a warp shuffle / cg::reduce / accumulating atomic, or tl.sum/tl.max ... (analysis layer: "
    "KernelFacts.reduction_evidence). An elementwise grid-stride or float4 loop is not one; unknown without the "
    "kernel",
    "has_reuse": "matmul_like, shared memory already in use, or a looped reduction reading >= 2 values",
    "uncoalesced_row_loop": "CUDA: a loop walks a row owned by one thread, so a warp's lanes are a row apart: an "
    "access moves by 1 with the loop variable and by neither 0 nor 1 along threadIdx (analysis layer: "
    "KernelFacts.row_loops); false for Triton, unknown without the kernel",
    "few_long_rows": "CUDA: a launch of a thread-per-row kernel in its file starts fewer than 4 threads per SM of "
    "the reference device (each a row: a warp per row would leave most SMs idle) for rows of at least 1024 elements, "
    "both read as constants of the host code (analysis layer: row_launch.few_long_rows); false when the known sizes "
    "say otherwise or for Triton, unknown without the kernel's file or sizes",
    "offsets_row_loop": "CUDA: a thread loops over its own row's range of an offsets array, from one loaded offset "
    "to the next (CSR's for (j = row_ptr[row]; j < row_ptr[row + 1]; ++j), row the thread's index), so a warp's "
    "lanes walk 32 rows apart (analysis layer: offsets_loops); false for Triton, unknown without the kernel",
    "column_split_sum": "CUDA: a column sum whose threads split the summed index, lanes on rows: its reads move by "
    "the row length between consecutive threads (uncoalesced) and the column is one per group of threads "
    "(analysis layer: KernelFacts.column_split_loops); false for Triton, unknown without the kernel",
    "thread_column_sum": "CUDA: a column sum with one thread per column and scalar reads (coalesced, 2-4 bytes "
    "per lane per row; analysis layer: KernelFacts.thread_column_loops); false for Triton, unknown without the "
    "kernel",
    "stencil_like": "not matmul_like, and the kernel reads one pointer at neighbouring offsets: CUDA, two global "
    "reads whose indices differ by a constant (x[i - 1], x[i + 1]) or a constant-trip window loop whose read moves "
    "with the loop variable as with threadIdx.x (x[i + j]), or a window read in the stencil tile's normal form, 1-D, "
    "2-D or 3-D (in[(y - 1) * W + x], in[(y + 1) * W + x]); Triton, two tl.load of one pointer in the same loop "
    "body or both outside loops (analysis layer: affine index facts, memops; unknown without the kernel)",
    "stencil_window": "CUDA: the reads of one read-only pointer are a 1-D window around the global thread index "
    "along x, in a constant-range loop or unrolled, with bounds checks read as written (analysis layer: "
    "KernelFacts.stencils, the stencil tile's normal form), or a 2-D window around the global (x, y) through a row "
    "pitch (KernelFacts.stencils2d) launched with one constant 2-D block, which sizes the 2-D tile, or a 3-D window "
    "around (x, y, z) through row and plane pitches (KernelFacts.stencils3d) launched with one constant block; "
    "false for Triton, unknown without the kernel",
    "transpose_like": "CUDA, one load and one store over 2D indices, no loop, and the store swaps the fast "
    "dimension of the load (the read has stride 1 along threadIdx.x and the write along threadIdx.y, or the "
    "reverse; unknown without the kernel); or an element-copy transpose out[col * rows + row] = in[row * cols + "
    "col] computed from the affine indices, in loops over rows and under row/column bounds checks too, and per "
    "batch slice when a term uniform across the block (a blockIdx.z offset, a rebased pointer) is the base (analysis "
    "layer: KernelFacts.transposes); or a loop over the rows of a tile that transposes it (analysis layer: "
    "KernelFacts.transpose_loops)",
    "one_element_tree": "CUDA: each thread loads one guarded element into the shared slot that a block tree then "
    "combines (`sdata[tid] = (i < n) ? in[i] : 0;` in any spelling; analysis layer: "
    "block_load.guarded_block_load): the add during the load is the textbook's next step; false for Triton, "
    "unknown without the kernel's file",
    "elementwise_shape": "CUDA: the one-element-per-thread shape `i = blockIdx.x * blockDim.x + threadIdx.x; "
    "if (i < n) body` (or its early return, with terms the same for every element or conditions on the element; "
    "analysis layer: forms.elementwise), the shape the grid-stride step loops over; false for Triton, unknown "
    "without the kernel's file",
    "segment_prefix_loop": "CUDA: each thread sums its block's segment up to its own element in a serial loop "
    "(`for (j = blockIdx.x * blockDim.x; j <= i; ++j) s += in[j]; out[i] = s;`, j < i for an exclusive scan; "
    "analysis layer: prefix_loop.segment_prefix_loop) launched with a constant 1-D block of a multiple of 32 "
    "threads, at most 1024: a block-wide warp-shuffle scan computes the same sums; false for Triton, unknown "
    "without the kernel's file",
    "row_running_scan": "CUDA: one thread per row walks its row with a running sum (product, max or min by call) "
    "stored at each step (`acc += in[r * cols + c]; out[r * cols + c] = acc;`, the store before the update for an "
    "exclusive scan; analysis layer: row_scan.row_scan): a prefix scan along the row whose lanes read a row apart; "
    "a warp per row scans it in chunks of 32 with a carry; false for Triton, unknown without the kernel's file",
    "uniform_atomic": "CUDA: atomic contention: a global atomicAdd/atomicMax/atomicMin whose address is the same in "
    "every thread of a block (atomicAdd(result, x[i]), &out[0], &acc[blockIdx.y]): the block's atomics serialize on "
    "one address (analysis layer: KernelFacts.uniform_atomics); false for Triton or without atomics, unknown "
    "without the kernel",
    "grid_free_tree": "CUDA: the block's result goes to one atomicAdd/atomicMax/atomicMin into an address the same in "
    "every thread of the grid, the kernel's only global output (if (tid == 0) atomicAdd(out, sdata[0]); analysis "
    "layer: KernelFacts.grid_free_result): the total does not depend on the number of blocks, so the add during "
    "the load may run over a grid sized to the device; false for Triton or without atomics, unknown without the "
    "kernel",
    "strided_along_x": "CUDA: some global access's index moves by neither 0 nor 1 element between consecutive "
    "threadIdx.x, other than a whole window group (in[2 * q], in[2 * q + 1]: analysis layer: "
    "KernelFacts.scattered): what a remap of threadIdx.x to the contiguous index would fix; false when every known "
    "stride is 0 or 1 (already coalesced along x) or for Triton, unknown without "
    "the kernel",
    "shared_bank_conflicts": "CUDA: some __shared__ access of 4-byte elements moves by an even number of words "
    "between consecutive threadIdx.x (a column walk of a [32][32] tile: several lanes on one of the 32 banks; "
    "analysis layer: KernelFacts.shared_thread_strides); false when every shared access's stride is known and odd "
    "or 0 (a padded [T][T + 1] tile, a row walk) or for Triton, unknown otherwise",
    "rows_split": "CUDA: every loop over global memory already starts at a thread index and steps by a multiple of "
    "32 or by blockDim/gridDim (a warp-, block- or grid-stride loop: no thread walks a row alone; analysis layer: "
    "KernelFacts.thread_split_loops); false for Triton or when some loop is a thread's own, unknown without the "
    "kernel",
    "histogram_like": "CUDA: a global atomicAdd whose index depends on loaded data (atomicAdd(&hist[data[i]], 1): "
    "the bins of a histogram; analysis layer: KernelFacts.histogram_updates); false for Triton or without atomics, "
    "unknown without the kernel",
    "flat_thread_index": "CUDA: the kernel splits one flattened 1-D global thread index by both / and % by the same "
    "constant or parameter (row = idx / NC, col = idx % NC: a 2-D output on a 1-D launch; analysis layer: "
    "KernelFacts.flat_index_split); the matmul tiling steps need a 2-D block, so they make the 2-D remap "
    "(cuda.flat_index_2d) first; false for Triton, unknown without the kernel",
    "flat_remappable": "CUDA: the flattened 1-D index split is the form the 2-D remap rewrites (named row and column "
    "locals, one output per thread at row * W + col, a bounds check on the rows; analysis layer: flat2d.flat_remap); "
    "false without a split or for Triton, unknown without the kernel's file",
    # kernel-level (None without a Kernel)
    "kernel_name": "the kernel's name",
    "pointer_params": "number of pointer parameters",
    "restrict_missing": "some CUDA pointer parameter lacks __restrict__",
    "inputs_restrict": "CUDA: the kernel has a pointer-to-const parameter and every one is also __restrict__: "
    "its loads already take the read-only path (ld.global.nc), so __ldg would change nothing; false for Triton, "
    "unknown without the kernel",
    "has_launch_bounds": "__launch_bounds__ is declared (CUDA)",
    "launch_sites": "number of launch sites found in the file",
    "launch_block": "literal threads per block (CUDA) or BLOCK* keyword (Triton) at the first launch site",
    "constexpr_params": "number of tl.constexpr parameters (Triton)",
    "is_autotuned": "decorated with @triton.autotune (analysis layer: TritonFacts.autotuned)",
    "uses_exp": "exp or exp2 is called (CUDA expf/__expf/exp/exp2f; Triton tl.exp/tl.exp2; from the analysis "
    "layer's Triton math calls, else the syntactic math calls)",
    "dot_fp32_inputs": "some tl.dot operand is float32 (true), every operand has a known dtype and none is "
    "float32 (false), else unknown (analysis layer: TritonDot dtypes)",
    "dot_input_dtypes": "the known tl.dot operand dtypes (analysis layer), e.g. ['float16']",
    "grouped_programs": "program ids are already swizzled/grouped (analysis layer: TritonFacts.grouped_program_ids)",
    # profile state (None when not measured)
    "bottleneck": "bottleneck class of the profile ('unknown' without one)",
    "secondary": "list of secondary bottleneck classes",
    "measured": "the profile was measured on a GPU",
    "memory_pct": "memory speed-of-light, percent",
    "compute_pct": "compute speed-of-light, percent",
    "occupancy": "achieved occupancy (else theoretical), 0..1",
    "registers": "registers per thread",
    "spills": "spill bytes > 0",
    "shared_bytes": "static shared memory per block, bytes",
    "block_size": "threads per block used by the profile",
    "ncu_rules": "list of Nsight Compute rule names that fired",
}

_BLOCK_KW = re.compile(r"^BLOCK(_SIZE)?(_[A-Z])?$|^BLOCK_?N$|^XBLOCK$")


def normalize_language(language: str) -> str:
    """Map a :data:`~htam_core.source.model.Language` to ``"cuda"`` or ``"triton"``.

    Raises:
        ValueError: any other language.
    """
    lang = language.lower()
    if lang in ("cuda", "cuda-in-python", "kernelbench-cuda"):
        return "cuda"
    if lang == "triton":
        return "triton"
    raise ValueError(f"unknown kernel language {language!r}; expected 'cuda', 'cuda-in-python' or 'triton'")


def triton_header(model: SourceModel | None) -> str:
    """The import lines of ``model``'s file that bind ``triton.language`` (``""`` without a model, or in a file
    that never names triton), for :func:`kernel_analysis`."""
    if model is None or "triton" not in model.text:
        return ""
    return _triton_header(model.text)


@functools.lru_cache(maxsize=64)
def _triton_header(text: str) -> str:
    """:func:`htam_core.source.analysis.triton_names.binding_imports` of a Python file's text (cached per text)."""
    src = text.encode("utf-8")
    return binding_imports(parse(src, "python").root_node, src)


def _literal_int(text: str | None) -> int | None:
    """Threads of a constant block expression like ``256``, ``16 * 16`` or ``dim3(16, 16)`` (product), else
    ``None`` (names are not looked up: the launch site's resolved config has them substituted already)."""
    if not text:
        return None
    v = evaluate_text(text, lambda _node: None)
    return v if isinstance(v, int) and v > 0 else None


#: A whole ``#define`` line, with its backslash continuations.
_DEFINE_LINE = re.compile(rb"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\r?\n)*[^\n]*", re.MULTILINE)


def _defines_before(model: SourceModel | None, kernel: Kernel) -> str:
    """The CUDA ``#define`` lines of ``model``'s file before the CUDA ``kernel`` (``""`` without a file): the
    sizes, index and cast macros a kernel's text names (``#define GLOBAL_ID (blockIdx.x * blockDim.x +
    threadIdx.x)``), then the definitions of the structs the kernel takes by value (their pointer fields are
    buffers: :mod:`htam_core.source.analysis.struct_params`), then the ``__device__`` variables of the file and its
    local headers (a kernel's output may be one: :func:`~htam_core.source.analysis.device_globals.declarations_before`)."""
    if model is None:
        return ""
    data = model.text.encode("utf-8", errors="surrogatepass")[: kernel.span.start]
    lines = [m.group(0).decode("utf-8", errors="replace") for m in _DEFINE_LINE.finditer(data)]
    structs = {n for p in kernel.params if (n := struct_type_name(p)) is not None}
    return "".join(f"{ln}\n" for ln in lines) + struct_definitions(data, structs) + \
        (declarations_before(data, model.path) if b"__device__" in data else "")


def kernel_analysis(kernel: Kernel, model: SourceModel | None = None, header: str = "") -> KernelFacts | None:
    """The analysis-layer facts of ``kernel`` read from its own text (the kernel and its decorators; launch sites
    elsewhere in the file are not needed by the predicates), or ``None`` when the text does not give the kernel
    back. A CUDA kernel is read after the ``#define`` lines that come before it in ``model``'s file (sizes and index
    macros read as the compiler reads them); a Triton kernel after ``header``, the file's imports of
    ``triton.language`` (so ``language.exp`` reads as ``tl.exp`` where the file imports it so;
    :func:`triton_header`). Cached by :func:`htam_core.source.analysis.analyze` per text."""
    lang = traits(kernel.language)
    prefix = (f"{header}\n\n" if header else "") if lang.tiles else _defines_before(model, kernel)
    model = parse_text(prefix + kernel.text, lang.grammar)
    mine = [k for k in model.kernels if k.name == kernel.name]
    return analyze(model, mine[0]) if mine else None


def _file_analysis(model: SourceModel | None, kernel: Kernel | None) -> KernelFacts | None:
    """The analysis-layer facts of ``kernel`` read in its file ``model`` (a CUDA file's shared-memory accessor
    structs and barrier handles included), or ``None`` without both. A kernel its own file does not launch (one in
    a header, launched from the ``.cu`` file that includes it) is read in its joint launch unit
    (:func:`~htam_core.source.workspace.launch_unit`, the unit the transforms read it in), so that the facts that
    depend on its launches (the block a tile is sized by) are those of its launches."""
    if model is None or kernel is None:
        return None
    unit = launch_unit(model, kernel) if not kernel.launch_sites and model.path else None
    return analyze(unit.model, unit.kernel) if unit is not None else analyze(model, kernel)


_EXP = frozenset({"exp", "exp2", "expf", "exp2f", "__expf", "__exp2f", "hexp", "h2exp"})


def _analysis_facts(facts: KernelFacts | None, features: KernelFeatures, lang: str) -> dict[str, Any]:
    """The facts read from the analysis layer (:class:`KernelFacts`, ``None`` without the kernel): autotuning,
    exp calls, tl.dot operand dtypes, grouped program ids and masked tile loops. Without a kernel the Triton ones are unknown."""
    tf = facts.triton if facts is not None else None
    maths = tf.math_calls if tf is not None else tuple(features.math_calls)
    out: dict[str, Any] = {"uses_exp": any(m in _EXP for m in maths), "is_autotuned": False,
                           "dot_fp32_inputs": False, "dot_input_dtypes": [], "grouped_programs": False}
    out["masked_tile_loop"] = False
    out["histogram_like"] = False if lang != "cuda" or not features.atomics else (
        None if facts is None else bool(facts.histogram_updates()))
    out["flat_thread_index"] = False if lang != "cuda" else (
        None if facts is None else facts.flat_index_split() is not None)
    out["uniform_atomic"] = False if lang != "cuda" or not features.atomics else (
        None if facts is None else bool(facts.uniform_atomics))
    out["grid_free_tree"] = False if lang != "cuda" or not features.atomics else (
        None if facts is None else facts.grid_free_result() is not None)
    out.update(_in_place_facts(facts, features, lang))
    if lang != "triton":
        return out
    if tf is None or facts is None:
        return {**out, "is_autotuned": None, "dot_fp32_inputs": None, "dot_input_dtypes": None,
                "grouped_programs": None, "masked_tile_loop": None}
    out["masked_tile_loop"] = bool(facts.masked_tile_loops())
    dtypes = [d for dot in tf.dots for d in (dot.a_dtype, dot.b_dtype)]
    known = sorted({d for d in dtypes if d is not None})
    fp32: bool | None = ("float32" in known) or (None if None in dtypes else False)
    return {**out, "is_autotuned": tf.autotuned, "dot_fp32_inputs": fp32 if tf.dots else False,
            "dot_input_dtypes": known, "grouped_programs": tf.grouped_program_ids}


def _in_place_facts(facts: KernelFacts | None, features: KernelFeatures, lang: str) -> dict[str, bool | None]:
    """``strided_along_x``, ``shared_bank_conflicts`` and ``rows_split`` (see :data:`FACTS`): whether the pattern
    a step would bring is already in place, so that the step is not ranked on a kernel that has it."""
    if lang != "cuda":
        return {"strided_along_x": False, "shared_bank_conflicts": False, "rows_split": False}
    if facts is None:
        return {"strided_along_x": None, "shared_bank_conflicts": None, "rows_split": None}
    return {"strided_along_x": bool(facts.scattered("x")), "shared_bank_conflicts": _bank_conflicts(facts, features),
            "rows_split": facts.thread_split_loops() is not None}


def _bank_conflicts(facts: KernelFacts, features: KernelFeatures) -> bool | None:
    """``shared_bank_conflicts`` (see :data:`FACTS`) from the shared accesses' strides along threadIdx.x and the
    declared element types (4-byte elements only; another width is unknown)."""
    sizes = {d.name: SIZEOF.get(" ".join(d.type.replace("const", "").split())) for d in features.shared_memory}
    seen_unknown = False
    for a, stride in facts.shared_thread_strides("x"):
        if sizes.get(a.pointer) != 4 or stride is None or not stride.is_Integer:
            seen_unknown = True
        elif int(stride) % 2 == 0 and int(stride) != 0:
            return True
    return None if seen_unknown else False


def _row_loop_facts(analysis: KernelFacts | None, lang: str) -> dict[str, bool | None]:
    """``column_split_sum``, ``thread_column_sum`` and ``uncoalesced_row_loop`` (see :data:`FACTS`): false for
    Triton, unknown without the analysis."""
    reads = {"column_split_sum": "column_split_loops", "thread_column_sum": "thread_column_loops",
             "uncoalesced_row_loop": "row_loops"}
    args: dict[str, dict[str, bool]] = {"uncoalesced_row_loop": {"groups": True}}  # a RoPE pair loop walks its row
    return {k: False if lang != "cuda" else (None if analysis is None else bool(getattr(analysis, m)(**args.get(k, {}))))
            for k, m in reads.items()}


def _few_long_rows(lang: str, model: SourceModel | None, kernel: Kernel | None, facts: KernelFacts | None) -> bool | None:
    """``few_long_rows`` (see :data:`FACTS`): the launch sizes of the kernel in its file
    (:func:`~htam_core.source.analysis.row_launch.few_long_rows`); false for Triton, unknown without the file."""
    if lang != "cuda":
        return False
    if model is None or kernel is None or facts is None:
        return None
    return few_long_rows(facts, [p.name for p in kernel.params])


def _one_element_tree(model: SourceModel | None, kernel: Kernel | None, facts: KernelFacts | None) -> bool | None:
    """Whether the CUDA kernel feeds its block tree one guarded element per thread
    (:func:`~htam_core.source.analysis.block_load.guarded_block_load` finds the load), ``None`` without its file."""
    if model is None or kernel is None or facts is None or not facts.shared_tree_loops():
        return None if model is None or kernel is None or facts is None else False
    source = cuda_source(model, kernel)
    if not isinstance(source, CudaSource):
        return None
    return isinstance(guarded_block_load(KernelText(source, facts)), GuardedLoad)


def _flat_remappable(model: SourceModel | None, kernel: Kernel | None, facts: KernelFacts | None) -> bool | None:
    """Whether the CUDA kernel's flattened 1-D index split is the proved form the 2-D remap rewrites
    (:func:`~htam_core.source.analysis.flat2d.flat_remap`); ``False`` without a split, ``None`` without its file."""
    if facts is not None and facts.flat_index_split() is None:
        return False
    if model is None or kernel is None or facts is None:
        return None
    source = cuda_source(model, kernel)
    if not isinstance(source, CudaSource):
        return None
    return isinstance(flat_remap(source, facts), FlatRemap)


def _elementwise_shape(model: SourceModel | None, kernel: Kernel | None, facts: KernelFacts | None) -> bool | None:
    """Whether the CUDA kernel has the elementwise shape (:func:`~htam_core.source.analysis.forms.elementwise`,
    with invariant and per-element guard terms, as the grid-stride step reads it), ``None`` without its file."""
    if model is None or kernel is None or facts is None:
        return None
    source = cuda_source(model, kernel)
    if not isinstance(source, CudaSource):
        return None
    return isinstance(elementwise(KernelText(source, facts), invariant_terms=True, per_element_terms=True),
                      Elementwise)


def _unrollable_loops(lang: str, facts: KernelFacts | None) -> int | None:
    """How many CUDA ``for`` loops have a compile-time trip count and no ``#pragma unroll`` (the analysis layer's
    :attr:`LoopFact.trip_value` and :attr:`LoopFact.has_unroll_pragma`); 0 for Triton, ``None`` when the kernel
    is not analyzable."""
    if lang != "cuda":
        return 0
    if facts is None:
        return None
    return sum(1 for lp in facts.loops if lp.kind == "for" and lp.trip_value is not None and not lp.has_unroll_pragma)


def _segment_prefix_loop(model: SourceModel | None, kernel: Kernel | None, facts: KernelFacts | None) -> bool | None:
    """Whether the CUDA kernel has a segment prefix loop a warp scan can replace
    (:func:`~htam_core.source.analysis.prefix_loop.segment_prefix_loop` with no block problem), ``None`` without
    its file."""
    if model is None or kernel is None or facts is None:
        return None
    if not facts.loops:
        return False
    source = cuda_source(model, kernel)
    if not isinstance(source, CudaSource):
        return None
    found = segment_prefix_loop(KernelText(source, facts))
    return isinstance(found, PrefixLoop) and found.block_problem is None


def _row_running_scan(model: SourceModel | None, kernel: Kernel | None, facts: KernelFacts | None) -> bool | None:
    """Whether the CUDA kernel is a thread-per-row running value in the form a warp scan with a carry rewrites
    (:func:`~htam_core.source.analysis.row_scan.row_scan`), ``None`` without its file."""
    if model is None or kernel is None or facts is None:
        return None
    if not any(lp.accumulators for lp in facts.loops):
        return False
    source = cuda_source(model, kernel)
    if not isinstance(source, CudaSource):
        return None
    return isinstance(row_scan(KernelText(source, facts)), RowScan)


def _callee_matmul(model: SourceModel, kernel: Kernel) -> bool:
    """Whether a ``__device__`` function ``kernel`` calls (by name or through a template argument bound at its
    launch sites) holds a matmul loop (:meth:`KernelFacts.matmul_loops`); the kernel is looked up in ``model``
    by name (the kernel as it is in that file)."""
    from htam_core.source.analysis.callees import device_callees

    mine = [k for k in model.kernels if k.name == kernel.name and traits(k.language).nvcc_build]
    return bool(mine) and any(c.facts.matmul_loops() for c in device_callees(model, mine[0]))


def _patterns(f: KernelFacts | None) -> tuple[bool | None, bool | None]:
    """``(matmul_like, reduction_like)`` from the analysis facts (see :data:`FACTS`); ``(None, None)`` when the
    kernel is not analyzable. A matmul's K loop accumulates too: it is matmul_like, not reduction_like."""
    if f is None:
        return None, None
    matmul = bool(f.triton.dots) if f.triton is not None else bool(f.matmul_loops())
    return matmul, (not matmul and bool(f.reduction_evidence()))


def _scalar_contiguous_reads(f: KernelFacts | None) -> int | None:
    """How many global reads are scalar and contiguous (stride 1 along ``threadIdx.x`` or along the variable of a
    loop around them; the group's width ``S`` for a loop over groups of ``S`` consecutive elements), from the affine index facts; ``None`` when not analyzable. A kernel that already moves
    some data as vectors (a ``__nv_bfloat162`` write-back) can still have such reads; one whose every read is a
    vector, or strided, has none; nor do the scalar reads of a pointer the kernel also reads as vectors (the scalar
    tail of a vectorized loop)."""
    if f is None:
        return None
    loop_vars = {lp.id: lp.var for lp in f.loops}
    # a loop over groups of S consecutive elements (x[2 * p], x[2 * p + 1]) reads its groups contiguously
    steps = {lp.id: f.group_width(lp) or 1 for lp in f.loops}

    def contiguous(a: Access) -> bool:
        if a.stride("threadIdx.x") == 1:
            return True
        return any(loop_vars.get(i) and a.stride(loop_vars[i]) == steps.get(i, 1)  # type: ignore[arg-type]
                   for i in a.loops)

    widened = {a.pointer for a in f.global_accesses() if a.vector and a.kind != "write"}  # a vector body's tail
    return sum(1 for a in f.global_accesses() if a.kind != "write" and not a.vector and contiguous(a)
               and a.pointer not in widened)


def _scalar_element_writes(f: KernelFacts | None) -> int | None:
    """How many global stores are scalar, narrower than 16 bytes, at the thread's own element along x, in a kernel
    without loops (analysis layer: ``elementwise_uses.element_writes``; see :data:`FACTS`
    ``scalar_element_writes``); ``None`` when not analyzable."""
    return None if f is None else len(element_writes(f))


def _stencil_window(f: KernelFacts | None) -> bool | None:
    """Whether the kernel reads a window the stencil tile stages (see :data:`FACTS` ``stencil_window``): a 1-D
    window (:attr:`KernelFacts.stencils`), or a 2-D one (:attr:`KernelFacts.stencils2d`) whose launches all give
    one constant block of one layer (the 2-D tile is sized by it; a block known only at run time is refused
    there, so the step is not offered), or a 3-D one (:attr:`KernelFacts.stencils3d`) whose launches all give one
    constant block; ``None`` when not analyzable."""
    if f is None:
        return None
    if f.stencils:
        return True
    shapes = {la.block_shape for la in f.launches}
    one = next(iter(shapes)) if len(shapes) == 1 else None
    return (bool(f.stencils2d) and one is not None and one[2] == 1) or (bool(f.stencils3d) and one is not None)


def _neighbour_loads(f: KernelFacts | None, matmul_like: bool | None) -> bool | None:
    """Whether the kernel reads one pointer at neighbouring offsets (a stencil; see :data:`FACTS`
    ``stencil_like``), from the analysis facts; ``None`` when not analyzable.

    CUDA: two global reads of one pointer whose indices differ by a constant (``x[i - 1]``, ``x[i + 1]``), or a
    window loop: a read inside a loop of constant trip count that moves by the same non-zero stride with the loop
    variable as with ``threadIdx.x`` (``for (j = -R; j <= R; j++) acc += x[i + j]``); reads whose value bounds a
    loop (CSR's ``row_ptr[r]``, ``row_ptr[r + 1]``: :func:`loop_bound_reads`) are offsets, not a window. Triton: two ``tl.load`` of
    one pointer parameter in the same loop body (or both outside loops), so that a two-pass row kernel, which
    loads a row once per pass, is not one."""
    if f is None:
        return None
    if matmul_like:
        return False
    if f.triton is not None:
        groups: dict[tuple[str, tuple[int, ...]], int] = {}
        for op in f.triton.memops:
            if op.op == "load" and op.pointer:
                inside = tuple(lp.id for lp in f.loops if lp.span[0] <= op.span[0] and op.span[1] <= lp.span[1])
                groups[(op.pointer, inside)] = groups.get((op.pointer, inside), 0) + 1
        return any(n >= 2 for n in groups.values())
    by_pointer: dict[str, list[Any]] = {}
    bounds = set(loop_bound_reads(f.loops, f.accesses, f.pointer_aliases))  # offsets (p[r], p[r + 1]), no window
    for a in f.global_accesses():
        if a.kind == "write" or a.index is None or a in bounds:
            continue
        by_pointer.setdefault(a.pointer, []).append(a.index)
        for lid in a.loops:
            lp = f.loops[lid]
            if lp.var and lp.trip_value is not None:
                s_loop, s_thread = a.stride(lp.var), a.stride("threadIdx.x")
                if s_loop is not None and s_loop.is_number and s_loop != 0 and s_loop == s_thread:
                    return True
    for indices in by_pointer.values():
        for i, x in enumerate(indices):
            for y in indices[i + 1:]:
                diff = (x - y).expand()
                if diff.is_number and diff != 0:
                    return True
    return False


def _window_facts(in_file: KernelFacts | None, lang: str, matmul_like: bool | None) -> dict[str, bool | None]:
    """``stencil_like``, ``stencil_window`` and ``offsets_row_loop`` (see :data:`FACTS`) from the kernel's analysis
    in its file (``None``: unknown)."""
    return {
        "stencil_like": True if in_file is not None and (in_file.stencils or in_file.stencils2d or
                                                         in_file.stencils3d) else
        _neighbour_loads(in_file, matmul_like),  # the window's radius may be a file constant
        "stencil_window": False if lang != "cuda" else _stencil_window(in_file),
        "offsets_row_loop": False if lang != "cuda" else (
            None if in_file is None else any(lp.thread_rows for lp in offsets_loops(in_file))),
    }


def _swaps_fast_dimension(f: KernelFacts | None) -> bool | None:
    """Whether the kernel's one global read and one global write are contiguous along different thread dimensions
    (``out[x * rows + y] = in[y * cols + x]``), forwards or backwards (stride -1: a reversed coordinate, ``out[x *
    rows + (rows - 1 - y)]`` of a rotation by 90 degrees), from the affine index facts; ``None`` when not
    analyzable."""
    if f is None:
        return None
    reads = [a for a in f.global_accesses() if a.kind == "read"]
    writes = [a for a in f.global_accesses() if a.kind == "write"]
    if len(reads) != 1 or len(writes) != 1:
        return None
    r, w = reads[0], writes[0]
    fast = {a: next((d for d in ("x", "y") if a.stride(f"threadIdx.{d}") in (1, -1)), None) for a in (r, w)}
    return fast[r] is not None and fast[w] is not None and fast[r] != fast[w]


def _kernel_facts(kernel: Kernel | None, language: str) -> dict[str, Any]:
    if kernel is None:
        return {k: None for k in ("kernel_name", "pointer_params", "restrict_missing", "inputs_restrict",
                                  "has_launch_bounds", "launch_sites", "launch_block", "constexpr_params")}
    pointers = [p for p in kernel.params if p.is_pointer]
    c_params = traits(language).c_types  # a CUDA family kernel: C parameters, <<<grid, block>>> launches
    launch_block: int | None = None
    if kernel.launch_sites:
        config = kernel.launch_sites[0].config
        if c_params:
            launch_block = _literal_int(config.get("block"))
        else:
            for key, value in config.items():
                if _BLOCK_KW.match(key):
                    launch_block = _literal_int(value)
                    if launch_block is not None:
                        break
    attrs = kernel.attributes or {}
    return {
        "kernel_name": kernel.name,
        "pointer_params": len(pointers),
        "restrict_missing": any(not p.is_restrict for p in pointers) if c_params else False,
        "inputs_restrict": c_params and any(p.is_const for p in pointers)
        and all(p.is_restrict for p in pointers if p.is_const),
        "has_launch_bounds": bool(attrs.get("launch_bounds")) if c_params else False,
        "launch_sites": len(kernel.launch_sites),
        "launch_block": launch_block,
        "constexpr_params": len(kernel.constexpr_params),
    }


def _profile_facts(profile: Profile | None) -> dict[str, Any]:
    if profile is None:
        return {"bottleneck": "unknown", "secondary": [], "measured": False, "memory_pct": None,
                "compute_pct": None, "occupancy": None, "registers": None, "spills": None,
                "shared_bytes": None, "block_size": None, "ncu_rules": []}
    sol = profile.sol or {}
    occ = profile.achieved_occupancy if profile.achieved_occupancy is not None else profile.theoretical_occupancy
    return {
        "bottleneck": profile.bottleneck.cls,
        "secondary": list(profile.bottleneck.secondary),
        "measured": profile.mode == "gpu",
        "memory_pct": sol.get("memory_pct"),
        "compute_pct": sol.get("compute_pct"),
        "occupancy": occ,
        "registers": profile.registers,
        "spills": None if profile.spill_bytes is None else profile.spill_bytes > 0,
        "shared_bytes": profile.shared_bytes,
        "block_size": profile.block_size,
        "ncu_rules": [str(r.get("rule")) for r in profile.ncu_rules if isinstance(r, dict) and r.get("rule")],
    }


#: The CUDA normal forms the memory reads as one boolean fact each (``False`` for Triton; ``None`` without the file).
_CUDA_FORMS = {"one_element_tree": _one_element_tree, "segment_prefix_loop": _segment_prefix_loop,
               "row_running_scan": _row_running_scan,
               "flat_remappable": _flat_remappable, "elementwise_shape": _elementwise_shape}


def compute_facts(
    features: KernelFeatures,
    language: str,
    profile: Profile | None = None,
    kernel: Kernel | None = None,
    model: SourceModel | None = None,
) -> dict[str, Any]:
    """All facts of :data:`FACTS` for one kernel.

    Args:
        features: the kernel's syntactic features.
        language: ``"cuda"``, ``"cuda-in-python"`` or ``"triton"``.
        profile: its profile, or ``None`` (profile facts unknown, bottleneck ``"unknown"``).
        kernel: the kernel, or ``None`` (kernel-level facts unknown).
        model: the file ``kernel`` was read from, or ``None``: with it, a kernel whose dot loop sits in a
            ``__device__`` function it calls (by name or through a template argument) is ``matmul_like``
            (:func:`htam_core.source.analysis.callees.device_callees`).

    Returns:
        fact name -> value (``None`` for unknown).

    Raises:
        ValueError: unknown language.
    """
    lang = normalize_language(language)
    f = features
    loops = len(f.loops)
    reductions = len(f.reductions)
    loads, stores = f.loads, f.stores
    has_loop = loops > 0
    uses_math = bool(f.math_calls)
    header = triton_header(model) if kernel is not None else ""  # kernel_analysis reads it for Triton only
    analysis = kernel_analysis(kernel, model, header) if kernel is not None else None
    # Shared memory and barriers may be spelled through the file's own helpers (``T *sdata = SharedMemory<T>();``
    # with the accessor struct above the kernel, ``cg::sync(cta)``): with the file, those facts are read from the
    # kernel in its file.
    in_file = _file_analysis(model, kernel) or analysis
    matmul_like, reduction_like = _patterns(in_file)
    if matmul_like is False and kernel is not None and model is not None and _callee_matmul(model, kernel):
        matmul_like, reduction_like = True, False
    facts: dict[str, Any] = {
        "language": lang,
        "embedded": language in kinds() and traits(language).embedded,
        "loads": loads,
        "stores": stores,
        "loops": loops,
        "has_loop": has_loop,
        "constant_trip_loops": sum(1 for lp in f.loops if lp.trip_count is not None),
        "all_loops_unrolled": has_loop and all(lp.has_unroll_pragma for lp in f.loops),
        "unrollable_loops": _unrollable_loops(lang, in_file),
        "shared_arrays": len(f.shared_memory),
        "uses_shared": bool(f.shared_memory) or (in_file is not None and any(
            a.space == "shared" for a in in_file.accesses)),
        "shared_tree": None if in_file is None else bool(in_file.shared_tree_loops()),
        "interleaved_tree": None if in_file is None else bool(in_file.interleaved_tree_loops()),
        "max_sum_passes": None if in_file is None else bool(in_file.max_then_sum_loops()),
        "row_passes": 0 if lang != "cuda" else (None if in_file is None else len(in_file.row_passes())),
        "syncthreads": f.syncthreads if in_file is None else max(f.syncthreads, len(in_file.block_barriers())),
        "atomics": len(f.atomics),
        "uses_atomics": bool(f.atomics),
        "uses_vector_types": bool(f.vector_types),
        "uses_dot": bool(f.uses_dot),
        "masks": f.masks,
        "reductions": reductions,
        "has_reduction": reductions > 0,
        "uses_2d_index": bool(f.uses_2d_index),
        "uses_ldg": bool(f.uses_ldg),
        "math_calls": list(f.math_calls),
        "uses_math": uses_math,
        "has_grid_stride_loop": bool(f.has_grid_stride_loop) or (in_file is not None and bool(in_file.grid_stride_loops)),
        "matmul_like": matmul_like,
    }
    facts["reduction_like"] = reduction_like
    facts["has_reuse"] = True if (matmul_like or f.shared_memory) else (
        None if matmul_like is None else bool(has_loop and reduction_like and loads >= 2))
    facts["scalar_contiguous_reads"] = 0 if lang != "cuda" else _scalar_contiguous_reads(analysis)
    facts["scalar_element_writes"] = 0 if lang != "cuda" else _scalar_element_writes(analysis)
    facts.update(_row_loop_facts(analysis, lang), few_long_rows=_few_long_rows(lang, model, kernel, in_file))
    facts.update(_window_facts(in_file, lang, matmul_like))
    facts.update({k: False if lang != "cuda" else form(model, kernel, in_file) for k, form in _CUDA_FORMS.items()})
    facts.update(_kernel_facts(kernel, lang))
    facts.update(_analysis_facts(analysis, f, lang))
    structural_transpose = (lang == "cuda" and loads == 1 and stores == 1 and bool(f.uses_2d_index)
                            and not has_loop)
    if lang == "cuda" and analysis is not None and (analysis.transposes or analysis.transpose_loops()):
        facts["transpose_like"] = True  # KernelFacts.transposes (affine indices) or .transpose_loops (samples)
    elif not structural_transpose:
        facts["transpose_like"] = False
    elif kernel is None:
        facts["transpose_like"] = None
    else:
        facts["transpose_like"] = _swaps_fast_dimension(analysis)
    facts.update(_profile_facts(profile))
    missing = set(FACTS) - set(facts)
    assert not missing, f"facts not computed: {missing}"
    return facts
