"""Scheduling overhead of the Dask executor on a real LocalCluster, and the projected wall time of a full
KernelBench sweep on 8, 64 and 512 GPUs.

Measured here (CPU machine, static mode):

* ``probe_s``: the in-process time of one static probe task (:mod:`htam_core.bench.probe`: parse, static profile,
  rank, SQLite write), warm, run by the ``local`` executor;
* ``noop_overhead_s``: the worker-seconds per task that Dask itself costs (submit, schedule, run, collect a
  result) for a task that does nothing (``builtins:dict`` copies its task): ``wall * workers / n``;
* ``probe_overhead_s``: the same for the probe tasks: ``(wall * workers - sum of the tasks' own wall_s) / n``;
* ``cluster_start_s``: starting a LocalCluster and its worker processes; ``warmup_s``: the first task on a fresh
  worker (imports of torch, triton, htam).

Projection model (written down in docs/BENCH.md): a sweep is ``problems x policies x seeds`` independent tasks;
task ``i`` takes ``d_i + o`` GPU-seconds, where ``d_i`` is a measured per-problem wall time from the committed
H200 KernelBench run (``problems[].wall_s``, 4 loop steps plus the final timing), cycled over the problems and the
same for every policy and seed, and ``o`` is the measured Dask overhead per task. Tasks are dealt to ``G`` GPUs
longest first (LPT list scheduling, what a pull-based scheduler approaches); the projected wall time is the
cluster start, one worker warm-up, and the larger of the makespan and the scheduler bound: one scheduler process
hands out tasks one after the other, at the end-to-end rate measured with the no-op tasks.

    python bench/bench_dask.py --out bench/results/dask-2026-12-01
"""

from __future__ import annotations

import argparse
import heapq
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from htam_core.bench.executors import ExecutorOptions, run_tasks, start_local_cluster, task_key  # noqa: E402
from htam_core.types.files import read_data_text  # noqa: E402

KERNELS = [("bench/suite/vector_add_small_block.py", "vadd_kernel"), ("bench/suite/softmax_rows.py",
           "row_softmax_kernel"), ("bench/suite/layernorm_heuristics.py", "ln_fwd_kernel"),
           ("bench/suite/bias_gelu_fused.py", "bias_gelu_residual_kernel")]
PROBE = "htam_core.bench.probe:run_probe_task"
GPU_RESULTS = REPO / "bench/results/2026-11-29-nvidia-h200-kernelbench.json"


def probe_tasks(folder: Path, n: int, tag: str) -> list[tuple[str, dict[str, Any]]]:
    """``n`` probe tasks over the suite's Triton kernels, each with its own store under ``folder``."""
    out = []
    for i in range(n):
        path, kernel = KERNELS[i % len(KERNELS)]
        t = {"path": str(REPO / path), "kernel": kernel, "uid": f"{tag}-{i}", "time": float(i),
             "memory_path": str(folder / tag / f"{i}.sqlite3")}
        out.append((task_key(f"{tag}/{i}", t), t))
    return out


def makespan(durations: list[float], gpus: int) -> float:
    """Longest-processing-time-first list scheduling of ``durations`` (seconds) on ``gpus`` machines."""
    loads = [0.0] * gpus
    heapq.heapify(loads)
    for d in sorted(durations, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + d)
    return max(loads)


def project(per_problem_s: list[float], overhead_s: float, start_s: float, warmup_s: float,
            serial_s: float = 0.0, problems: int = 250, policies: int = 10, seeds: int = 3,
            gpus: tuple[int, ...] = (8, 64, 512)) -> dict[str, Any]:
    """The projected sweep wall time per GPU count (see the module docstring for the model); ``serial_s`` is the
    scheduler's serial time per task (one scheduler process): the wall time is at least ``tasks * serial_s``."""
    base = sorted(per_problem_s)
    tasks = [base[p % len(base)] + overhead_s for p in range(problems) for _ in range(policies * seeds)]
    total = sum(tasks)
    out = {"tasks": len(tasks), "gpu_seconds": total, "per_gpu": {}}
    for g in gpus:
        span = makespan(tasks, g)
        bound = len(tasks) * serial_s
        wall = start_s + warmup_s + max(span, bound)
        out["per_gpu"][str(g)] = {"wall_s": wall, "wall_h": wall / 3600, "makespan_s": span,
                                  "scheduler_bound_s": bound, "scheduler_bound": bound > span,
                                  "ideal_s": total / g, "efficiency": (total / g) / wall}
    return out


def main() -> int:
    """Measure, project, write ``<out>.json`` and ``<out>.md``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", type=int, default=200, help="probe tasks on the cluster")
    ap.add_argument("--noops", type=int, default=400, help="no-op tasks on the cluster")
    ap.add_argument("--out", default="bench/results/dask")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="htam-bench-dask-"))
    local = ExecutorOptions("local")
    run_tasks(PROBE, probe_tasks(work, 4, "warm"), local)  # imports
    t0 = time.perf_counter()
    seq = run_tasks(PROBE, probe_tasks(work, 40, "seq"), local)
    probe_s = (time.perf_counter() - t0) / 40
    assert all(r["status"] == "ok" for r in seq), seq[:2]

    t0 = time.perf_counter()
    cluster = start_local_cluster(ExecutorOptions("dask", workers=args.workers))
    start_s = time.perf_counter() - t0
    try:
        opts = ExecutorOptions("dask", scheduler=cluster.scheduler_address)
        t0 = time.perf_counter()
        run_tasks(PROBE, probe_tasks(work, args.workers, "first"), opts)
        warmup_s = time.perf_counter() - t0
        noops = [(f"noop-{i}", {"i": i}) for i in range(args.noops)]
        t0 = time.perf_counter()
        got = run_tasks("builtins:dict", noops, opts)
        noop_wall = time.perf_counter() - t0
        assert [g["i"] for g in got] == list(range(args.noops))
        t0 = time.perf_counter()
        res = run_tasks(PROBE, probe_tasks(work, args.tasks, "dist"), opts)
        probe_wall = time.perf_counter() - t0
        assert all(r["status"] == "ok" for r in res), [r for r in res if r["status"] != "ok"][:2]
    finally:
        cluster.close()
    task_sum = sum(r["wall_s"] for r in res)
    noop_overhead = noop_wall * args.workers / args.noops
    probe_overhead = max(0.0, (probe_wall * args.workers - task_sum) / args.tasks)
    gpu_doc = json.loads(read_data_text(GPU_RESULTS))  # committed gzip-compressed
    per_problem = [float(p["wall_s"]) for p in gpu_doc["problems"] if p.get("status") == "ok"]
    overhead = max(noop_overhead, probe_overhead)
    serial = noop_wall / args.noops  # end-to-end task rate of one scheduler, this client included
    proj = project(per_problem, overhead, start_s, warmup_s, serial)
    import dask
    import distributed

    doc = {"date": time.strftime("%Y-%m-%d"), "machine": {"host": platform.node(), "python":
           platform.python_version(), "cpus": __import__("os").cpu_count(), "dask": dask.__version__,
           "distributed": distributed.__version__},
           "command": "python bench/bench_dask.py " + " ".join(sys.argv[1:]), "workers": args.workers,
           "measured": {"probe_s": probe_s, "cluster_start_s": start_s, "warmup_s": warmup_s,
                        "noop_tasks": args.noops, "noop_wall_s": noop_wall, "noop_overhead_s": noop_overhead,
                        "probe_tasks": args.tasks, "probe_wall_s": probe_wall, "probe_task_sum_s": task_sum,
                        "probe_overhead_s": probe_overhead, "scheduler_serial_s_per_task": serial},
           "projection": {"model": "max(LPT makespan, tasks x scheduler serial time) of problems x policies x seeds "
                                   "tasks, each the measured H200 per-problem wall time (cycled) plus the measured "
                                   "per-task overhead; plus cluster start and one worker warm-up",
                          "per_problem_source": str(GPU_RESULTS.relative_to(REPO)),
                          "per_problem_s": {"n": len(per_problem), "median": statistics.median(per_problem),
                                            "mean": statistics.fmean(per_problem), "min": min(per_problem),
                                            "max": max(per_problem)},
                          "overhead_s_used": overhead, **proj}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    m = doc["measured"]
    pp = doc["projection"]["per_problem_s"]
    lines = [f"# Dask executor: scheduling overhead and sweep projection ({doc['date']})", "",
             f"Machine: {doc['machine']['host']}, {doc['machine']['cpus']} CPUs, Python {doc['machine']['python']}, "
             f"dask {doc['machine']['dask']}, distributed {doc['machine']['distributed']}; static mode (no GPU). "
             f"Command: `{doc['command']}`.", "",
             "| measured | value |", "|---|---|",
             f"| static probe task, in process (warm) | {m['probe_s'] * 1e3:.1f} ms |",
             f"| LocalCluster start ({args.workers} worker processes) | {m['cluster_start_s']:.2f} s |",
             f"| first task on fresh workers (imports) | {m['warmup_s']:.2f} s |",
             f"| Dask overhead per no-op task ({m['noop_tasks']} tasks) | {m['noop_overhead_s'] * 1e3:.2f} ms "
             "worker-time |",
             f"| Dask overhead per probe task ({m['probe_tasks']} tasks) | {m['probe_overhead_s'] * 1e3:.2f} ms "
             "worker-time |",
             f"| scheduler throughput bound (no-op wall / tasks) | {serial * 1e3:.2f} ms per task |", "",
             f"Projection: {proj['tasks']} tasks (250 problems x 10 policies x 3 seeds), per-task time from "
             f"`{doc['projection']['per_problem_source']}` ({pp['n']} problems, median {pp['median']:.1f} s, "
             f"{pp['min']:.1f} to {pp['max']:.1f} s) plus {overhead * 1e3:.1f} ms overhead; "
             f"{proj['gpu_seconds'] / 3600:.1f} GPU-hours in all.", "",
             "| GPUs | projected wall | ideal (GPU-s / GPUs) | scheduler bound | efficiency |",
             "|---|---|---|---|---|"]
    for g, v in proj["per_gpu"].items():
        lines.append(f"| {g} | {v['wall_s'] / 60:.1f} min | {v['ideal_s'] / 60:.1f} min | "
                     f"{v['scheduler_bound_s'] / 60:.1f} min{' (binds)' if v['scheduler_bound'] else ''} | "
                     f"{v['efficiency']:.3f} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
