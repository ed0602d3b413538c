"""The reward-hack fixtures on a GPU (run by the lead on the H200; skipped without a GPU).

CUDA fixtures run for real here (on the CPU they are compile-only): each ``<rule>__*.cu`` must be refused
by (or labelled with) its rule and ``correct__*`` accepted with ``verified_on == "gpu"``. The Triton/KernelBench
fixtures must get the same verdicts as under the interpreter. The side stream is also caught by the timer:
CUDA events on the current stream miss the work, the device-wide sync and wall clock see it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.verify.check import resolve_harness, verify_candidate
from htam_core.verify.guards import RULES_BY_ID

pytestmark = pytest.mark.gpu

RUNTIME = Path(__file__).resolve().parents[1] / "fixtures" / "hacks" / "runtime"
CU = sorted((RUNTIME / "cuda").glob("*.cu"))
PY = sorted(p for p in RUNTIME.glob("*.py") if not p.name.startswith(("ref_", "gpu_")))
LABEL_RULES = {"tf32", "reduced-precision"}


def _rule(p: Path) -> str:
    return p.stem.split("__")[0]


def _check(path: Path, verdict) -> None:
    rule = _rule(path)
    if rule == "correct":
        assert verdict.accepted and verdict.verified_on == "gpu", verdict.to_json()
    elif rule in LABEL_RULES:
        assert rule in verdict.labels, verdict.to_json()
    else:
        assert verdict.status == "refused" and rule in verdict.refused_by, verdict.to_json()
    if rule == "tf32":
        assert verdict.accepted
    if rule == "reduced-precision":
        assert "mismatch" in verdict.refused_by


@pytest.mark.parametrize("path", CU + PY, ids=lambda p: p.name)
def test_fixture_verdict_on_gpu(path: Path):
    v = verify_candidate(path, resolve_harness(path), interpret=False, run_refused=True, timeout_s=600)
    _check(path, v)
    if v.correctness is not None and "raised" not in v.refused_by and "load" not in v.refused_by:
        assert v.verified_on == "gpu"


@pytest.mark.parametrize("path", [p for p in CU if RULES_BY_ID.get(_rule(p)) is not None
                                  and RULES_BY_ID[_rule(p)].severity == "refuse"], ids=lambda p: p.name)
def test_static_refusal_stops_before_running_on_gpu(path: Path):
    v = verify_candidate(path, resolve_harness(path), interpret=False, timeout_s=600)
    assert v.status == "refused" and _rule(path) in v.refused_by and v.correctness is None


def test_side_stream_is_caught_by_the_timer():
    from htam_core.profile.worker import WorkerPool

    with WorkerPool("gpu-hacks", sys_path=[str(RUNTIME)], gpu_index=0, interpret=False) as pool:
        hack = pool.run("gpu_targets:time_first_set",
                        {"harness": resolve_harness(RUNTIME / "cuda" / "side-stream__scale.cu").to_json()},
                        timeout_s=600)
        honest = pool.run("gpu_targets:time_first_set",
                          {"harness": resolve_harness(RUNTIME / "cuda" / "correct__scale.cu").to_json()},
                          timeout_s=600)
    assert hack.ok and honest.ok, (hack.error, honest.error)
    assert hack.value["method"] == "wall-clock+sync", hack.value
    assert any("side stream" in w for w in hack.value["warnings"])
    # a .cu host launcher launches on the legacy default stream: no graph, events with an asynchronous flush
    assert honest.value["method"] == "events-async-flush", honest.value
    assert not any("side stream" in w for w in honest.value["warnings"]) and not honest.value["refused"], honest.value
