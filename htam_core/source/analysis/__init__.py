"""One layer of facts about a kernel, derived once and shared by every transform and the static profiler.

Entry point: :func:`analyze` (``analyze(model, kernel) -> KernelFacts``), cached per kernel text and
position. The facts (:mod:`~htam_core.source.analysis.facts`) are immutable dataclasses: constants
resolved in scope, every memory access with its index as an affine (sympy) function of the thread,
block and loop indices and its strides, loops with bounds, steps, trip counts and accumulators,
per-pointer read and write sets, the thread-index variables, the launch configuration (1-3-D
``dim3`` through variables) and, for Triton, program-id/arange axes, tile loops, reductions,
masked loads/stores and ``tl.dot`` operand dtypes.

Modules: ``syntax`` (the grammar and query cache, node helpers), ``constants`` (the one constant
evaluator), ``loops`` (the one trip counter), ``launch`` (the one launch query), ``unit`` (locating a
kernel in its parsed text: the one parsed-unit type, which the transforms edit through a thin view),
``cuda``/``triton`` (the builders), ``facts`` (the dataclasses), ``guards`` (the one bounds-check reader: the
guarded body and its early-return forms), ``online`` (loops that already keep a softmax's max and sum online), ``sync`` (barriers in normal form,
every spelling of a block barrier one fact; shared-memory accessor structs), ``transpose`` (element-copy transposes
computed from the affine indices, with their bounds checks read as affine bounds), ``nodes`` (the node queries the
transforms ask what a node is through: ``is_loop``, ``declarations``, the selectors of ``node_at``, the line arithmetic of
edits), ``forms`` (the CUDA forms the transforms match: the global index, a written node, the elementwise shape).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict

from htam_core.source.analysis.facts import (
    BUILTINS,
    DIMS,
    Access,
    Accumulator,
    AtomicUpdate,
    Bound,
    ColumnSplit,
    Dim,
    ElementGroup,
    KernelFacts,
    LaunchFacts,
    LoopFact,
    OnlineStat,
    PointerAlias,
    PointerFacts,
    ThreadIndex,
    Transpose,
    TransposeLoop,
    TritonAxis,
    TritonBound,
    TritonDot,
    TritonFacts,
    TritonLoop,
    TritonMemOp,
    TritonPointerType,
    TritonReduction,
    WelfordStat,
    stride_of,
    sym,
)
from htam_core.source.analysis.sync import Barrier
from htam_core.source.model import Kernel, SourceModel
from htam_core.types.language import traits

__all__ = [
    "BUILTINS", "DIMS", "Access", "Accumulator", "AtomicUpdate", "Barrier", "Bound", "ColumnSplit", "Dim", "ElementGroup", "KernelFacts", "LaunchFacts", "LoopFact",
    "OnlineStat", "PointerAlias", "PointerFacts",
    "ThreadIndex", "Transpose", "TransposeLoop", "TritonAxis", "TritonBound", "TritonDot", "TritonFacts", "TritonLoop", "TritonMemOp", "TritonPointerType",
    "TritonReduction", "WelfordStat", "analyze",
    "stride_of", "sym",
]

_MAX = 256
_facts: OrderedDict[tuple, KernelFacts] = OrderedDict()
_lock = threading.Lock()


def analyze(model: SourceModel, kernel: Kernel, spell: bool = False, fold: frozenset[str] = frozenset()) -> KernelFacts:
    """The facts of ``kernel`` (one of ``model.kernels``), computed once per file text and kernel position.

    With ``spell`` (CUDA), the facts' expressions keep the names of the constants defined outside the kernel
    (``#define N 1024`` reads as ``N``, not ``1024``): a transform decides on the plain facts and spells its edit
    from these, so that the edit follows the user's names when they change (``-DN=2048``); the names in ``fold``
    are folded to their values all the same (a window's radius ``R``, which fixes the shape of what is read). Idea source: a
    compiler's symbolic constants, kept apart from their values until code is emitted.

    Never raises for odd code: what cannot be analyzed is left out and said in ``KernelFacts.errors``
    (a kernel that cannot be located at all gives empty facts with one error line).
    """
    key = (model.text, kernel.name, kernel.name_span.start, kernel.language, spell, fold)
    with _lock:  # the editor's analysis, profile and request threads share this cache
        hit = _facts.get(key)
        if hit is not None:
            _facts.move_to_end(key)
            return hit
    try:
        facts = _build(model, kernel, spell, fold)
    except (RecursionError, ValueError, TypeError, AttributeError, ArithmeticError) as exc:  # odd code: one line
        facts = KernelFacts(kernel.name, kernel.language,
                            errors=(f"{kernel.name}: the analysis stopped ({type(exc).__name__}: {exc}); "
                                    "facts left empty",))
    with _lock:
        _facts[key] = facts
        while len(_facts) > _MAX:
            _facts.popitem(last=False)
    return facts


def _build(model: SourceModel, kernel: Kernel, spell: bool = False, fold: frozenset[str] = frozenset()
           ) -> KernelFacts:
    if traits(kernel.language).tiles:
        from htam_core.source.analysis.triton import triton_facts
        from htam_core.source.analysis.unit import python_source

        psrc = python_source(model, kernel)
        if isinstance(psrc, str):
            return KernelFacts(kernel.name, kernel.language, errors=(psrc,))
        return triton_facts(psrc, kernel)
    from htam_core.source.analysis.cuda import cuda_facts
    from htam_core.source.analysis.unit import cuda_source

    src = cuda_source(model, kernel)
    if isinstance(src, str):
        return KernelFacts(kernel.name, kernel.language, errors=(src,))
    facts = cuda_facts(src, kernel, spell, fold)
    # a cycle it breaks: macro_loops parses through the source api
    from htam_core.source.analysis.macro_loops import expanded_view

    view = expanded_view(model, kernel)
    if view is None:
        return facts
    # the body read with its loop macros expanded (same lines); the launches, outside the body, in the user's bytes
    return dataclasses.replace(analyze(view.model, view.kernel, spell, fold), launches=facts.launches)
