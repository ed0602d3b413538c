"""The base runtime every layer that compiles or runs kernel code stands on.

* :mod:`~htam_core.runtime.worker`: persistent, isolated worker processes (untrusted kernel and harness
  code runs there, never in the caller), with structured failures (timeout, crash, oom, CUDA fault);
* :mod:`~htam_core.runtime.cache`: the on-disk compile cache keyed by content hash, and the cache root.

It imports nothing else of ``htam_core``: ``harness``, ``verify``, ``measure`` and ``profile`` all use it.
"""
