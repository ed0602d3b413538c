"""Run an original Triton file and a transform's candidate under ``TRITON_INTERPRET=1`` in one worker process and
compare their outputs on the same inputs (kernel code never runs in the test process).

A case names the host function to call (``entry``), its arguments (``"x"``: a 2-D float32 tensor of the shape,
``"w"``: a float32 vector of ``shape[1]``), the shapes (ragged ones included) and the tolerance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

_WORKER = r"""
import json, runpy, sys, traceback
import torch
cases = json.loads(sys.stdin.read())
out = {}
mods = {}
def module(path):
    if path not in mods:
        mods[path] = runpy.run_path(path, run_name="htam_case")
    return mods[path]
for c in cases:
    try:
        a, b = module(c["orig"])[c["entry"]], module(c["cand"])[c["entry"]]
        for shape in c["shapes"]:
            g = torch.Generator().manual_seed(sum(shape))
            x = torch.randn(*shape, generator=g) * 2.0 + 0.5
            w = torch.rand(shape[1], generator=g) + 0.5
            args = [{"x": x, "w": w}[k] for k in c["args"]]
            ra, rb = a(*[t.clone() for t in args]), b(*[t.clone() for t in args])
            ra = ra if isinstance(ra, tuple) else (ra,)
            rb = rb if isinstance(rb, tuple) else (rb,)
            assert len(ra) == len(rb), (len(ra), len(rb))
            for u, v in zip(ra, rb):
                torch.testing.assert_close(v, u, rtol=c["tol"][0], atol=c["tol"][1], msg=lambda m: f"{shape}: {m}")
        out[c["key"]] = "ok"
    except BaseException:
        out[c["key"]] = traceback.format_exc()[-2500:]
print("HTAM-RESULT " + json.dumps(out))
"""


@dataclass(frozen=True)
class Case:
    """One equivalence check: ``transform`` candidate ``index`` of ``kernel`` in ``file``, called via ``entry``."""

    file: str
    kernel: str
    transform: str
    index: int
    entry: str
    args: tuple[str, ...] = ("x",)
    shapes: tuple[tuple[int, int], ...] = ((5, 37), (16, 128), (3, 100))
    tol: tuple[float, float] = (1e-4, 1e-4)

    @property
    def key(self) -> str:
        """A readable test id."""
        return f"{self.transform}:{self.kernel}:{self.index}"


def run_cases(cases: list[Case], tmp: Path, fixture_path) -> dict[str, str]:
    """Make every case's candidate, run all in one interpreter worker; ``{case key: "ok" | traceback}``."""
    specs = []
    for i, c in enumerate(cases):
        src = fixture_path(c.file)
        model = load(str(src))
        res = registry.propose(c.transform, model, model.kernel(c.kernel))
        assert not isinstance(res, NotApplicable), (c, res)
        p = tmp / f"cand_{i}_{Path(c.file).stem}.py"
        p.write_text(res[c.index].new_text)
        specs.append({"key": c.key, "orig": str(src), "cand": str(p), "entry": c.entry, "args": list(c.args),
                      "shapes": [list(s) for s in c.shapes], "tol": list(c.tol)})
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", _WORKER], input=json.dumps(specs), capture_output=True, text=True,
                          env=env, timeout=900, cwd=tmp)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("HTAM-RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    return json.loads(line[len("HTAM-RESULT "):])
