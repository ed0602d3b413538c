"""Print one transform's candidates for a kernel, or its refusal (probe2 helper).

Usage: PYTHONPATH=<worktree> python probe_transform.py FILE KERNEL TRANSFORM_ID
"""

import sys

from htam_core.source import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

path, kname, tid = sys.argv[1:4]
with open(path) as fh:
    model = parse_text(fh.read(), "cuda")
kernel = next(k for k in model.kernels if k.name == kname)
res = propose(tid, model, kernel)
if isinstance(res, NotApplicable):
    print("NOT APPLICABLE:", res)
else:
    for c in res:
        print("CAND:", c.params, "|", c.description[:200])
