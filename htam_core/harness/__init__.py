"""How to run a kernel: KernelBench pairs, the ``htam.toml`` harness spec, ``.cu`` programs with ``main()``.

Public API: :func:`find_harness`, :class:`Harness`, :class:`HarnessError`, :func:`write_template`.
Running a harness happens in a worker process through :mod:`htam_core.harness.runner`.
"""

from htam_core.harness.base import Harness, HarnessError, InputSpec
from htam_core.harness.find import find_harness
from htam_core.harness.template import write_template

__all__ = ["Harness", "HarnessError", "InputSpec", "find_harness", "write_template"]
