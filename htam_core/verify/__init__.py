"""htam_core.verify: correctness over seeds (KernelBench semantics) and reward-hack guards."""

from htam_core.verify.correctness import (
    BASE_SEED,
    DEFAULT_TOLERANCES,
    N_SEEDS,
    CorrectnessResult,
    Trial,
    check_correctness,
    compare_outputs,
    tolerance_for,
)

__all__ = [
    "BASE_SEED", "DEFAULT_TOLERANCES", "N_SEEDS", "CorrectnessResult", "Trial", "check_correctness",
    "compare_outputs", "tolerance_for",
]
