"""Why did the timer/CUPTI cross-check refuse a timing? Time one ``.cu`` file of a textbook pair with full diagnostics.

For each job (a pair folder and one file of it: ``naive.cu``, ``expert.cu``, a candidate ``.cu``, or the naive file
with one transform applied, ``step=TRANSFORM_ID``), the kernel is run as the optimize loop runs it (the harness
inferred from the file's ``main()``, the kernel launched through CuPy on torch's stream, timed by
:class:`htam_core.measure.timer.LauncherTimer`) and the probe keeps every figure the cross-check reads:

* the launch (grid, block, threads, sizes), the timing method and why;
* the event calibration (null kernel's events and CUPTI duration, the overhead subtracted);
* the timer's trials without the profiler (raw and corrected median);
* the CUPTI pass (the timer's own trials while the profiler records): every device operation of every call with
  its name and duration, each call's sum, and the timer's events of those same trials;
* the old check (un-profiled timer against CUPTI, :func:`htam_core.measure.cupti.check_agreement`) and the
  current one (:func:`htam_core.measure.cupti.check_same_trials`), with their messages;
* what :func:`htam_core.measure.timer.time_launcher` publishes (its JSON).

Writes ``<out>/probe.json`` and ``<out>/probe.md``::

    python bench/probe_timing_refusals.py --out DIR                       # the default jobs (below), GPU
    python bench/probe_timing_refusals.py --out DIR PAIRS/count_nz:step=cuda.privatize_atomic PAIRS/sigmoid_half

A job is ``FOLDER[:FILE]`` (``FILE`` default ``naive.cu``; a path relative to the folder or absolute) or
``FOLDER:step=TRANSFORM_ID``; the kernel is the folder's ``pair.json`` ``kernel`` unless ``--kernel`` names it.
``--help`` and the report writer need no GPU; the probe itself needs torch with CUDA, CuPy and nvcc (exit 2
without them).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from htam_core.measure.cupti import (  # noqa: E402
    ABS_SLACK_MS,
    CALIBRATED_SLACK_MS,
    CuptiPass,
    DeviceOp,
    check_agreement,
    check_same_trials,
)

#: The two refused timings of the H200 short run, and a measured control of each pair.
DEFAULT_JOBS = (
    "bench/results/textbook-trial5-h100-2026-12-06/pairs/count_nz:step=cuda.privatize_atomic",
    "bench/results/textbook-trial6-h100-2026-12-06/pairs/sigmoid_half:naive.cu",
    "bench/results/textbook-trial5-h100-2026-12-06/pairs/count_nz:naive.cu",
    "bench/results/textbook-trial6-h100-2026-12-06/pairs/sigmoid_half:expert.cu",
)


@dataclass(frozen=True)
class Job:
    """One probe: ``folder`` (a pair), ``file`` (relative to it, or absolute), or ``step`` (a transform id applied
    to ``naive.cu``); ``kernel`` (``None``: the folder's ``pair.json``)."""

    folder: Path
    file: str = "naive.cu"
    step: str | None = None
    kernel: str | None = None

    @property
    def label(self) -> str:
        """``pair:file`` or ``pair:step=ID``, for the report."""
        return f"{self.folder.name}:{f'step={self.step}' if self.step else self.file}"


def parse_job(spec: str, kernel: str | None = None) -> Job:
    """A job from ``FOLDER[:FILE]`` or ``FOLDER:step=TRANSFORM_ID`` (a relative folder is read from the repository
    root when it is not found from the current directory).

    Raises:
        ValueError: an empty folder or step.
    """
    folder, _, rest = spec.partition(":")
    if not folder:
        raise ValueError(f"job {spec!r}: no pair folder")
    path = Path(folder)
    if not path.is_absolute() and not path.exists() and (REPO / path).exists():
        path = REPO / path
    if rest.startswith("step="):
        if not rest[5:]:
            raise ValueError(f"job {spec!r}: step= names no transform")
        return Job(path, step=rest[5:], kernel=kernel)
    return Job(path, rest or "naive.cu", kernel=kernel)


def kernel_of(job: Job) -> str:
    """The job's kernel: ``--kernel``, else ``pair.json``'s ``kernel``.

    Raises:
        ValueError: neither names one.
    """
    if job.kernel:
        return job.kernel
    meta = job.folder / "pair.json"
    if meta.is_file():
        return str(json.loads(meta.read_text())["kernel"])
    raise ValueError(f"{job.folder}: no pair.json and no --kernel")


def source_for(job: Job, kernel: str, work: Path) -> Path:
    """The file to time, copied into ``work`` (with the pair's other files, so that includes resolve): the named
    file, or ``naive.cu`` with the first candidate of transform ``job.step``.

    Raises:
        ValueError: the transform does not apply (its reason).
    """
    dest = work / job.label.replace(":", "_").replace("=", "-")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(job.folder, dest)
    if not job.step:
        src = Path(job.file)
        return src if src.is_absolute() else dest / src
    from htam_core.source import load
    from htam_core.transforms import registry

    model = load(dest / "naive.cu")
    got = registry.propose(job.step, model, model.kernel(kernel))
    if not isinstance(got, list):
        raise ValueError(f"{job.step} does not apply to {kernel}: {got.reason}")
    out = dest / "candidate.cu"
    out.write_text(got[0].new_text)
    return out


def ops_json(ops: list[DeviceOp]) -> list[dict[str, Any]]:
    """Device operations as ``[{"name", "dur_us"}]`` (names cut to 80 characters)."""
    return [{"name": o.name[:80], "dur_us": round(o.dur_us, 3)} for o in ops]


def analyse(raw: dict[str, Any]) -> dict[str, Any]:
    """The checks from one probe's raw figures (pure): ``raw`` holds ``timer_raw_ms`` (un-profiled trials, raw
    events), ``overhead_ms``, ``method``, and ``cupti`` = ``{"ops": [{"name", "start_us", "dur_us"}], "calls",
    "flush_names", "event_ms"}`` (the CUPTI pass).

    Returns:
        ``{"timer_ms", "cupti_ms", "cupti_per_call_ms", "calls_ops", "events_same_trials_ms", "profiler_slowdown",
        "old_check", "same_trials_check"}``: each check ``{"ok", "relative", "message"}``; ``calls_ops`` is each
        call's operations (flush included), or ``None`` when the pass does not split into calls.
    """
    overhead = float(raw.get("overhead_ms") or 0.0)
    timer = [max(0.0005, t - overhead) for t in raw["timer_raw_ms"]]
    c = raw["cupti"]
    cp = CuptiPass(tuple(DeviceOp(o["name"], o["start_us"], o["dur_us"]) for o in c["ops"]), int(c["calls"]),
                   tuple(c["flush_names"]), tuple(c["event_ms"]))
    per, chunks = cp.per_call_ms(), cp.chunks()
    med = statistics.median(timer)
    cupti_ms = statistics.median(per) if per else None
    same = statistics.median([max(0.0005, t - overhead) for t in cp.event_ms]) if cp.event_ms else None
    slack = CALIBRATED_SLACK_MS if overhead > 0 else ABS_SLACK_MS
    old = check_agreement(med, cupti_ms, slack_ms=slack)
    new = check_same_trials(med, same, cupti_ms, slack_ms=slack)
    return {"timer_ms": med, "cupti_ms": cupti_ms, "cupti_per_call_ms": per,
            "calls_ops": [ops_json(ch) for ch in chunks] if chunks else None, "events_same_trials_ms": same,
            "profiler_slowdown": same / med - 1.0 if same and med > 0 else None,
            "old_check": {"ok": old.ok, "relative": old.relative, "message": old.message},
            "same_trials_check": {"ok": new.ok, "relative": new.relative, "message": new.message}}


def probe_one(path: Path, kernel: str, trials: int, calls: int) -> dict[str, Any]:
    """Run one file's kernel on the GPU (see the module docstring): the raw figures :func:`analyse` reads, plus
    the launch, the calibration and :func:`htam_core.measure.timer.time_launcher`'s published JSON.

    Raises:
        HarnessError: no harness can be inferred. RuntimeError: CUDA or CUPTI faults.
    """
    from htam_core.harness.find import find_harness
    from htam_core.harness.runner import prepare
    from htam_core.harness.trial import BASE_SEED
    from htam_core.measure.timer import LauncherTimer, time_launcher

    h = find_harness(path, kernel)
    p = prepare(h, "cuda")
    inputs = p.trial.make_inputs(BASE_SEED, 0, 1.0)
    fn = p.bind(inputs)
    lt = LauncherTimer(fn, launcher_kind=p.launcher_kind)
    try:
        timer_raw = lt.sample(trials, raw=True)
        cp = lt.cupti_pass(calls)
        cal = lt.calibration
        out = {"launch": {"grid": str(h.grid), "block": str(h.block), "sizes": p.size_sets[0] if p.size_sets else {},
                          "launcher_kind": p.launcher_kind},
               "method": lt.method, "method_reason": lt.reason, "overhead_ms": lt.overhead_ms,
               "calibration": None if cal is None else {"method": cal.method, "overhead_ms": cal.overhead_ms,
                                                        "event_ms": cal.event_ms, "kernel_ms": cal.kernel_ms,
                                                        "note": cal.note},
               "timer_raw_ms": timer_raw,
               "cupti": {"ops": [{"name": o.name, "start_us": o.start_us, "dur_us": o.dur_us} for o in cp.ops],
                         "calls": cp.calls, "flush_names": list(cp.flush_names), "event_ms": list(cp.event_ms)}
               if cp is not None else None}
    finally:
        lt.close()
    out["published"] = time_launcher(fn, trials=trials, launcher_kind=p.launcher_kind).to_json()
    return out


def _f(x: float | None, scale: float = 1000.0, nd: int = 1) -> str:
    return "—" if x is None else f"{x * scale:.{nd}f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1%}"


def _row(r: dict[str, Any]) -> str:
    a, pub = r.get("analysis") or {}, r.get("published") or {}
    if r.get("error"):
        return f"| {r['job']} | error: {r['error'][:160]} |" + " |" * 9
    old, new = a["old_check"], a["same_trials_check"]
    return (f"| {r['job']} | {r['launch']['grid']} x {r['launch']['block']} | {r['method']} | "
            f"{_f(r.get('overhead_ms'), nd=2)} | {_f(a['timer_ms'])} | {_f(a['cupti_ms'])} | "
            f"{_f(a['events_same_trials_ms'])} | {_pct(a['profiler_slowdown'])} | "
            f"{_pct(old['relative'])} {'ok' if old['ok'] else 'REFUSED' if old['ok'] is False else 'unchecked'} | "
            f"{_pct(new['relative'])} {'ok' if new['ok'] else 'REFUSED' if new['ok'] is False else 'unchecked'} | "
            f"{'not measured' if pub.get('refused') else _f(pub.get('median'))} |")


def _ops_lines(r: dict[str, Any]) -> list[str]:
    a = r.get("analysis") or {}
    lines = [f"### {r['job']}", "", f"- method: {r.get('method')} ({r.get('method_reason') or 'graph'}); "
             f"sizes {r.get('launch', {}).get('sizes')}", f"- calibration: {r.get('calibration')}"]
    for key in ("old_check", "same_trials_check"):
        if a.get(key, {}).get("message"):
            lines.append(f"- {key.replace('_', ' ')}: {a[key]['message']}")
    if (r.get("published") or {}).get("refused"):
        lines.append(f"- published: {r['published']['refused']}")
    calls = a.get("calls_ops")
    if calls is None:
        lines.append("- CUPTI operations did not split into calls: " + ", ".join(
            f"{o['name'][:40]} {o['dur_us']:.1f}" for o in (r.get("cupti") or {}).get("ops", [])[:24]))
    else:
        for i, ops in enumerate(calls):
            lines.append(f"- call {i}: " + "; ".join(f"{o['name'][:50]} {o['dur_us']:.1f} µs" for o in ops))
    return [*lines, ""]


def markdown(doc: dict[str, Any]) -> str:
    """The report: one table row per job (µs), then each job's messages and CUPTI operations per call (pure)."""
    lines = [f"# Timer/CUPTI refusal probe ({doc.get('device', '?')}, {doc.get('date', '?')})", "",
             f"Command: `{doc.get('command', '')}`", "",
             "Times in µs. `timer`: un-profiled trials, overhead subtracted; `CUPTI`: per-call device time of the "
             "CUPTI pass; `events same trials`: the timer's events of the trials CUPTI recorded; `slowdown`: "
             "events same trials / timer - 1 (the profiler's own cost); `old check`: timer vs CUPTI; `same trials "
             "check`: events same trials vs CUPTI, and the timer not above them.", "",
             "| job | launch | method | overhead | timer | CUPTI | events same trials | slowdown | old check | "
             "same trials check | published |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(r) for r in doc.get("jobs", [])]
    lines.append("")
    for r in doc.get("jobs", []):
        if not r.get("error"):
            lines += _ops_lines(r)
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jobs", nargs="*", help="FOLDER[:FILE] or FOLDER:step=TRANSFORM_ID (default: the two refused "
                                            "timings of the H200 short run and a control of each pair)")
    ap.add_argument("--kernel", help="the kernel (default: each folder's pair.json)")
    ap.add_argument("--out", type=Path, required=True, help="folder for probe.json and probe.md")
    ap.add_argument("--trials", type=int, default=100, help="timer trials per job (default 100)")
    ap.add_argument("--calls", type=int, default=10, help="trials of the CUPTI pass (default 10)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the jobs and write the report; 2 without a GPU."""
    args = parse_args(argv)
    jobs = [parse_job(s, args.kernel) for s in (args.jobs or DEFAULT_JOBS)]
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no CUDA device")
    except ImportError as e:
        print(f"probe_timing_refusals: needs torch with a CUDA device ({e})", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(), "date": _dt.datetime.now(_dt.UTC).isoformat(
        timespec="seconds"), "command": " ".join(["python", "bench/probe_timing_refusals.py", *(argv or sys.argv[1:])]),
        "jobs": []}
    for job in jobs:
        row: dict[str, Any] = {"job": job.label}
        try:
            kernel = kernel_of(job)
            row.update(probe_one(source_for(job, kernel, args.out / "work"), kernel, args.trials, args.calls))
            row["analysis"] = analyse(row) if row.get("cupti") else None
        except Exception as e:  # noqa: BLE001 - one job's failure is one line of the report
            row["error"] = f"{type(e).__name__}: {e}"[:400]
        doc["jobs"].append(row)
        print(_row(row) if row.get("analysis") or row.get("error") else row["job"], flush=True)
    (args.out / "probe.json").write_text(json.dumps(doc, indent=1, default=str))
    (args.out / "probe.md").write_text(markdown(doc))
    print(f"wrote {args.out / 'probe.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
