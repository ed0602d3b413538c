"""Where the optimize loop's time goes: ``htam optimize`` with a small budget on five kernels, split into phases.

Kernels (copied with their harness into a temp folder, so the repository is never written):

* ``examples/vector_add.py`` (``add_kernel``): the bundled example, Triton;
* ``bench/suite/softmax_rows.py`` (``row_softmax_kernel``): a Triton row kernel;
* ``bench/suite/row_sum_serial.cu`` (``row_sum_serial``): a CUDA ``.cu`` kernel run through its host launcher;
* ``tests/fixtures/corpus/kb_swish.py`` (``swish_fwd_kernel``): a KernelBench CUDA pair (``ModelNew`` with
  ``load_inline`` next to its reference ``kb_swish_ref.py``);
* ``bench/suite/sgemm_naive.cu`` (``sgemm_naive``): the naive SGEMM.

Each kernel runs ``htam optimize FILE --kernel K --budget B --json`` as a new process (``--static`` on a machine
without a GPU, or with ``--static``), twice: ``cold`` with an empty compile and counters cache
(``HTAM_CACHE_DIR`` in a new temp dir) and ``warm`` in the same folder with the cache the cold run left, as a
user re-running the command does (the same kernel versions again: the compiles and the Nsight Compute counters
come from the cache). Each run has its own empty memory store and seed 0. Read from ``report.json`` (``"phases"``, :mod:`htam_core.optimize.phases`): seconds of ``compile``,
``verify``, ``time``, ``retime``, ``ncu`` (background), ``process_start`` (worker starts and warm-ups) and the
loop's ``wall``; measured here: ``process_s``, the whole ``htam`` process (interpreter start, imports, the loop,
the report). Phases overlap (compiles and ncu run in the background), so they need not add up to the wall time.

Run: ``python bench/bench_loop_speed.py --out bench/results --label cpu-static [--budget 2] [--static]``.
Writes ``loop-speed-<label>.json`` and ``loop-speed-<label>.md`` into ``--out``. On a GPU machine
``bench/gpu_session.sh`` runs it without ``--static`` (label ``<machine>-gpu``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("compile", "verify", "time", "retime", "ncu", "process_start")

#: (name, files to copy (the first is the kernel file), kernel)
KERNELS: list[tuple[str, list[Path], str]] = [
    ("example vector_add (Triton)", [ROOT / "examples/vector_add.py", ROOT / "examples/htam.toml"], "add_kernel"),
    ("softmax_rows (Triton row kernel)", [ROOT / "bench/suite/softmax_rows.py", ROOT / "bench/suite/htam.toml"],
     "row_softmax_kernel"),
    ("row_sum_serial (.cu host launcher)", [ROOT / "bench/suite/row_sum_serial.cu", ROOT / "bench/suite/htam.toml"],
     "row_sum_serial"),
    ("kb_swish (KernelBench CUDA pair)", [ROOT / "tests/fixtures/corpus/kb_swish.py",
                                          ROOT / "tests/fixtures/corpus/kb_swish_ref.py"], "swish_fwd_kernel"),
    ("sgemm_naive (CUDA)", [ROOT / "bench/suite/sgemm_naive.cu", ROOT / "bench/suite/htam.toml"], "sgemm_naive"),
]


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None


def run_one(files: list[Path], kernel: str, *, budget: int, static: bool, cache_dir: Path, work: Path,
            timeout_s: float, memory: Path) -> dict[str, Any]:
    """One ``htam optimize`` process on a copy of ``files``; returns its phases, process time and outcome."""
    work.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy2(f, work / f.name)
    out = work / "out"
    cmd = [sys.executable, "-m", "htam_core.cli.main", "optimize", str(work / files[0].name), "--kernel", kernel,
           "--budget", str(budget), "--out", str(out), "--memory", str(memory), "--json",
           "--seed", "0"]
    if static:
        cmd.append("--static")
    env = {**os.environ, "HTAM_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT) + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=work)
        rc, err = proc.returncode, proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        rc, err = None, f"timed out after {timeout_s:g} s"
    process_s = time.monotonic() - t0
    row: dict[str, Any] = {"rc": rc, "process_s": round(process_s, 3)}
    report = out / "report.json"
    if not report.exists():
        row["error"] = err.strip().splitlines()[-1] if err.strip() else "no report.json"
        return row
    data = json.loads(report.read_text())
    ph = data.get("phases") or {}
    row.update({"wall_s": ph.get("wall_s"), "seconds": ph.get("seconds", {}), "counts": ph.get("counts", {}),
                "process_starts": ph.get("process_starts"), "ncu_runs": ph.get("ncu_runs"),
                "ncu_cache_hits": ph.get("ncu_cache_hits"), "steps": len(data.get("steps", [])),
                "mode": data.get("mode"), "best_speedup": data.get("best_speedup")})
    return row


def _md(result: dict[str, Any]) -> str:
    lines = [f"# Optimize loop speed: {result['label']}", "", f"**{result['banner']}**", "",
             f"Machine: {result['machine']}; date {result['date']}; budget {result['budget']}; mode "
             f"{'static' if result['static'] else 'GPU'}.", "", f"Command: `{result['command']}`", "",
             "Seconds per phase from each run's `report.json` (`phases`; they overlap: compiles and Nsight Compute "
             "run in the background). `process` is the whole `htam optimize` process, measured by the script; "
             "`wall` is the loop inside it. `cold`: empty compile and counters cache; `warm`: the cache the cold "
             "run left.", "",
             "| kernel | cache | steps | process | wall | " + " | ".join(PHASES) + " | worker starts | ncu runs |",
             "|---|---|---:|---:|---:|" + "---:|" * len(PHASES) + "---:|---:|"]
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['cache']} | error: {r['error'][:120]} |" + " |" * (len(PHASES) + 4))
            continue
        sec = r.get("seconds") or {}
        lines.append(f"| {r['kernel']} | {r['cache']} | {r.get('steps')} | {r['process_s']:.1f} | "
                     f"{(r.get('wall_s') or 0):.1f} | " + " | ".join(f"{sec.get(p, 0):.2f}" for p in PHASES)
                     + f" | {r.get('process_starts')} | {r.get('ncu_runs')} |")
    return "\n".join(lines) + "\n"


def _write(out: Path, label: str, result: dict[str, Any]) -> None:
    (out / f"loop-speed-{label}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"loop-speed-{label}.md").write_text(_md(result))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit code (0 also when a kernel's run failed: its row says why)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"), help="folder for the JSON and markdown")
    ap.add_argument("--label", default=None, help="file label (default: cpu-static or gpu)")
    ap.add_argument("--budget", type=int, default=2, help="candidates per run (default 2)")
    ap.add_argument("--static", action="store_true", help="static mode even with a GPU")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="limit of one htam process, seconds")
    ap.add_argument("--only", default=None, help="run only kernels whose name contains this text")
    args = ap.parse_args(argv)
    static = args.static or not _has_gpu()
    label = args.label or ("cpu-static" if static else "gpu")
    banner = ("CPU, static mode; GPU not measured" if static and not _has_gpu() else
              "static mode (GPU present but not used)" if static else "GPU, measured mode")
    rows: list[dict[str, Any]] = []
    cmd = "python bench/bench_loop_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {"label": label, "banner": banner, "static": static, "budget": args.budget, "command": cmd.strip(),
              "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPU cores)",
              "date": _dt.date.today().isoformat(), "rows": rows}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="htam-loop-speed-") as tmp:
        for i, (name, files, kernel) in enumerate(KERNELS):
            if args.only and args.only not in name:
                continue
            cache = Path(tmp) / f"cache-{i}"
            for which in ("cold", "warm"):
                r = run_one(files, kernel, budget=args.budget, static=static, cache_dir=cache,
                            work=Path(tmp) / f"k{i}", timeout_s=args.timeout_s,
                            memory=Path(tmp) / f"memory-k{i}-{which}.sqlite3")
                r.update({"kernel": name, "cache": which})
                rows.append(r)
                print(f"{name} [{which}]: process {r['process_s']:.1f} s"
                      + (f", error: {r['error']}" if "error" in r else f", wall {r.get('wall_s')} s"), flush=True)
                _write(out, label, result)  # after every run: a stage stopped at its time limit keeps its rows
    print(f"wrote {out / f'loop-speed-{label}.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
