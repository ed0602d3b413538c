"""Runtime reward-hack rules: the ids a correctness check can put in ``refused_by``, with their rationale.

The static guards (:mod:`htam_core.verify.guards`) read the candidate; these rules are what running it
against the reference (:mod:`htam_core.verify.correctness`, in a worker) can refuse. Both kinds of id share
one namespace in a verdict's ``refused_by``. Sources: KernelBench's evaluation (``eval.py``, upstream commit
423217d) and its list of known hacks; the checks KernelBench does not make are our own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeRule:
    """A runtime check that can refuse a candidate.

    Attributes:
        id: the id in ``refused_by``.
        title: one line.
        rationale: why a candidate that trips it must not be counted.
        source: where the idea comes from.
        needs_gpu: only a GPU run can make this check (timing rules).
    """

    id: str
    title: str
    rationale: str
    source: str
    needs_gpu: bool = False


_KB = "KernelBench eval.py"
_HACKS = "KernelBench known hacks"

RUNTIME_RULES: tuple[RuntimeRule, ...] = (
    RuntimeRule("mismatch", "outputs differ from the reference beyond the tolerance",
                "The candidate computes something else (atol = rtol = 1e-4 for fp32, 1e-2 for fp16/bf16).", _KB),
    RuntimeRule("shape", "an output has the wrong shape or is not a tensor",
                "Broadcasting would otherwise hide a wrong shape in allclose.", _KB),
    RuntimeRule("output-count", "the candidate returns a different number of outputs", "Nothing to compare.", _KB),
    RuntimeRule("unwritten-output", "NaN poison left in an output",
                "Outputs are filled with NaN before every run (buffers given by the harness and every torch.empty "
                "the candidate calls), so an output the kernel never writes fails instead of passing on stale "
                "memory that already holds the answer.", f"{_HACKS}: outputs left unwritten"),
    RuntimeRule("non-finite", "Inf/NaN where the reference is finite",
                "allclose semantics around non-finite values are easy to game.", "our own rule (a check KernelBench does not make)"),
    RuntimeRule("input-mutated", "an input differs from its snapshot after the run",
                "Writing into an input can make later reference runs agree with a wrong result and skips an "
                "allocation the reference pays for.", f"{_HACKS}: inputs mutated in place"),
    RuntimeRule("scaled-inputs", "fails once the inputs are scaled (x2, x0.5)",
                "A reduction that returns a constant can pass loose tolerances at one magnitude; the later seeds "
                "scale the floating inputs.", f"{_HACKS}: zeros/constants pass loose tolerances on reductions"),
    RuntimeRule("fresh-inputs", "fails on a later seed at the same magnitude",
                "Every trial draws fresh inputs (5 seeds from 42): a result cached across calls or hard-wired to "
                "the first inputs goes stale.", f"{_HACKS}: result caching"),
    RuntimeRule("second-input-set", "fails on a further input set of the harness",
                "Caching keyed on shapes, or code hard-wired to one size, breaks on a second set of sizes.",
                f"{_HACKS}: result caching"),
    RuntimeRule("raised", "the candidate raised", "A candidate that does not run is not correct.", _KB),
    RuntimeRule("load", "the candidate could not be imported or built", "Nothing ran.", _KB),
    RuntimeRule("harness", "the harness cannot run the candidate",
                "The harness names a launcher, kernel or input the candidate lacks.", "docs/HARNESS.md"),
    RuntimeRule("compile", "the CUDA code does not compile", "Nothing can run.", _KB),
    RuntimeRule("strict-reverify", "failed the stricter second verification of a >10x speedup",
                "A speedup above 10x is more often a hack than a win: before it is reported the candidate is "
                "checked again with more seeds from another base seed, every input set and fp32 tolerance "
                "1e-5 (or the harness's if smaller).", "our own rule (a check KernelBench does not make)"),
    RuntimeRule("side-stream-timing", "GPU work escaped the timed stream",
                "CUDA events time the current stream only; the timer also synchronizes the device and compares "
                "wall-clock time, and reports the wall-clock time when work ran elsewhere.",
                f"{_HACKS}: work on a side stream", needs_gpu=True),
    RuntimeRule("timeout", "the worker hit its wall-clock limit", "A hang costs only the worker.", "worker isolation"),
    RuntimeRule("exception", "the worker target raised", "Reported with its message.", "worker isolation"),
    RuntimeRule("crash", "the worker process died", "A crash costs only the worker.", "worker isolation"),
    RuntimeRule("oom", "out of memory", "Bounded by the worker's rlimit or the GPU.", "worker isolation"),
    RuntimeRule("cuda-fault", "illegal address / launch failure",
                "The CUDA context is poisoned; the worker is replaced.", "worker isolation", needs_gpu=True),
)

RUNTIME_RULES_BY_ID: dict[str, RuntimeRule] = {r.id: r for r in RUNTIME_RULES}
