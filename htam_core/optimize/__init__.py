"""The HTAM evolution loop: profile → rank → generate → verify → time → record → repeat.

Public API: :func:`run_optimize`, :class:`OptimizeTask`, :class:`ProgressEvent`, :class:`OptimizeResult`,
:class:`StepRecord`, :class:`OptimizeError`.
"""

from htam_core.optimize.loop import OptimizeError, kernel_fingerprint, run_optimize
from htam_core.optimize.task import POLICIES, OptimizeResult, OptimizeTask, ProgressEvent, StepRecord

__all__ = ["POLICIES", "OptimizeError", "OptimizeResult", "OptimizeTask", "ProgressEvent", "StepRecord",
           "kernel_fingerprint", "run_optimize"]
