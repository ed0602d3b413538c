"""htam_core.bench: the benchmark runners (naive-kernel suite, KernelBench, measured space and replay).

:data:`DEFAULT_OUT` is where ``htam bench suite|kernelbench|replay`` write their results unless ``--out`` says
otherwise: a folder in the current directory, never the repository's committed ``bench/results`` (a user's run
must not write into the checkout; pass ``--out bench/results`` to add a run to the committed results).
"""

#: Default results folder of the ``htam bench`` commands, relative to the current directory.
DEFAULT_OUT = "htam-bench-out"
