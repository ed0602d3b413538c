"""The measurement cache shared by the runs of one benchmark (CPU only: the GPU path is faked).

``Evaluator._on_gpu`` is replaced by a counting fake that returns a GPU-shaped verdict, so these tests check
what is measured and what is reused without a GPU; the real measurement is covered by the GPU tests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from htam_core.harness import Harness, find_harness
from htam_core.optimize import OptimizeTask, run_optimize
from htam_core.optimize.evaluate import REUSED_MESSAGE, Evaluation, Evaluator
from htam_core.optimize.measure_cache import MeasureCache, measure_key, remove_cache_files
from htam_core.types.profile import Bottleneck, Profile, TimeStats
from tests.optimize.report_checks import copy_example


def _profile(kernel: str = "add_kernel", ms: float = 1.25) -> Profile:
    return Profile(kernel=kernel, mode="gpu", device="Fake GPU", time_ms=TimeStats(ms * 0.9, ms, ms * 1.2),
                   registers=32, bandwidth_bytes_per_s=1.5e12, roofline_fraction=0.4,
                   bottleneck=Bottleneck("memory", ["dram 80%"], ["latency"]), harness="htam.toml",
                   ncu_rules=[{"rule": "r", "message": "m", "estimated_speedup_pct": 3.0}],
                   extra={"correctness": {"correct": True, "messages": ["ok over 5 seeds"]},
                          "timing": {"per_set": [{"median": ms}, {"median": ms / 2}]}})


def _evaluation(ms: float = 1.25) -> Evaluation:
    return Evaluation(ok=True, correct=True, verified_on="gpu", failure=None, time_ms=ms,
                      per_set_ms=[ms, ms / 2], profile=_profile(ms=ms), messages=["ok over 5 seeds"],
                      labels=["tf32"])


def _harness(**kw) -> Harness:
    return Harness(kind="spec", path="/somewhere/a/vector_add.py", kernel="add_kernel", launcher="add",
                   reference="x + y", sizes=[{"N": 1024}], **kw)


# -- the cache itself -------------------------------------------------------------------------------------
def test_roundtrip_of_an_evaluation_with_a_profile(tmp_path: Path) -> None:
    cache = MeasureCache(tmp_path / "m.sqlite3")
    ev = _evaluation()
    key = measure_key("code", "add_kernel", "triton", _harness(), 100, True)
    assert cache.get(key) is None
    assert cache.put(key, "add_kernel", ev) is True
    assert cache.put(key, "add_kernel", _evaluation(ms=9.0)) is False  # the first measurement stands
    got = cache.get(key)
    assert got is not None and got.model is None and got.reused is False
    assert got.to_json() == ev.to_json()
    assert got.profile is not None and got.profile.time_ms == TimeStats(1.25 * 0.9, 1.25, 1.25 * 1.2)
    assert got.profile.bottleneck.cls == "memory" and got.profile.bottleneck.secondary == ["latency"]
    assert got.per_set_ms == [1.25, 0.625] and got.labels == ["tf32"] and got.time_ms == 1.25
    assert len(cache) == 1
    # a second object on the same file (another process of the suite) sees it
    assert MeasureCache(tmp_path / "m.sqlite3").get(key).to_json() == ev.to_json()


def test_evaluation_without_profile_roundtrips(tmp_path: Path) -> None:
    cache = MeasureCache(tmp_path / "m.sqlite3")
    ev = Evaluation(True, False, "gpu", "incorrect", 2.0, [2.0], None, None, ["max abs diff 3.1"], [])
    cache.put("k", "add_kernel", ev)
    assert cache.get("k").to_json() == ev.to_json()


def test_key_depends_on_what_the_measurement_depends_on() -> None:
    base = dict(text="code", kernel="add_kernel", language="triton", harness=_harness(), trials=100, gpu=True)
    k0 = measure_key(**base)
    assert measure_key(**base) == k0
    assert measure_key(**{**base, "text": "code "}) != k0
    assert measure_key(**{**base, "trials": 20}) != k0
    assert measure_key(**{**base, "kernel": "other"}) != k0
    assert measure_key(**{**base, "language": "cuda"}) != k0
    assert measure_key(**{**base, "gpu": False}) != k0
    assert measure_key(**{**base, "harness": _harness(atol=1e-2)}) != k0
    assert measure_key(**{**base, "harness": dataclasses.replace(_harness(), sizes=[{"N": 2048}])}) != k0
    assert measure_key(**{**base, "harness": None}) != k0
    assert measure_key(**base, target="sm_80") != k0
    # the harness path is where the candidate was written: every run writes to its own folder
    assert measure_key(**{**base, "harness": dataclasses.replace(_harness(), path="/elsewhere/b.py")}) == k0


def _writer(path: str, worker: int, n: int) -> None:
    cache = MeasureCache(path)
    for i in range(n):
        # half the keys are written by both processes (same candidate measured by two GPUs at once)
        key = f"shared-{i}" if i % 2 == 0 else f"w{worker}-{i}"
        assert cache.get(key) is None or key.startswith("shared")
        cache.put(key, "k", _evaluation(ms=1.0 + i))


def test_concurrent_writers_from_two_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "m.sqlite3")
    MeasureCache(path)
    n = 60
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, w, n)) for w in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = MeasureCache(path)
    assert len(cache) == n // 2 + 2 * (n // 2)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    for i in range(n):
        key = f"shared-{i}" if i % 2 == 0 else f"w1-{i}"
        got = cache.get(key)
        assert got is not None and got.time_ms == 1.0 + i


def test_a_corrupt_file_is_moved_aside_and_recreated(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    path.write_bytes(b"this is not an SQLite database at all\x00" * 200)
    cache = MeasureCache(path)
    assert cache.enabled and cache.warnings and "unusable" in cache.warnings[0]
    assert list(tmp_path.glob("m.sqlite3.corrupt-*"))
    cache.put("k", "add_kernel", _evaluation())
    assert cache.get("k") is not None


def test_unreadable_rows_and_unusable_paths_are_misses(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    cache = MeasureCache(path)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO measurements VALUES ('bad', 'k', '{not json', 0)")
        conn.execute("INSERT INTO measurements VALUES ('partial', 'k', '{\"ok\": true}', 0)")
    assert cache.get("bad") is None and cache.get("partial") is None
    (tmp_path / "afile").write_text("x")
    dead = MeasureCache(tmp_path / "afile" / "m.sqlite3")  # its folder is a file
    assert dead.enabled is False and dead.warnings
    assert dead.get("k") is None and dead.put("k", "k", _evaluation()) is False and len(dead) == 0
    remove_cache_files(path)
    assert not path.exists()


# -- the evaluator ----------------------------------------------------------------------------------------
@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the GPU measurement by a fake; returns the list of candidate paths it measured.

    The fake's time is a function of the text (as a real measurement is, up to noise); a text containing
    ``FAIL`` fails (like a timeout), one containing ``WRONG`` is incorrect.
    """
    calls: list[str] = []

    def on_gpu(self, cand_path: Path, model, kernel, use_ncu: bool, lab: list[str], fp32_tol=None) -> Evaluation:
        calls.append(str(cand_path))
        text = Path(cand_path).read_text()
        if "FAIL" in text:
            return Evaluation(False, False, "gpu", "failed", model=model, messages=["worker timed out"],
                              labels=lab)
        ms = 1.0 + int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) / 65536 / 2
        prof = _profile(ms=ms)
        if "WRONG" in text:
            return Evaluation(True, False, "gpu", "incorrect", ms, [ms], prof, model, ["mismatch"], lab)
        return Evaluation(True, True, "gpu", None, ms, [ms, ms / 2], prof, model,
                          [f"measured with ncu={use_ncu}"], lab)

    monkeypatch.setattr(Evaluator, "_on_gpu", on_gpu)
    return calls


def _evaluator(src: Path, work: Path, cache: MeasureCache | None, trials: int = 100) -> Evaluator:
    h = find_harness(src, "add_kernel")
    return Evaluator(src, "add_kernel", h, gpu=True, workdir=work, original_text=src.read_text(),
                     trials=trials, cache=cache)


def test_evaluator_reuses_identical_code(tmp_path: Path, fake_gpu: list[str]) -> None:
    src = copy_example(tmp_path / "src")
    text = src.read_text() + "\n# candidate A\n"
    cache = MeasureCache(tmp_path / "m.sqlite3")
    a = _evaluator(src, tmp_path / "run-a", cache)
    b = _evaluator(src, tmp_path / "run-b", cache)
    ev1, p1 = a.evaluate(text, "01-x")
    assert len(fake_gpu) == 1 and not ev1.reused and REUSED_MESSAGE not in ev1.messages
    ev2, p2 = b.evaluate(text, "03-y")
    assert len(fake_gpu) == 1, "identical code measured twice"
    assert ev2.reused and b.reused == 1 and a.reused == 0
    assert ev2.messages[-1] == REUSED_MESSAGE
    assert p2 == tmp_path / "run-b" / "03-y" / "vector_add.py"
    assert p2.read_text() == text  # the report links it
    assert (ev2.time_ms, ev2.per_set_ms, ev2.correct) == (ev1.time_ms, ev1.per_set_ms, True)
    assert ev2.failure is None
    assert ev2.profile.to_json() == ev1.profile.to_json()
    assert ev2.model is not None and ev2.model.path == str(p2) and ev2.model.kernel("add_kernel")
    # different code, different trials: measured
    b.evaluate(text + "# B\n", "04-z")
    assert len(fake_gpu) == 2
    c = _evaluator(src, tmp_path / "run-c", cache, trials=20)
    c.evaluate(text, "01-x")
    assert len(fake_gpu) == 3 and c.reused == 0


def test_start_ncu_and_failures_are_measured_afresh(tmp_path: Path, fake_gpu: list[str]) -> None:
    src = copy_example(tmp_path / "src")
    start = src.read_text()
    cache = MeasureCache(tmp_path / "m.sqlite3")
    ev = _evaluator(src, tmp_path / "a", cache)
    ev.evaluate(start, "00-start", reuse=False)
    ev.evaluate(start, "00-start", reuse=False)
    assert len(fake_gpu) == 2 and ev.reused == 0
    ev.evaluate(start + "#x\n", "01", use_ncu=True)
    ev.evaluate(start + "#x\n", "02", use_ncu=True)
    assert len(fake_gpu) == 4 and ev.reused == 0
    ev.evaluate(start + "# FAIL\n", "03")
    r, _ = ev.evaluate(start + "# FAIL\n", "04")
    assert len(fake_gpu) == 6 and r.failure == "failed" and not r.reused  # transient: never stored
    ev.evaluate(start + "# WRONG\n", "05")
    r, _ = ev.evaluate(start + "# WRONG\n", "06")
    assert len(fake_gpu) == 7 and r.reused and r.failure == "incorrect" and r.correct is False


def test_refusals_and_static_mode_do_not_touch_the_cache(tmp_path: Path, fake_gpu: list[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    src = copy_example(tmp_path / "src")
    cache = MeasureCache(tmp_path / "m.sqlite3")
    static_calls: list[str] = []

    def static(self, cand_path, model, kernel, lab, fp32_tol=None):
        static_calls.append(str(cand_path))
        return Evaluation(True, True, "interpreter", model=model, labels=lab)

    monkeypatch.setattr(Evaluator, "_static", static)
    h = find_harness(src, "add_kernel")
    ev = Evaluator(src, "add_kernel", h, gpu=False, workdir=tmp_path / "s", original_text=src.read_text(),
                   cache=cache)
    ev.evaluate(src.read_text() + "#s\n", "01")
    ev.evaluate(src.read_text() + "#s\n", "02")
    assert len(static_calls) == 2 and len(cache) == 0 and ev.reused == 0 and fake_gpu == []


# -- the loop -----------------------------------------------------------------------------------------------
def _gpu_run(src: Path, root: Path, name: str, cache: Path | None, **kw) -> object:
    return run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=3, static=None,
                                     use_ncu=False, out_dir=str(root / name),
                                     memory_path=str(root / f"{name}.sqlite3"),
                                     measure_cache=str(cache) if cache else None, **kw))


def test_loop_reuses_across_runs_but_times_every_start(tmp_path: Path, fake_gpu: list[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("htam_core.optimize.loop.gpu_available", lambda: True)
    src = copy_example(tmp_path / "src")
    cache = tmp_path / "measure.sqlite3"
    r1 = _gpu_run(src, tmp_path, "one", cache)
    n1 = len(fake_gpu)
    assert r1.mode == "gpu" and r1.measured and len(r1.steps) >= 1
    assert n1 == 1 + len(r1.steps) and r1.measurements_reused == 0
    # the same policy and seed again: the same candidates, all reused; only the start is timed again
    r2 = _gpu_run(src, tmp_path, "two", cache)
    assert len(fake_gpu) == n1 + 1
    assert fake_gpu[-1].endswith("00-start/vector_add.py")
    assert r2.measurements_reused == len(r2.steps) == len(r1.steps)
    assert [s.time_ms for s in r2.steps] == [s.time_ms for s in r1.steps]
    assert [s.status for s in r2.steps] == [s.status for s in r1.steps]
    assert all(REUSED_MESSAGE in s.messages for s in r2.steps)
    assert all(Path(s.candidate_path).is_file() for s in r2.steps)
    data = json.loads((tmp_path / "two" / "report.json").read_text())
    assert data["measurements_reused"] == len(r2.steps) and data["task"]["measure_cache"] == str(cache)
    assert "reused a measurement" in (tmp_path / "two" / "report.md").read_text()
    assert json.loads((tmp_path / "one" / "report.json").read_text())["measurements_reused"] == 0


def test_loop_without_cache_measures_everything(tmp_path: Path, fake_gpu: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("htam_core.optimize.loop.gpu_available", lambda: True)
    src = copy_example(tmp_path / "src")
    r1 = _gpu_run(src, tmp_path, "one", None)
    r2 = _gpu_run(src, tmp_path, "two", None)
    assert len(fake_gpu) == 2 + len(r1.steps) + len(r2.steps)
    assert r1.measurements_reused == r2.measurements_reused == 0
    assert not list(tmp_path.glob("*measure*"))


def test_static_loop_ignores_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Evaluator, "_static", lambda self, p, model, k, lab, fp32_tol=None: Evaluation(
        True, True, "interpreter", model=model, labels=lab))
    src = copy_example(tmp_path / "src")
    cache = tmp_path / "measure.sqlite3"
    res = run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=1, static=True,
                                    out_dir=str(tmp_path / "o"), memory_path=str(tmp_path / "mem.sqlite3"),
                                    measure_cache=str(cache)))
    assert res.mode == "static" and res.measurements_reused == 0 and not cache.exists()
