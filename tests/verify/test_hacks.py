"""Runtime reward-hack fixtures, checked end to end on the CPU (Triton interpreter, CUDA compile-only).

Each file of tests/fixtures/hacks/runtime is named ``<rule id>__<variant>``: the verdict of
:func:`htam_core.verify.check.verify_candidate` must name that rule (refused, or labelled for ``tf32`` and
``reduced-precision``). ``correct__*`` files are honest solutions that must be accepted. The correctness
check runs in a worker process (the persistent ``verify-interpret`` pool), never in the test process.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from htam_core.verify.check import resolve_harness, verify_candidate  # noqa: E402
from htam_core.verify.guards import RULES_BY_ID  # noqa: E402
from htam_core.verify.runtime_rules import RUNTIME_RULES_BY_ID  # noqa: E402

RUNTIME = Path(__file__).resolve().parents[1] / "fixtures" / "hacks" / "runtime"
PY_HACKS = sorted(p for p in RUNTIME.glob("*.py") if not p.name.startswith(("ref_", "correct", "gpu_")))
PY_CORRECT = sorted(RUNTIME.glob("correct__*.py"))
CU = sorted((RUNTIME / "cuda").glob("*.cu"))
LABEL_RULES = {"tf32", "reduced-precision"}
#: fixtures the static guards cannot see: only running them exposes the hack
RUNTIME_ONLY = {"unwritten-output", "mismatch", "fresh-inputs", "scaled-inputs", "second-input-set"}


def _rule(p: Path) -> str:
    return p.stem.split("__")[0]


def _verify(p: Path, **kw):
    return verify_candidate(p, resolve_harness(p), interpret=True, timeout_s=300, **kw)


def test_every_fixture_names_a_known_rule():
    names = {_rule(p) for p in PY_HACKS + CU if not p.name.startswith("correct")}
    unknown = names - set(RULES_BY_ID) - set(RUNTIME_RULES_BY_ID)
    assert not unknown, unknown
    # the runtime checks each have a fixture that evades the static guards
    assert RUNTIME_ONLY <= names


@pytest.mark.parametrize("path", PY_HACKS, ids=lambda p: p.name)
def test_python_hack_is_refused_by_its_rule(path: Path):
    rule = _rule(path)
    v = _verify(path, run_refused=True)
    if rule in LABEL_RULES:
        assert rule in v.labels, v.to_json()
    else:
        assert rule in v.refused_by, v.to_json()
        assert v.status == "refused" and v.correct is False
    if rule == "tf32":  # correct TF32 code: accepted, but labelled, never a plain speedup
        assert v.accepted and v.verified_on == "interpreter"
        assert any("not a plain fp32 speedup" in m for m in v.messages)
    if rule == "reduced-precision":  # fp16 arithmetic fails KernelBench's fp32 tolerance
        assert v.refused_by == ["mismatch"]
    if rule in RUNTIME_ONLY:  # nothing static: the runtime check alone refused it
        assert not v.findings and v.verified_on == "interpreter", v.to_json()
        assert v.correctness is not None and v.correctness.trials >= 1


@pytest.mark.parametrize("path", [p for p in PY_HACKS if RULES_BY_ID.get(_rule(p)) is not None
                                  and RULES_BY_ID[_rule(p)].severity == "refuse"], ids=lambda p: p.name)
def test_static_refusal_stops_before_running(path: Path):
    v = _verify(path)
    assert v.status == "refused" and _rule(path) in v.refused_by
    assert v.verified_on is None and v.correctness is None
    assert any("did not run" in m for m in v.messages)


@pytest.mark.parametrize("path", PY_CORRECT, ids=lambda p: p.name)
def test_correct_solution_is_accepted(path: Path):
    v = _verify(path)
    assert v.accepted and v.correct and v.refused_by == [] and v.labels == [], v.to_json()
    assert v.verified_on == "interpreter" and v.correctness.trials >= 5


def test_cached_result_evades_the_static_rule_but_not_fresh_inputs():
    v = _verify(RUNTIME / "fresh-inputs__first-call.py")
    assert v.refused_by == ["fresh-inputs", "mismatch"]
    assert v.correctness.trials == 2  # the first seed matched, the second saw the stale result


def test_scaled_and_second_set_name_the_trial_that_caught_them():
    v = _verify(RUNTIME / "scaled-inputs__constant.py")
    assert "scale 2" in v.messages[0] and v.correctness.trials == 4  # three unscaled seeds passed
    v = _verify(RUNTIME / "second-input-set__hardwired.py")
    assert "input set 1" in v.messages[0] and v.correctness.trials == 6  # all five seeds of set 0 passed


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                    reason="needs nvcc for the compile-only check")
@pytest.mark.parametrize("path", CU, ids=lambda p: p.name)
def test_cuda_fixtures_without_gpu(path: Path):
    v = _verify(path)
    rule = _rule(path)
    if RULES_BY_ID.get(rule) is not None and RULES_BY_ID[rule].severity == "refuse":
        assert v.status == "refused" and rule in v.refused_by
        return
    # compile-only is never correct, and it is not "wrong" either
    assert v.status == "unverified" and not v.correct and v.verified_on == "compile-only"
    assert v.refused_by == []
    assert any("unverified, not wrong" in m for m in v.messages)
    if rule in LABEL_RULES:
        assert rule in v.labels
