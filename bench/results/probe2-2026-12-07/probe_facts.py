"""Print each kernel's atomic facts: uniform atomics, block-result atomics, grid_free_result, grid_total (probe2).

Usage: PYTHONPATH=<worktree> python probe_facts.py FILE
"""

import sys

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

with open(sys.argv[1]) as fh:
    model = parse_text(fh.read(), "cuda")
for k in model.kernels:
    f = analyze(model, k)
    print(k.name, "uniform:", [a.address_text for a in f.uniform_atomics],
          "result:", [a.address_text for a in f.result_atomics],
          "grid_free_result:", f.grid_free_result() is not None, "grid_total:", len(f.grid_total()))
