"""The fresh-process re-timing on the GPU (marked gpu): it runs in a new worker, not the search's, and an A/A
re-timing is neutral, so a best identical to its start would never be reported as a reproduced win."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
G = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"


def test_fresh_retiming_runs_in_a_new_worker_and_a_self_comparison_is_not_reproduced(tmp_path: Path) -> None:
    from htam_core.harness import find_harness
    from htam_core.optimize.evaluate import Evaluator
    from htam_core.optimize.reproduce import NOT_REPRODUCED, judge_reproduction
    from htam_core.runtime.worker import get_pool

    src = G / "vadd.py"
    text = src.read_text()
    ev = Evaluator(src, "vadd_kernel", find_harness(src, "vadd_kernel"), gpu=True, workdir=tmp_path / "c",
                   original_text=text)
    path = ev.write(text, "_same")
    search = get_pool("gpu0")
    before = search.pid
    comp, why = ev.compare(text, path, fresh=True)
    assert comp is not None, why
    assert comp.status == "neutral" and abs(comp.speedup - 1.0) < 0.05, comp
    assert search.pid == before  # the search's persistent worker was not used (nor started) for it
    rep = judge_reproduction(1.5, comp)  # a claimed 1.5x that a fresh A/A re-timing cannot back
    assert rep.status == NOT_REPRODUCED and "noise" in rep.reason
