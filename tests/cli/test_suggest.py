"""``htam suggest FILE --kernel NAME``: JSON contract, history, ablations, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import htam_core.profile.api as profile_api
from htam_core.cli.main import main
from htam_core.memory import Outcome, open_store
from htam_core.types.profile import Bottleneck, Profile

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
FIELDS = {"rank", "direction", "strategy", "score", "parts", "expected_gain", "evidence", "rationale", "transform",
          "risk"}


@pytest.fixture(autouse=True)
def fake_profiler(monkeypatch):
    """A constructed profile keeps these tests fast and independent of compilers; the profiler has its own."""
    calls = []

    def fake(path, name, static=None, **kw):
        calls.append((str(path), name, static))
        return Profile(name, bottleneck=Bottleneck("memory-bound"), warnings=["static profile (test)"])

    monkeypatch.setattr(profile_api, "profile_kernel", fake)
    return calls


def _json(capsys, *argv: str) -> list[dict]:
    assert main(["suggest", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_profiler) -> None:
    steps = _json(capsys, str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--json",
                  "--memory", str(tmp_path / "m.sqlite3"))
    assert fake_profiler and len(steps) == 5
    for i, s in enumerate(steps, start=1):
        assert FIELDS <= set(s) and s["rank"] == i
        assert {"prior", "transition", "exploration"} <= set(s["parts"])
        assert s["expected_gain"] is None  # empty memory: nothing measured
    assert steps[0]["direction"] == "data_reuse" and steps[0]["transform"] == "cuda.register_tile_matmul"


def test_history_and_memory_change_the_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mem = tmp_path / "m.sqlite3"
    with open_store(mem) as st:
        for _ in range(6):
            st.record(["vectorize_loads"], {"class=memory-bound": 1.0}, "launch_bounds",
                      Outcome(1.5, True, True, "win"), "k", "H200")
    args = [str(CORPUS / "broken_partial_kernels.cu"), "--kernel", "axpby", "--json", "--top", "3", "--memory",
            str(mem)]
    plain = _json(capsys, *args)
    after = _json(capsys, *args, "--history", "vectorize_loads")
    assert after[0]["strategy"] == "launch_bounds" == plain[0]["strategy"]
    # the matching prefix makes the records more similar to the query: more weight, more confidence
    assert after[0]["parts"]["local_transition"] > plain[0]["parts"]["local_transition"]
    assert after[0]["evidence"].startswith("after vectorize loads (float4), __launch_bounds__ register limit paid "
                                           "off 6 of 6 times")
    assert plain[0]["evidence"].startswith("__launch_bounds__ register limit paid off 6 of 6 times on 1 kernel")
    assert after[0]["expected_gain"] == pytest.approx(0.5, abs=1e-6)
    ablated = _json(capsys, *args, "--history", "vectorize_loads", "--ablation", "no-prefix")
    assert ablated != after


def test_text_output_and_top(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suggest", str(CORPUS / "vector_add_small_block.py"), "--kernel", "vadd_kernel", "--top", "2",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    out = capsys.readouterr().out
    assert "1. [" in out and "2. [" in out and "3. [" not in out and "bottleneck memory-bound" in out


def test_profiler_failure_falls_back_to_unknown(tmp_path: Path, capsys, monkeypatch) -> None:
    def boom(*a, **k):
        raise RuntimeError("nvcc not found")

    monkeypatch.setattr(profile_api, "profile_kernel", boom)
    assert main(["suggest", str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--json", "--memory",
                 str(tmp_path / "m.sqlite3")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) and "profiling failed (nvcc not found)" in captured.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.cu", "--kernel", "k"], "missing.cu"),
        ([str(CORPUS / "sgemm_naive.cu"), "--kernel", "nope"], "no kernel named 'nope'"),
        ([str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--history", "warp_magic"], "unknown strategy"),
        ([str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--top", "0"], "--top"),
    ],
)
def test_user_errors(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    assert main(["suggest", *argv, "--memory", str(tmp_path / "m.sqlite3")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("htam: error:") and message in err and "Traceback" not in err


def test_unusable_memory_is_a_store_error(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "m.sqlite3"
    bad.write_bytes(b"x" * 4096)
    assert main(["suggest", str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--memory", str(bad)]) == 3
    assert "not an SQLite database" in capsys.readouterr().err


def test_every_step_says_whether_the_rules_engine_makes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``refusal`` is the editor's sentence (registry.resolve_step): LLM-only steps and transforms that refuse."""
    from htam_core.memory import load_knowledge
    from htam_core.source import load
    from htam_core.transforms import registry

    path = CORPUS / "sgemm_naive.cu"
    steps = _json(capsys, str(path), "--kernel", "sgemm_naive", "--json", "--top", "60",
                  "--memory", str(tmp_path / "m.sqlite3"))
    kb, model = load_knowledge(), load(str(path))
    kernel = model.kernel("sgemm_naive")
    kinds = set()
    for s in steps:
        strat = kb.strategy(s["strategy"])
        if s["makes_edit"]:
            assert s["refusal"] is None
            assert registry.propose(strat.transform, model, kernel, None), s["strategy"]
            kinds.add("made")
        elif strat.transform is None:
            assert s["refusal"] == registry.no_transform_message(strat.title, strat.guidance,
                                                                 "Run `htam optimize --engine llm`")
            kinds.add("no transform")
        else:
            reason = registry.propose(strat.transform, model, kernel, None).reason
            assert s["refusal"] == f"“{strat.title}” does not apply to sgemm_naive: {reason}"
            kinds.add("refused")
    assert kinds == {"made", "no transform", "refused"}, kinds
    assert main(["suggest", str(path), "--kernel", "sgemm_naive", "--top", "60", "--memory",
                 str(tmp_path / "m.sqlite3")]) == 0
    text = capsys.readouterr().out
    for s in steps:
        if s["refused"]:
            assert f"   refused here: {s['refusal'].splitlines()[0]}" in text
        elif s["refusal"]:
            assert f"   not made by the rules engine: {s['refusal']}" in text
    # never a refused step above one that is not refused
    flags = [s["refused"] for s in steps]
    assert flags == sorted(flags)


def test_an_incomplete_kernel_is_not_ranked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: a half-typed kernel was ranked as if it were whole. One line says it is incomplete, nothing
    is ranked (as in the hover), exit 2; the complete kernels of the same file are still ranked."""
    from tests.support.half_typed import TRITON

    path = tmp_path / "half.py"
    path.write_text(TRITON)
    assert main(["suggest", str(path), "--kernel", "half", "--static", "--memory", str(tmp_path / "m.sqlite3")]) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 1
    assert lines[0].startswith("htam: error: half is incomplete (it does not parse at line 12, column 9: `(` is "
                               "never closed (the text stops after `def half(x_ptr,`, line 12)") \
        and "finish or fix it there first" in lines[0]
    assert main(["suggest", str(path), "--kernel", "second", "--static", "--memory", str(tmp_path / "m.sqlite3"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
