"""KernelBench beside its anchors: the torch.compile anchor path (htam_core.bench.kb_eval.compile_anchor) on a
tiny torch function on the CPU, the anchor and held-out scoring, the report's anchor table, and the level-2
held-out list (the solutions' format is checked with level 1's in test_kernelbench.py)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from htam_core.bench import kernelbench as kb
from htam_core.bench.kb_eval import COMPILE_ANCHORS, compile_anchor
from htam_core.bench.report import kernelbench_markdown

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "bench" / "kernelbench_solutions"
has_cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def _cpu_timer(fn) -> dict:  # noqa: ANN001 - any zero-argument callable
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return {"mean": sum(ts) / len(ts), "trials": len(ts)}


@pytest.mark.skipif(not has_cxx, reason="torch.compile's CPU backend needs a C++ compiler (none on PATH)")
def test_compile_anchor_compiles_checks_and_times_a_tiny_model_on_cpu() -> None:
    import torch

    class Tiny(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x * 2.0 + 1.0).sum(dim=-1)

    x = torch.randn(8, 33)
    r = compile_anchor(Tiny(), [x], COMPILE_ANCHORS["compile-default"], _cpu_timer)
    assert r["status"] == "ok" and r["correct"] is True, r
    assert r["compile_s"] > 0 and r["timing"]["mean"] > 0 and r["max_abs_err"] < 1e-4
    assert r["mode"] == "default"


@pytest.mark.skipif(not has_cxx, reason="torch.compile's CPU backend needs a C++ compiler (none on PATH)")
def test_compile_anchor_marks_a_wrong_result_incorrect_and_does_not_time_it() -> None:
    import torch

    x = torch.randn(4, 5)
    want = [torch.zeros(4)]  # not what the model computes
    r = compile_anchor(lambda t: t.sum(dim=-1), [x], None, _cpu_timer, want=want)
    assert r["status"] == "incorrect" and r["correct"] is False and r["timing"] is None


def test_compile_anchor_reports_a_failure_without_raising() -> None:
    def broken(t):  # noqa: ANN001, ANN202
        raise RuntimeError("no kernel for you")

    import torch

    r = compile_anchor(broken, [torch.ones(2)], None, _cpu_timer, want=[torch.ones(2)])
    assert r["status"] == "failed" and "no kernel for you" in r["error"] and r["timing"] is None


def _rec(pid: int, speedup: float | None, anchors: dict, held: bool = False) -> dict:
    return {"level": 2, "problem_id": pid, "name": f"{pid}_x", "held_out": held, "status": "ok", "mode": "gpu",
            "correct": speedup is not None, "speedup": speedup, "eager_ms": 1.0,
            "new_ms": (1.0 / speedup) if speedup else None, "start_speedup": None, "error": None,
            "anchors": anchors}


def _a(speedup: float | None, correct: bool | None = True, error: str | None = None) -> dict:
    return {"status": "ok" if speedup else "not measured", "correct": correct if speedup else None,
            "ms": (1.0 / speedup) if speedup else None, "speedup": speedup, "error": error}


def test_anchor_score_counts_not_measured_as_not_fast() -> None:
    recs = [_rec(1, 2.0, {"compile-default": _a(1.5), "compile-max-autotune": _a(3.0)}),
            _rec(2, 0.5, {"compile-default": _a(0.8),
                          "compile-max-autotune": _a(None, error="not measured: compile timed out (limit 180 s)")})]
    s = kb.score(recs)
    assert s["fast_p"]["1"] == pytest.approx(0.5)
    d = s["anchors"]["compile-default"]
    assert d["measured"] == 2 and d["fast_1"] == pytest.approx(0.5)
    assert d["geomean_speedup"] == pytest.approx((1.5 * 0.8) ** 0.5)
    m = s["anchors"]["compile-max-autotune"]
    assert m["measured"] == 1 and m["fast_1"] == pytest.approx(0.5) and m["geomean_speedup"] == pytest.approx(3.0)


def test_report_shows_every_system_and_the_timed_out_compile() -> None:
    recs = [_rec(1, 2.0, {"compile-default": _a(1.5),
                          "compile-max-autotune": _a(None, error="not measured: compile timed out (limit 180 s)")}),
            _rec(47, 1.1, {"compile-default": _a(0.9), "compile-max-autotune": _a(1.2)}, held=True)]
    doc = {"problems": recs, "measured": True, "environment": {}, "config": {"engine": "rules", "steps": 4},
           "summary": {"level2": kb.score(recs[:1]), "level2-heldout": kb.score(recs[1:])}}
    md = kernelbench_markdown(doc)
    assert "### Beside torch.compile" in md
    for system in ("eager PyTorch", "HTAM", "torch.compile default", "torch.compile max-autotune"):
        assert f"| level2 | {system} |" in md and f"| level2-heldout | {system} |" in md
    assert "compile timed out" in md and "2 (held out)" in md


def test_held_out_ids_read_the_fixed_list() -> None:
    ids = kb.held_out_ids(SOLUTIONS, 2)
    files = sorted((SOLUTIONS / "level2").glob("*.py"))
    have = {int(f.name.split("_", 1)[0]) for f in files}
    assert ids and ids <= have
    assert len(ids) / len(files) >= 0.25  # at least a quarter of them kept out of tuning
    assert kb.held_out_ids(SOLUTIONS, 1) == set()


def test_held_out_file_must_hold_ids(tmp_path: Path) -> None:
    (tmp_path / "level2").mkdir()
    (tmp_path / "level2" / "held_out.json").write_text(json.dumps({"ids": "47"}))
    with pytest.raises(kb.KernelBenchError, match="held_out.json"):
        kb.held_out_ids(tmp_path, 2)


PROBLEMS = Path(__import__("os").environ.get("HTAM_KB_PROBLEMS") or REPO.parent / "shared" / "data" / "kernelbench"
                / "problems.jsonl")


@pytest.mark.skipif(not PROBLEMS.is_file(), reason="KernelBench's problems.jsonl is not present")
def test_static_level2_run_scores_the_held_out_problem_apart(tmp_path: Path) -> None:
    from htam_core.cli.main import main

    out = tmp_path / "out"
    rc = main(["bench", "kernelbench", "--problems", str(PROBLEMS), "--levels", "2", "--ids", "1,47", "--steps", "1",
               "--static", "--size-overrides", str(REPO / "bench" / "kernelbench_small_sizes.json"),
               "--start-solutions", str(SOLUTIONS), "--out", str(out), "--anchors", "all"])
    assert rc == 0
    doc = json.loads(next(out.glob("*-kernelbench.json")).read_text())
    assert {p["problem_id"]: p["held_out"] for p in doc["problems"]} == {1: False, 47: True}
    assert doc["summary"]["level2"]["problems"] == 1 and doc["summary"]["level2-heldout"]["problems"] == 1
    for p in doc["problems"]:
        assert p["status"] == "ok" and p["mode"] == "static" and p["steps"][0]["correct"] is True
        # nothing is timed without a GPU, the anchors included, and each record says so
        assert set(p["anchors"]) == set(COMPILE_ANCHORS)
        assert all(a["error"] == kb.ANCHORS_NEED_GPU and a["ms"] is None for a in p["anchors"].values())
    assert doc["summary"]["level2"]["anchors"]["compile-default"]["measured"] == 0
    assert "def get_inputs" not in json.dumps(doc)


def _task(**kw) -> kb.KBTask:  # noqa: ANN003
    return kb.KBTask(level=2, problem_id=1, name="1_x", code="", start_path=None, work_dir="/tmp", **kw)


def test_run_anchor_reports_a_compile_timeout_and_a_spent_budget(monkeypatch) -> None:
    from htam_core.runtime.worker import WorkerError, WorkerResult

    calls: list[dict] = []

    def timed_out(target, kwargs, **kw):  # noqa: ANN001, ANN202
        calls.append({"target": target, **kw})
        return WorkerResult(ok=False, error=WorkerError("timeout", "did not finish"))

    monkeypatch.setattr(kb, "run_in_worker", timed_out)
    r = kb.run_anchor(_task(compile_timeout_s=30.0), "compile-max-autotune", "c.py", "r.py", 1.0)
    assert r["error"] == "not measured: compile timed out (limit 30 s)" and r["ms"] is None and r["correct"] is None
    assert calls[0]["target"] == "htam_core.bench.kb_eval:evaluate_compiled"
    assert calls[0]["pool_key"] == "gpu0-compile-max-autotune"  # its own worker: a kill leaves the others
    assert calls[0]["timeout_s"] == pytest.approx(30.0 + kb._ANCHOR_TIMING_S)
    spent = kb.run_anchor(_task(deadline=time.time() - 1), "compile-default", "c.py", "r.py", 1.0)
    assert "time budget" in spent["error"] and len(calls) == 1  # not started once the budget is spent

    def measured(target, kwargs, **kw):  # noqa: ANN001, ANN202
        return WorkerResult(ok=True, value={"status": "ok", "correct": True, "timing": {"mean": 0.25},
                                            "compile_s": 4.0, "max_abs_err": 0.0, "error": None,
                                            "eager": {"mean": 0.5}})

    monkeypatch.setattr(kb, "run_in_worker", measured)
    ok = kb.run_anchor(_task(), "compile-default", "c.py", "r.py", 1.0)
    assert ok["ms"] == 0.25 and ok["speedup"] == pytest.approx(4.0) and ok["correct"] is True


def test_final_evaluation_retries_once_in_fresh_workers_after_a_cuda_oom(monkeypatch) -> None:
    """Regression (H200, 2026-12-02): KernelBench's 6 GiB elementwise inputs ran out of GPU memory after an earlier
    problem's workers kept theirs; the evaluation now stops the GPU's workers and runs once more."""
    from htam_core.runtime.worker import WorkerError, WorkerResult

    results = [WorkerResult(ok=False, error=WorkerError("oom", "CUDA out of memory")),
               WorkerResult(ok=True, value={"correct": True})]
    closed: list[str] = []
    monkeypatch.setattr(kb, "run_in_worker", lambda *a, **k: results.pop(0))
    monkeypatch.setattr(kb, "close_pool", lambda key: closed.append(key) or True)
    r, retried = kb._final_evaluation(_task(anchors=["compile-default", "compile-max-autotune"]), "c.py", "r.py", "s.py")
    assert r.ok and retried and not results
    assert closed == ["gpu0", "gpu0-compile-default", "gpu0-compile-max-autotune"]

    other = [WorkerResult(ok=False, error=WorkerError("cuda-fault", "illegal address"))]
    monkeypatch.setattr(kb, "run_in_worker", lambda *a, **k: other.pop(0))
    r, retried = kb._final_evaluation(_task(), "c.py", "r.py", "s.py")
    assert not r.ok and not retried and closed == ["gpu0", "gpu0-compile-default", "gpu0-compile-max-autotune"]


def test_the_no_cudagraphs_anchor_is_max_autotune_without_graphs() -> None:
    assert COMPILE_ANCHORS["compile-max-autotune-no-cudagraphs"] == "max-autotune-no-cudagraphs"
    from torch._inductor import list_mode_options  # the mode's name and options are Inductor's own

    assert not list_mode_options("max-autotune-no-cudagraphs").get("triton.cudagraphs", False)
    assert list_mode_options("max-autotune").get("triton.cudagraphs") is True


_TINY = """import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(8)]

def get_init_inputs():
    return []
"""


def _tiny_run(tmp_path: Path) -> tuple[Path, Path]:
    problems = tmp_path / "problems.jsonl"
    problems.write_text(json.dumps({"level": 1, "problem_id": 19, "name": "19_ReLU", "code": _TINY}) + "\n")
    starts = tmp_path / "starts" / "level1"
    starts.mkdir(parents=True)
    shutil.copyfile(SOLUTIONS / "level1" / "19_ReLU.py", starts / "19_ReLU.py")
    return problems, starts.parent


@pytest.mark.parametrize("visible", [[], ["0"]])
def test_anchors_without_a_gpu_say_so_in_one_line_and_read_not_measured(
        visible: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: `--anchors all` on a machine without a GPU was dropped silently (no line, no record).
    ``visible == ["0"]``: nvidia-smi lists a GPU that torch cannot use, so the line comes after the run."""
    from htam_core.cli.main import main

    monkeypatch.setattr(kb, "visible_gpus", lambda: list(visible))
    monkeypatch.setattr(kb, "gpu_available", lambda: False)
    monkeypatch.setattr(kb, "environment", lambda gpus: {"date": "2026-01-01", "gpu": "none (static mode)",
                                                         "gpu_count": 0})
    problems, starts = _tiny_run(tmp_path)
    out = tmp_path / "o"
    rc = main(["bench", "kernelbench", "--problems", str(problems), "--ids", "19", "--steps", "1",
               "--anchors", "all", "--start-solutions", str(starts), "--out", str(out)])
    assert rc == 0
    said = [ln for ln in capsys.readouterr().err.splitlines() if "torch.compile anchors" in ln]
    assert len(said) == 1 and "need a GPU" in said[0] and "not timed" in said[0], said
    assert all(a in said[0] for a in COMPILE_ANCHORS)
    doc = json.loads(next(out.glob("*-kernelbench.json")).read_text())
    rec = doc["problems"][0]["anchors"]
    assert set(rec) == set(COMPILE_ANCHORS)
    assert all(a["status"] == "not measured" and a["error"] == kb.ANCHORS_NEED_GPU for a in rec.values())
    summary = doc["summary"]["level1"]["anchors"]
    assert set(summary) == set(COMPILE_ANCHORS) and all(a["measured"] == 0 for a in summary.values())
    md = next(out.glob("*-kernelbench.md")).read_text()
    for a in COMPILE_ANCHORS:
        assert f"| level1 | torch.compile {a.removeprefix('compile-')} | 0 | not measured | not measured |" in md
    assert kb.ANCHORS_NEED_GPU in md


def test_anchors_with_a_static_run_are_said_up_front(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from htam_core.cli.main import main

    problems, starts = _tiny_run(tmp_path)
    rc = main(["bench", "kernelbench", "--problems", str(problems), "--static", "--anchors", "compile-default",
               "--start-solutions", str(starts), "--out", str(tmp_path / "o")])
    assert rc == 0
    err = capsys.readouterr().err.splitlines()
    said = [i for i, ln in enumerate(err) if "torch.compile anchors" in ln]
    assert len(said) == 1 and "(--static)" in err[said[0]]
    assert said[0] < next(i for i, ln in enumerate(err) if "19_ReLU" in ln)  # before the problems run


@pytest.mark.parametrize("given", ["", " ", ",,", " , "])
def test_anchors_naming_nothing_are_refused_with_the_known_ones(given: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from htam_core.cli.main import main

    problems, starts = _tiny_run(tmp_path)
    rc = main(["bench", "kernelbench", "--problems", str(problems), "--static", "--anchors", given,
               "--start-solutions", str(starts), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("htam: error: --anchors ")
    assert "names no anchor" in err and all(a in err for a in COMPILE_ANCHORS) and "or all" in err
    assert not (tmp_path / "o").exists()


def test_parse_anchors() -> None:
    assert kb.parse_anchors(None) == []
    assert kb.parse_anchors(" all ") == list(COMPILE_ANCHORS)
    assert kb.parse_anchors("compile-max-autotune, compile-default,compile-max-autotune,") == [
        "compile-max-autotune", "compile-default"]
    with pytest.raises(kb.KernelBenchError, match="unknown --anchors compile-fast; known: compile-default"):
        kb.parse_anchors("compile-default,compile-fast")


def test_the_summary_scores_asked_anchors_that_no_record_holds() -> None:
    recs = [{"level": 1, "problem_id": 1, "status": "ok", "correct": None, "speedup": None}]
    s = kb.summarize(recs, ["compile-default"])["level1"]
    assert s["anchors"] == {"compile-default": {"measured": 0, "fast_1": None, "geomean_speedup": None,
                                                "correct": None}}
    assert kb.summarize(recs)["level1"]["anchors"] == {}
