"""Measurement: one honest GPU timer, its CUPTI cross-check, and noise-aware comparisons.

* :mod:`~htam_core.measure.timer`: the timer (CUDA-graph replay, or events with an asynchronous L2 flush),
  with the side-stream guard and the CUPTI cross-check;
* :mod:`~htam_core.measure.cupti`: device operations from ``torch.profiler`` (CUPTI), per-call device time,
  the agreement rule;
* :mod:`~htam_core.measure.method`: which timing method a launcher gets, and why;
* :mod:`~htam_core.measure.stats`: spread, the win rule, launch-bound sets, the headline geomean;
* :mod:`~htam_core.measure.compare`: parent against candidate, interleaved in one worker.

Only :mod:`stats`, :mod:`method` and the pure parts of :mod:`cupti` and :mod:`compare` run without a GPU.
"""
