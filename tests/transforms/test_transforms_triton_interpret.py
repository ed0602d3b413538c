"""Triton candidates still compute the right result under ``TRITON_INTERPRET=1`` on the CPU.

Each fixture file has a ``__main__`` self-test comparing with torch (vector add, softmax, matmuls,
GELU, scale). The candidates run in one worker process (kernel code never runs in the test process),
each through ``runpy`` as ``__main__``; a failing self-test raises and is reported per candidate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from transform_helpers import fixture_path

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

pytestmark = pytest.mark.slow

# (file, kernel, transform, candidate index)
CASES = [
    ("vector_add_small_block.py", "vadd_kernel", "triton.block_size", 3),
    ("vector_add_small_block.py", "vadd_kernel", "triton.block_size", 5),
    ("vector_add_small_block.py", "vadd_kernel", "triton.autotune", 0),
    ("vector_add_small_block.py", "vadd_kernel", "triton.cache_hints", 0),
    ("vector_add_small_block.py", "vadd_kernel", "triton.divisibility_hints", 0),
    ("vector_add_small_block.py", "vadd_kernel", "triton.warps_stages", 1),
    ("softmax_rows.py", "row_softmax_kernel", "triton.autotune", 0),
    ("softmax_rows.py", "row_softmax_kernel", "triton.cache_hints", 1),
    ("matmul_autotune.py", "mm_kernel", "triton.grouped_ordering", 0),
    ("matmul_autotune.py", "mm_kernel", "triton.divisibility_hints", 0),
    ("tri_matmul.py", "matmul_2d", "triton.grouped_ordering", 1),
    ("tri_matmul.py", "matmul_2d", "triton.autotune", 0),
    ("tri_matmul.py", "matmul_2d", "triton.block_size", 0),
    ("tri_matmul.py", "matmul_1d", "triton.grouped_ordering", 0),
    ("tri_heads_qk.py", "heads_qk", "triton.grouped_ordering", 0),
    ("tri_scale.py", "scale_shift", "triton.block_size", 2),
    ("tri_scale.py", "scale_shift", "triton.autotune", 0),
    ("tri_scale.py", "copy_exact", "triton.cache_hints", 0),
    ("bias_gelu_fused.py", "bias_gelu_residual_kernel", "triton.autotune", 0),
]

_WORKER = r"""
import json, runpy, sys, traceback
out = {}
for path in sys.argv[1:]:
    try:
        runpy.run_path(path, run_name="__main__")
        out[path] = "ok"
    except BaseException:
        out[path] = traceback.format_exc()[-2000:]
print("HTAM-RESULT " + json.dumps(out))
"""


def _key(case: tuple) -> str:
    return ":".join(map(str, case))


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict[str, str]:
    """Run every case's candidate in one interpreter worker; ``{case key: "ok" | traceback}``."""
    tmp = tmp_path_factory.mktemp("triton_candidates")
    paths: dict[str, Path] = {}
    for i, case in enumerate(CASES):
        file, kernel, tid, idx = case
        model = load(str(fixture_path(file)))
        res = registry.propose(tid, model, model.kernel(kernel))
        assert not isinstance(res, NotApplicable), (case, res)
        p = tmp / f"cand_{i}_{Path(file).stem}.py"
        p.write_text(res[idx].new_text)
        paths[_key(case)] = p
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _WORKER, *map(str, paths.values())],
        capture_output=True, text=True, env=env, timeout=480, cwd=tmp,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("HTAM-RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    by_path = json.loads(line[len("HTAM-RESULT "):])
    return {k: by_path[str(p)] for k, p in paths.items()}


@pytest.mark.parametrize("case", CASES, ids=_key)
def test_candidate_runs_correctly_in_interpreter(interpreted, case):
    assert interpreted[_key(case)] == "ok", interpreted[_key(case)]
