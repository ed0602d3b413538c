"""htam_core.verify: correctness over seeds (KernelBench semantics) and reward-hack guards."""

from htam_core.verify.correctness import (
    DEFAULT_TOLERANCES,
    N_SEEDS,
    CorrectnessResult,
    check_correctness,
    compare_outputs,
    tolerance_for,
)

__all__ = [
    "DEFAULT_TOLERANCES", "N_SEEDS", "CorrectnessResult", "check_correctness",
    "compare_outputs", "tolerance_for",
]
