"""The loop's speed work, on the CPU: Nsight Compute off the critical path (a fake ``ncu`` on PATH), warm workers
reused across candidates with a separate clean one for the re-timing, compiles ahead of need, phase times.

The GPU layer is faked as in ``test_reproduce.py`` (``Evaluator._on_gpu`` and the comparison's worker target), so
these tests mean the same with or without a GPU; the counters stage and the workers are real processes.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from htam_core.harness import find_harness
from htam_core.measure.compare import comparison_from_rounds
from htam_core.optimize import OptimizeTask, run_optimize
from htam_core.optimize.evaluate import START_LABEL, Evaluation, Evaluator
from htam_core.profile import ncu_stage
from htam_core.profile.ncu_stage import CountersStage
from htam_core.runtime.cache import CompileCache
from htam_core.runtime.worker import close_pool, run_in_worker
from htam_core.source import load
from tests.optimize.report_checks import copy_example
from tests.optimize.test_measure_cache import _profile

FIXTURE_CSV = Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "vadd_details.csv"
WIN = comparison_from_rounds([[1.0, 1.01, 0.99, 1.0] * 2], [[0.5, 0.5, 0.505, 0.495] * 2])
SUITE = Path(__file__).resolve().parents[2] / "bench" / "suite"


def _fake_ncu(root: Path) -> dict[str, Path]:
    """A fake ``ncu`` in ``root/bin``: it logs the harness file it was asked to profile, waits until ``release``
    exists (60 s at most, then fails without output), and writes the sample CSV as its log file."""
    paths = {"bin": root / "bin", "log": root / "ncu.log", "release": root / "release"}
    paths["bin"].mkdir(parents=True)
    script = paths["bin"] / "ncu"
    script.write_text(f"""#!/bin/sh
out=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--log-file" ]; then out="$a"; fi
  if [ "$prev" = "--run-harness" ]; then cp "$a" {root}/harness-$$.json; echo {root}/harness-$$.json >> {paths['log']}; fi
  prev="$a"
done
i=0
while [ ! -e {paths['release']} ]; do
  sleep 0.1; i=$((i+1)); if [ $i -ge 600 ]; then exit 1; fi
done
cp {FIXTURE_CSV} "$out"
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return paths


def _ncu_calls(paths: dict[str, Path]) -> list[str]:
    """The kernel files the fake ncu was asked to profile (read from the harness JSON it received)."""
    if not paths["log"].exists():
        return []
    files = []
    for line in paths["log"].read_text().split():
        h = json.loads(Path(line).read_text())
        files.append(Path(h["path"]).read_text())
    return files


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    """A fake GPU (start 1.0 ms, candidates 0.5 ms, every search comparison a 2x win) and a fake ncu on PATH."""
    paths = _fake_ncu(tmp_path / "ncu")
    monkeypatch.setenv("PATH", f"{paths['bin']}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("htam_core.measure.gpu.GPU_WARM_IMPORTS", ())  # no torch import in CPU tests
    state: dict = {"start": None, "paths": paths, "stages": [], "wait_for_counters": False,
                   "wait_for_ncu_start": False}

    def on_gpu(self, cand_path: Path, model, kernel, use_ncu: bool, lab: list[str], fp32_tol=None) -> Evaluation:
        assert not use_ncu  # the loop never runs ncu inline
        is_start = Path(cand_path).read_text() == state["start"]
        if not is_start and state["wait_for_ncu_start"]:  # the start's ncu runs while candidates are evaluated
            deadline = time.monotonic() + 60
            while not paths["log"].exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        if not is_start and state["wait_for_counters"]:
            stage = state["stages"][-1]
            deadline = time.monotonic() + 60
            while stage.pending() and time.monotonic() < deadline:
                time.sleep(0.05)
        ms = 1.0 if is_start else 0.5
        return Evaluation(True, True, "gpu", None, ms, [ms], _profile(ms=ms), model, ["ok"], lab)

    def compare(self, parent_text: str, cand_path: Path, *, fresh: bool = False):
        return WIN, ""

    real_init = CountersStage.__init__

    def init(self, *a, **kw) -> None:
        real_init(self, *a, **kw)
        state["stages"].append(self)

    monkeypatch.setattr(CountersStage, "__init__", init)
    monkeypatch.setattr(Evaluator, "_on_gpu", on_gpu)
    monkeypatch.setattr(Evaluator, "compare", compare)
    monkeypatch.setattr("htam_core.optimize.loop.gpu_available", lambda: True)
    return state


def _run(tmp_path: Path, state: dict, name: str, budget: int = 2):
    src = copy_example(tmp_path / f"src-{name}")
    state["start"] = src.read_text()
    res = run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=budget, static=None, use_ncu=True,
                                    out_dir=str(tmp_path / name), memory_path=str(tmp_path / f"{name}.sqlite3")))
    return res, json.loads((res.report_dir / "report.json").read_text())


def test_loop_does_not_wait_for_ncu_and_runs_it_once_per_version(tmp_path: Path, fake_gpu: dict) -> None:
    # ncu never finishes unless released: a loop that waited for it would end with its failure, not this note
    fake_gpu["wait_for_ncu_start"] = True
    res, data = _run(tmp_path, fake_gpu, "busy")
    assert len(res.steps) == 2 and any(s.accepted for s in res.steps)
    assert any("still being collected" in w for w in res.warnings)
    assert not (data["start_profile"]["extra"] or {}).get("ncu")  # ranked without counters
    calls = _ncu_calls(fake_gpu["paths"])
    assert calls == [fake_gpu["start"]]  # one ncu run (the start); the best's was queued, then dropped
    assert data["phases"]["ncu_runs"] == 1


def test_counters_arrive_into_the_ranking_and_are_cached_across_runs(tmp_path: Path, fake_gpu: dict) -> None:
    fake_gpu["paths"]["release"].touch()
    fake_gpu["wait_for_counters"] = True  # candidate 1 is evaluated once the start's counters arrived
    _res, data = _run(tmp_path, fake_gpu, "first", budget=2)
    start = data["start_profile"]
    assert start["extra"]["ncu"]["launches"] == 2 and start["extra"]["sol_source"] == "ncu SpeedOfLight section"
    calls = _ncu_calls(fake_gpu["paths"])
    assert calls and len(calls) == len(set(calls))  # at most once per kernel version
    n = len(calls)
    _res2, data2 = _run(tmp_path, fake_gpu, "second", budget=1)  # the same start: counters from the cache
    assert data2["phases"]["ncu_cache_hits"] >= 1 and data2["start_profile"]["extra"]["ncu"]["launches"] == 2
    # a job the stage started may be stopped before its ncu logs anything: at most one ncu per job
    assert len(_ncu_calls(fake_gpu["paths"])) <= n + data2["phases"]["ncu_runs"]
    assert fake_gpu["start"] not in _ncu_calls(fake_gpu["paths"])[n:]


def test_counters_stage_submits_each_version_once(tmp_path: Path, fake_gpu: dict) -> None:
    fake_gpu["paths"]["release"].touch()
    src = copy_example(tmp_path / "src")
    h = find_harness(src, "add_kernel", load(src))
    text = src.read_text()
    cache = CompileCache(tmp_path / "cache", namespace="counters")
    stage = CountersStage(0, cache=cache)
    try:
        f1 = stage.submit(text, _profile(), h)
        assert stage.submit(text, _profile(), h) is f1
        prof = f1.result(timeout=120)
        assert prof.sol and prof.extra["ncu"]["launches"] == 2 and prof.bottleneck is not None
        assert stage.submit(text, _profile(ms=2.0), h) is f1 and stage.runs == 1
    finally:
        stage.stop()
    again = CountersStage(0, cache=cache)
    try:
        hit = again.submit(text, _profile(), h)
        assert hit.done() and again.hits == 1 and again.runs == 0
        other = again.submit(text + "\n# another version\n", _profile(), h)
        assert other.result(timeout=120).extra["ncu"] and again.runs == 1
    finally:
        again.stop()
    assert len(_ncu_calls(fake_gpu["paths"])) == 2
    assert stage.submit(text, _profile(), h) is None  # a stopped stage takes nothing


def test_no_counters_without_ncu_or_for_a_static_profile(tmp_path: Path) -> None:
    src = copy_example(tmp_path / "src")
    h = find_harness(src, "add_kernel", load(src))
    stage = CountersStage(0, cache=CompileCache(tmp_path / "c", namespace="counters"))
    try:
        static = _profile()
        static.mode = "static"
        assert stage.submit(src.read_text(), static, h) is None
    finally:
        stage.stop()


def _pid_target(tmp_path: Path) -> str:
    """A worker target file: ``pid`` returns the worker's pid; ``compare`` logs it and returns a 2x win."""
    f = tmp_path / "pid_target.py"
    f.write_text(f"""import json, os
WIN = json.loads({json.dumps(json.dumps(WIN.to_json()))})
def pid():
    return os.getpid()
def compare(parent, candidate):
    with open({str(tmp_path / 'compare_pids.txt')!r}, "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    return WIN
""")
    return str(f)


def test_candidates_reuse_one_worker_and_the_retiming_uses_a_fresh_prestarted_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("htam_core.measure.gpu.GPU_WARM_IMPORTS", ())
    close_pool("gpu0")
    target = _pid_target(tmp_path)
    monkeypatch.setattr("htam_core.optimize.evaluate.COMPARE_TARGET", f"{target}:compare")
    from htam_core.measure.gpu import pool_config

    eval_pids: list[int] = []
    prestarted: dict = {}
    state = {"start": None}

    def on_gpu(self, cand_path: Path, model, kernel, use_ncu: bool, lab: list[str], fp32_tol=None) -> Evaluation:
        r = run_in_worker(f"{target}:pid", {}, pool_key="gpu0", **pool_config(0))
        eval_pids.append(r.value)
        ms = 1.0 if Path(cand_path).read_text() == state["start"] else 0.5
        return Evaluation(True, True, "gpu", None, ms, [ms], _profile(ms=ms), model, ["ok"], lab)

    real_prestart = Evaluator.prestart

    def prestart(self) -> None:
        real_prestart(self)
        prestarted["fresh_pid"] = self._fresh.prestart()  # the background start, finished
        prestarted["pool"] = self._fresh

    monkeypatch.setattr(Evaluator, "_on_gpu", on_gpu)
    monkeypatch.setattr(Evaluator, "prestart", prestart)
    monkeypatch.setattr("htam_core.optimize.loop.gpu_available", lambda: True)
    src = copy_example(tmp_path / "src")
    state["start"] = src.read_text()
    res = run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=3, static=None, use_ncu=False,
                                    out_dir=str(tmp_path / "o"), memory_path=str(tmp_path / "m.sqlite3")))
    compare_pids = [int(x) for x in (tmp_path / "compare_pids.txt").read_text().split()]
    assert len(eval_pids) == 1 + len(res.steps) and len(set(eval_pids)) == 1  # start and candidates: one worker
    search, fresh = compare_pids[:-1], compare_pids[-1]
    assert search and set(search) == set(eval_pids)  # the search's comparisons in that same worker
    assert fresh not in eval_pids and fresh == prestarted["fresh_pid"]  # the re-timing: the pre-started one
    assert prestarted["pool"].starts == 1 and prestarted["pool"].calls == 1  # it ran nothing before
    assert res.reproduction is not None and res.reproduction.reproduced
    data = json.loads((res.report_dir / "report.json").read_text())
    assert data["phases"]["fresh_pids"] == [fresh]


def test_static_cuda_run_records_phases_and_compiles_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src_dir = tmp_path / "suite"
    src_dir.mkdir()
    for name in ("sgemm_naive.cu", "htam.toml"):
        (src_dir / name).write_bytes((SUITE / name).read_bytes())
    prefetched: list[str] = []
    real_prefetch = Evaluator.prefetch

    def prefetch(self, text: str) -> bool:
        queued = real_prefetch(self, text)
        if queued:
            prefetched.append(text)
        return queued

    monkeypatch.setattr(Evaluator, "prefetch", prefetch)
    res = run_optimize(OptimizeTask(path=str(src_dir / "sgemm_naive.cu"), kernel="sgemm_naive", budget=2,
                                    static=True, out_dir=str(tmp_path / "o"),
                                    memory_path=str(tmp_path / "m.sqlite3")))
    ph = json.loads((res.report_dir / "report.json").read_text())["phases"]
    assert set(ph["seconds"]) >= {"compile", "verify", "time", "retime", "ncu", "process_start"}
    assert ph["seconds"]["compile"] > 0 and ph["counts"]["compile"] >= 1 + len(res.steps)
    assert ph["seconds"]["time"] == 0 and ph["seconds"]["ncu"] == 0 and ph["wall_s"] > 0
    md = res.report_md.read_text()
    assert f"Time: {ph['wall_s']:.1f} s in all (compile" in md and "these overlap" in md
    # every compile went once through the pool: prefetched variants are not compiled again when evaluated
    assert ph["counts"]["compile"] == 1 + len({s.candidate_path and Path(s.candidate_path).read_text()
                                               for s in res.steps} | set(prefetched))


def test_prefetched_compile_is_shared_with_the_evaluation(tmp_path: Path) -> None:
    src_dir = tmp_path / "suite"
    src_dir.mkdir()
    for name in ("sgemm_naive.cu", "htam.toml"):
        (src_dir / name).write_bytes((SUITE / name).read_bytes())
    path = src_dir / "sgemm_naive.cu"
    text = path.read_text()
    h = find_harness(path, "sgemm_naive", load(path))
    ev = Evaluator(path, "sgemm_naive", h, gpu=False, workdir=tmp_path / "w", original_text=text)
    try:
        assert ev.prefetch(text) and not ev.prefetch(text)
        assert not ev.prefetch("no kernel here")
        out, _ = ev.evaluate(text, START_LABEL)
        assert out.ok and out.profile is not None and out.profile.registers
        assert ev.phases.counts["compile"] == 1
    finally:
        ev.close()


def test_ncu_stage_module_names_its_target() -> None:
    assert ncu_stage.COUNTERS_TARGET == "htam_core.measure.ncu:ncu_harness_target"


def test_the_static_compile_overlaps_the_gpu_measurement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """measure_on_gpu takes a static profile still being compiled as a callable and asks for it only after the GPU
    worker measured (the worker call is faked here); its fields land in the profile as before."""
    from htam_core.measure import gpu
    from htam_core.runtime.worker import WorkerResult

    order: list[str] = []
    timing = {"min": 1.0, "median": 1.1, "max": 1.3, "method": "graph", "trials": 10}
    fake = {"device": "Fake GPU", "correctness": {"correct": True, "messages": ["ok"]},
            "sets": [{"set": 0, "sizes": {}, "time": timing, "bytes": 0, "flops": 0, "dtype": None}],
            "phases": {"compile": 0.1, "verify": 0.2, "time": 0.3}}

    def call(target: str, kwargs: dict, gpu_index: int, timeout_s: float) -> WorkerResult:
        order.append(target.rsplit(":", 1)[-1])
        return WorkerResult(True, fake)

    def static() -> object:
        order.append("static")
        prof = _profile()
        prof.registers, prof.block_size = 40, 256
        return prof

    monkeypatch.setattr(gpu, "_call", call)
    src = copy_example(tmp_path / "src")
    h = find_harness(src, "add_kernel", load(src))
    p = gpu.measure_on_gpu(str(src), "add_kernel", h, 0, static=static, use_ncu=False)
    assert order == ["measure_harness", "static"]
    assert p.registers == 40 and p.block_size == 256 and p.time_ms.median == 1.1
    assert p.extra["phases"] == fake["phases"] and p.extra["static"]["device"] == "Fake GPU"


def test_the_editors_counters_stage_shares_the_cache(tmp_path: Path, fake_gpu: dict,
                                                     private_htam_env: None) -> None:
    """The editor's second stage (add_ncu_counters with the file's text) reads and fills the same counters cache
    as the loop: a kernel version is profiled by ncu once for both."""
    fake_gpu["paths"]["release"].touch()
    close_pool("gpu0")  # the GPU worker of an earlier test has another PATH
    src = copy_example(tmp_path / "src")
    h = find_harness(src, "add_kernel", load(src))
    text = src.read_text()
    first = ncu_stage.add_ncu_counters(_profile(), h, 0, text=text)
    assert first.extra["ncu"]["launches"] == 2 and len(_ncu_calls(fake_gpu["paths"])) == 1
    again = ncu_stage.add_ncu_counters(_profile(), h, 0, text=text)
    assert again.extra["ncu"]["launches"] == 2 and len(_ncu_calls(fake_gpu["paths"])) == 1
    stage = CountersStage(0)  # the loop's stage, default cache: a hit
    try:
        assert stage.submit(text, _profile(), h).done() and stage.hits == 1 and stage.runs == 0
    finally:
        stage.stop()
    close_pool("gpu0")


def test_triton_aot_compiles_run_in_parallel_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """With two AOT slots, two compiles at once run in two workers ("triton-aot" and "triton-aot-1"); a third waits
    for a free slot, so no more than two workers exist."""
    import threading

    from htam_core.profile import static_triton
    from htam_core.runtime.worker import WorkerResult

    monkeypatch.setattr(static_triton, "_SLOTS", None)
    monkeypatch.setattr(static_triton, "aot_workers", lambda: 2)
    running: list[str] = []
    seen: set[str] = set()
    peak = [0]
    lock = threading.Lock()
    both_in = threading.Barrier(2, timeout=30)

    def fake_run(target: str, kwargs: dict, timeout_s: float, pool_key: str, **cfg) -> WorkerResult:
        with lock:
            running.append(pool_key)
            seen.add(pool_key)
            peak[0] = max(peak[0], len(running))
        if kwargs["kernel"] in ("a", "b"):
            both_in.wait()  # the first two compiles are in their workers at the same time
        with lock:
            running.remove(pool_key)
        return WorkerResult(True, {"kernel": kwargs["kernel"]})

    monkeypatch.setattr(static_triton, "run_in_worker", fake_run)
    threads = [threading.Thread(target=static_triton._run_compile, args=({"kernel": k}, 10.0)) for k in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    static_triton._run_compile({"kernel": "c"}, 10.0)
    assert seen == {"triton-aot", "triton-aot-1"} and peak[0] == 2
    assert static_triton.aot_pool_key(0) == "triton-aot"
