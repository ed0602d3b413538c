"""Honest optimize output: unmeasured steps are "not measured", no plot without timings, the reason
of every incorrect candidate and of every ranked step the loop did not make.

Static runs of the real loop on the bundled example (Triton interpreter); the incorrect candidate comes from
the loopback OpenAI-compatible server (a reply computing ``x - y``), verified for real under the interpreter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.generate.config import LLMConfig
from htam_core.memory import load_knowledge
from htam_core.optimize import OptimizeTask, run_optimize
from htam_core.optimize.report import failure_reason
from htam_core.transforms.registry import no_transform_message
from tests.optimize.report_checks import check_report, md_rows
from tests.support.openai_server import OpenAIServer, Scripted

KEY_ENV = "HTAM_TEST_HONEST_KEY"


def _static(src: Path, tmp_path: Path, budget: int) -> object:
    return run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=budget, static=True,
                                     out_dir=str(tmp_path / "out"), memory_path=str(tmp_path / "mem.sqlite3")))


def test_static_steps_are_not_measured_and_no_plot_is_written(vadd: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "speedup.png").write_bytes(b"\x89PNG\r\n\x1a\nan old run's plot")
    res = _static(vadd, tmp_path, 8)
    data = check_report(out, vadd.read_text())  # kept column == "not measured", no speedup.png, plot_note
    assert data["steps"] and {s["kept"] for s in data["steps"]} == {"not measured"}
    assert not (out / "speedup.png").exists(), "a stale plot of another run was left in the report folder"
    assert res.plot is None and res.plot_note == ("not written: nothing was timed (static mode: no GPU), so there is "
                                                  "no speedup to plot")
    assert "none is kept" in res.summary and "kept chain" not in res.summary
    md = (out / "report.md").read_text()
    assert all(row[7] == "not measured" for row in md_rows(md))
    assert "| yes |" not in md


def test_steps_not_made_carry_the_refusal_sentence(vadd: Path, tmp_path: Path) -> None:
    res = _static(vadd, tmp_path, 8)
    kb = load_knowledge()
    assert res.not_made, "the ranking has LLM-only steps for this kernel; the loop must say it passed them over"
    for m in res.not_made:
        assert m.reason and (m.kernel == "start" or m.kernel.startswith("after ")), m
        if m.transform is None:
            s = kb.strategy(m.strategy)
            assert m.reason == no_transform_message(s.title, s.guidance, "Run with --engine llm")
    no_transform = [m for m in res.not_made if m.transform is None]
    assert no_transform, [m.strategy for m in res.not_made]
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [d["reason"] for d in data["not_made"]] == [m.reason for m in res.not_made]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Steps not made" in md
    for m in res.not_made:
        assert f"- {m.direction} → {m.strategy} (" in md and m.reason in md


def test_steps_not_made_leave_out_the_steps_that_were_made(vadd: Path, tmp_path: Path) -> None:
    # the demo (`htam optimize examples/vector_add.py --engine rules --budget 8`, no GPU) made triton_cache_hints
    # ... triton_autotune, then listed each of them again under "Steps not made" ("the loop already went on")
    res = _static(vadd, tmp_path, 8)
    made = {s.strategy for s in res.steps}
    assert made and all(m.refused for m in res.not_made if m.strategy in made), res.not_made
    section = (tmp_path / "out" / "report.md").read_text().split("## Steps not made", 1)[-1].split("## ", 1)[0]
    assert "already went on" not in section and "already evaluated" not in section, section
    for strategy in made:  # this run refuses none of the steps it made: none is listed
        assert f"→ {strategy} (" not in section, section
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert not made & {d["strategy"] for d in data["not_made"]}


def test_an_incorrect_candidate_says_which_output_seed_and_error(vadd: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-loopback")
    wrong = vadd.read_text().replace("x + y, mask=mask", "x - y, mask=mask")
    reply = Scripted.content(f"```python\n{wrong}```")
    with OpenAIServer([reply, reply]) as srv:
        cfg = LLMConfig(base_url=srv.base_url, model="loopback-model", api_key_env=KEY_ENV, max_retries=0,
                        backoff_s=0.01, max_repairs=0, timeout_s=30)
        res = run_optimize(OptimizeTask(path=str(vadd), kernel="add_kernel", engine="llm", llm=cfg.to_json(),
                                        budget=1, static=True, out_dir=str(tmp_path / "out"),
                                        memory_path=str(tmp_path / "mem.sqlite3")))
    (step,) = res.steps
    assert step.status == "incorrect" and step.kept() == "no"
    assert step.reason is not None and step.reason.startswith("seed ")
    for part in ("input set 0: output 0: ", "values differ beyond atol=", "max abs error ", "max rel error "):
        assert part in step.reason, step.reason
    data = check_report(tmp_path / "out", vadd.read_text())  # the md row's last cell is the reason
    assert data["steps"][0]["reason"] == step.reason


def test_failure_reason_picks_the_informative_line() -> None:
    assert failure_reason("neutral", ["anything"]) is None
    assert failure_reason("incorrect", ["refused by guard timing-hack (line 3): calls time.sleep"]) == \
        "refused by guard timing-hack (line 3): calls time.sleep"
    crash = ("Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n    y = k()\n"
             "triton.compiler.errors.CompilationError: at 12:4: unsupported tensor index")
    assert failure_reason("failed", [crash]) == ("triton.compiler.errors.CompilationError: at 12:4: unsupported "
                                                 "tensor index")
    msgs = ["seed 1, input set 0: output 0: 5 of 10 values differ beyond atol=1e-05 rtol=1e-05 (max abs error 2, "
            "max rel error 1)", "seed 1, input set 0: the earlier trial(s) matched; ..."]
    assert failure_reason("incorrect", list(reversed(msgs))) == msgs[0]
    assert failure_reason("failed", []) == "no message from the verifier"


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not installed")
def test_static_mode_follows_a_step_that_only_reorders_float_additions(tmp_path: Path) -> None:
    # a new user's trial: the reduction's top step (then sequential addressing) was made but best.cu did not hold it
    src = Path(__file__).resolve().parents[1] / "fixtures" / "textbook_pairs" / "reduction" / "naive.cu"
    work = tmp_path / "r"
    work.mkdir()
    (work / "naive.cu").write_text(src.read_text())
    res = run_optimize(OptimizeTask(path=str(work / "naive.cu"), kernel="reduce_sum", engine="rules", budget=1,
                                    out_dir=str(tmp_path / "out"), memory_path=str(tmp_path / "m.sqlite3"),
                                    static=True))
    step = res.steps[0]
    # the tree's block sum goes to an atomic, so the whole rung (grid-stride add, shuffle finish) ranks first
    assert step.strategy in ("thread_coarsening", "sequential_addressing") and step.accepted, step.messages
    assert any("order of float additions only" in m and "followed in static mode" in m for m in step.messages)
    best = (tmp_path / "out" / "best.cu").read_text()
    assert "tid % (2 * s)" not in best and best != src.read_text()


@pytest.mark.parametrize(("engine", "correct", "numerics", "reorders", "follows"), [
    ("rules", None, False, False, True),   # a mechanical step with the same results, compiled only
    ("rules", None, True, True, True),     # a tree or shuffle of the same terms
    ("rules", None, True, False, False),   # fast-math or reduced precision: nothing can check it
    ("llm", None, False, False, False),    # unverified model code is never followed
    ("llm", True, True, False, True),      # verified (the Triton interpreter): followed
    ("rules", False, False, False, False),  # checked and wrong
])
def test_which_unverified_steps_static_mode_follows(engine: str, correct: bool | None, numerics: bool,
                                                    reorders: bool, follows: bool) -> None:
    from htam_core.optimize.loop import follows_in_static

    assert follows_in_static(engine, correct, numerics, reorders) is follows


def test_a_program_run_whole_says_no_candidate_is_checked(tmp_path: Path) -> None:
    """Regression (a new user's report): when no launch harness could be inferred from ``main()`` (a struct passed
    by value that holds a `void*`), the program is run whole, which checks nothing; the run said nothing about it. Its warning now says
    so, why, and how to get a checked harness."""
    from tests.harness.test_infer_cuda import STRUCT_ARG

    src = tmp_path / "wsum.cu"
    # a struct holding a void* is not passed as numbers and buffers: the harness is refused and the program runs whole
    src.write_text(STRUCT_ARG.replace("INIT", "Weights w = {0.5f, 0.25f, nullptr};").replace(
        "struct Weights { float wa, wb; };", "struct Weights { float wa, wb; void *ctx; };"))
    res = run_optimize(OptimizeTask(path=str(src), kernel="wsum2", budget=1, static=True, engine="rules",
                                    out_dir=str(tmp_path / "out"), memory_path=str(tmp_path / "mem.sqlite3")))
    (line,) = [w for w in res.warnings if w.startswith("harness:")]
    assert "run whole" in line and "no candidate is checked for correctness" in line, line
    assert "`w` of wsum2 is a `Weights` passed by value" in line and "[kernel.wsum2]" in line, line
    assert line in (tmp_path / "out" / "report.md").read_text()
