"""Zero-config corpus: profile and verify every kernel of every file in a folder with NO htam.toml.

For each ``.py``/``.cu`` file of ``--corpus`` (default ``tests/fixtures/zeroconf``) it lists the kernels (read
here with the source layer: parsing only, none of the files' code runs in this process) and, for each complete
kernel, runs ``htam verify FILE --kernel K --json`` and then ``htam profile FILE --kernel K --json
--no-counters`` one after the other in one fresh process (``--separate``: a fresh process each), and records whether a measured time came back (GPU) or a static profile (CPU), where
the harness came from, and whether the verifier accepted the kernel (the start checked against its inferred
reference or against itself as the oracle).

Made to end inside a fixed stage limit with whatever it has:

* every command has its own timeout (``--timeout``, default 40 s; a kernel's two commands in one process get
  twice that together); a command past it is killed with its whole process group (workers included) and the
  row says ``timed out``;
* ``--max-seconds`` (default 135) is the budget of the whole run: no command starts that could not finish
  inside it, kernels not reached get a row saying so, and ``zeroconf.md``/``zeroconf.json`` are written with
  what was measured; the exit code is 0;
* each kernel's row is appended to ``rows.jsonl`` (flushed) as soon as it is done, with a progress line on
  stderr; ``--resume`` keeps the finished rows of an earlier ``rows.jsonl`` in ``--out`` and runs the rest;
* the profile is stage 1 of the two-stage profile (the timer; no Nsight Compute counters, ``--no-counters``)
  unless ``--counters`` is given;
* each kernel is verified (which also records its file's ``__main__``/tests once into htam's cache, keyed by
  the file's content) and then profiled, which reads that recording back instead of running the file again
  (the row's ``harness_cached``/``inference_s`` say what the verify found); Python files start first (they
  take longest); ``--jobs`` kernels at a time (default 4 with a GPU, so that the corpus fits a 150 s stage; 1
  without). With more than one job, times were taken while other commands shared the GPU: the table says
  so, and they are indicative only (``--jobs 1`` for clean times);
* the "last message" column is the verifier's last message, or the first line of the command's
  ``htam: error:`` message (:func:`error_line`), never the template printed below it.

    python bench/bench_zeroconf.py --out bench/results/zeroconf-<machine>-<date>

Runs on a CPU machine too (static profiles, the Triton interpreter); on a GPU the same command measures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: seconds kept back from ``--max-seconds`` for writing the tables
_RESERVE_S = 3.0


def _progress(msg: str) -> None:
    print(f"[zeroconf {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _htam(args: list[str], timeout: float) -> tuple[int, str, str, float]:
    """Run ``htam ARGS`` in a fresh process group; ``(exit code, stdout, stderr, seconds)``.

    Past ``timeout`` the whole group is killed (the CLI's worker processes hold the output pipes open: killing
    only the CLI would leave ``communicate`` waiting for them) and the code is 124."""
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "htam_core.cli.main", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True)
    try:
        out, err = p.communicate(timeout=max(1.0, timeout))
        return p.returncode, out, err, time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        return 124, "", f"timed out after {timeout:.0f} s (killed)", time.perf_counter() - t0


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _gpu() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        return out or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def error_line(err: str) -> str:
    """The one-line summary of a command's error output: the first line of the CLI's ``htam: error: ...``
    message (its later lines are a template or details), else the first non-empty line; ``""`` for none."""
    lines = [ln.strip() for ln in err.strip().splitlines() if ln.strip()]
    first = next((ln for ln in lines if ln.startswith("htam: error:")), lines[0] if lines else "")
    first = first.removeprefix("htam: error:").strip()
    if len(first) <= 400:
        return first
    cut = first.rfind(". ", 0, 400)  # end on a whole sentence, not inside a word
    return first[:cut + 1] if cut > 100 else first[:399] + "…"


def pair_child(result: Path, commands: list[list[str]]) -> None:
    """Run several ``htam`` commands (``verify`` then ``profile`` of one kernel) in THIS process, one after
    the other, writing ``[{"rc", "out", "err", "secs"}]`` to ``result`` after each (atomically), so a kill
    keeps the finished ones. One process pays for Python, torch and htam's imports once, and the second
    command reads the harness the first one inferred from htam's cache (``$HTAM_CACHE_DIR``)."""
    import contextlib
    import io

    from htam_core.cli.main import main as htam

    done: list[dict[str, Any]] = []
    for argv in commands:
        t0 = time.perf_counter()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = htam(argv)
            except SystemExit as e:  # argparse's usage errors
                rc = e.code if isinstance(e.code, int) else 2
        done.append({"rc": rc, "out": out.getvalue(), "err": err.getvalue(), "secs": time.perf_counter() - t0})
        tmp = result.with_suffix(".tmp")
        tmp.write_text(json.dumps(done), encoding="utf-8")
        os.replace(tmp, result)


def _htam_pair(commands: list[list[str]], timeout: float) -> list[tuple[int, str, str, float]]:
    """Run ``commands`` in one fresh process (:func:`pair_child`) in its own process group, killed past
    ``timeout``; one ``(exit code, stdout, stderr, seconds)`` per command, 124 for those it did not finish."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="zeroconf-pair-") as tmp:
        res = Path(tmp) / "result.json"
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, __file__, "--pair-child", str(res), json.dumps(commands)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO,
                             start_new_session=True)
        killed = False
        try:
            _, perr = p.communicate(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            killed = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                _, perr = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                perr = ""
        wall = time.perf_counter() - t0
        done = _json(res.read_text(encoding="utf-8")) if res.is_file() else None
    out: list[tuple[int, str, str, float]] = [(d["rc"], d["out"], d["err"], d["secs"]) for d in done or []]
    used = sum(d[3] for d in out)
    for _ in commands[len(out):]:
        why = f"timed out after {timeout:.0f} s (killed)" if killed else (error_line(perr or "") or "the run failed")
        out.append((124 if killed else 70, "", why, max(0.0, wall - used)))
        used = wall
    return out


def list_kernels(corpus: Path) -> list[dict[str, Any]]:
    """``[{"file", "kernel"}]`` for every complete kernel of the corpus's ``.py``/``.cu`` files (tests left
    out), or ``{"file", "kernel": None, "error"}`` for a file without one. Parses only."""
    from htam_core.source import load

    items: list[dict[str, Any]] = []
    for f in sorted(p for p in corpus.iterdir() if p.suffix in (".py", ".cu") and not p.name.startswith("test_")):
        try:
            kernels = [k for k in load(str(f)).kernels if not k.incomplete]
        except Exception as exc:  # noqa: BLE001 - one bad file is one row, never the end of the run
            items.append({"file": f.name, "kernel": None, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        if not kernels:
            items.append({"file": f.name, "kernel": None, "error": "no complete kernel found"})
        items.extend({"file": f.name, "kernel": k.qualified_name or k.name} for k in kernels)
    return items


class Budget:
    """The run's wall-clock budget: :meth:`timeout` is the per-command limit, cut to what is left."""

    def __init__(self, max_seconds: float, per_command: float) -> None:
        self.end = time.monotonic() + max_seconds - _RESERVE_S
        self.per_command = per_command

    def timeout(self, commands: int = 1) -> float | None:
        """Seconds the next ``commands`` commands (run in one process) may take, or ``None`` when the budget
        cannot fit a useful one (< 5 s)."""
        left = self.end - time.monotonic()
        return None if left < 5.0 else min(self.per_command * commands, left)


def _verify_args(corpus: Path, item: dict[str, Any], timeout: float) -> list[str]:
    return ["verify", str(corpus / item["file"]), "--kernel", item["kernel"], "--json", "--timeout", str(int(timeout))]


def _profile_args(corpus: Path, item: dict[str, Any], counters: bool) -> list[str]:
    args = ["profile", str(corpus / item["file"]), "--kernel", item["kernel"], "--json"]
    return args + ([] if counters else ["--no-counters"])


def _verify_row(rc: int, out: str, err: str, secs: float) -> dict[str, Any]:
    ver = _json(out) or {}
    summary = (ver.get("messages") or [""])[-1] if ver else error_line(err)
    inf = ver.get("harness_inference") or {}
    return {"verify_rc": rc, "accepted": rc == 0, "verify_s": round(secs, 2), "verified_on": ver.get("verified_on"),
            "status": ver.get("status") or ("timed out" if rc == 124 else None), "harness": ver.get("harness"),
            "harness_cached": inf.get("cached"), "inference_s": inf.get("seconds"),
            "verify_summary": (summary or f"exit {rc} with no message")[:400]}


def _profile_row(rc: int, out: str, err: str, secs: float) -> dict[str, Any]:
    prof = _json(out) or {}
    tm = prof.get("time_ms")
    return {"profile_rc": rc, "mode": prof.get("mode"), "time_ms": tm.get("median") if isinstance(tm, dict) else None,
            "profile_s": round(secs, 2),
            "profile_error": None if rc == 0 else (error_line(err) or f"exit {rc} with no message")}


_NOT_RUN_V = {"verify_rc": None, "accepted": False, "status": "not run (budget)", "verify_s": 0.0}
_NOT_RUN_P = {"profile_rc": None, "mode": None, "time_ms": None, "profile_s": 0.0, "profile_error": "not run (budget)"}


def _verify(corpus: Path, item: dict[str, Any], budget: Budget) -> dict[str, Any]:
    t = budget.timeout()
    if t is None:
        return dict(_NOT_RUN_V)
    return _verify_row(*_htam(_verify_args(corpus, item, t), t))


def _profile(corpus: Path, item: dict[str, Any], budget: Budget, counters: bool) -> dict[str, Any]:
    t = budget.timeout()
    if t is None:
        return dict(_NOT_RUN_P)
    return _profile_row(*_htam(_profile_args(corpus, item, counters), t))


def _both(corpus: Path, item: dict[str, Any], budget: Budget, counters: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Verify then profile one kernel in one process (:func:`pair_child`), inside twice the per-command limit
    (cut to what is left of the budget)."""
    t = budget.timeout(commands=2)
    if t is None:
        return dict(_NOT_RUN_V), dict(_NOT_RUN_P)
    v, p = _htam_pair([_verify_args(corpus, item, t), _profile_args(corpus, item, counters)], t)
    return _verify_row(*v), _profile_row(*p)


def _key(row: dict[str, Any]) -> tuple[str, str | None]:
    return row["file"], row.get("kernel")


def _done(row: dict[str, Any]) -> bool:
    """A row worth keeping on ``--resume``: both commands ran to an answer (not cut by the budget or a timeout)."""
    if not row.get("kernel"):
        return True
    return row.get("profile_rc") not in (None, 124) and row.get("verify_rc") not in (None, 124)


def run(corpus: Path, out: Path, *, timeout: float, max_seconds: float, jobs: int, counters: bool,
        resume: bool, separate: bool = False) -> list[dict[str, Any]]:
    """Verify, then profile, every complete kernel of ``corpus`` inside ``max_seconds``; one row per kernel,
    appended to ``out/rows.jsonl`` as it is done. Returns the rows in corpus order.

    Both commands of a kernel run in one process (:func:`pair_child`) unless ``separate`` (a fresh process
    each). Python files start first: their commands record the file's ``__main__``/tests and take longest,
    so the shorter CUDA ones fill the jobs at the end instead of leaving a long one running alone."""
    budget = Budget(max_seconds, timeout)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "rows.jsonl"
    kept: dict[tuple[str, str | None], dict[str, Any]] = {}
    if resume and jsonl.is_file():
        for line in jsonl.read_text(encoding="utf-8").splitlines():
            row = _json(line)
            if isinstance(row, dict) and "file" in row and _done(row):
                kept[_key(row)] = row
    items = list_kernels(corpus)
    todo = sorted((it for it in items if it.get("kernel") and _key(it) not in kept),
                  key=lambda it: (not it["file"].endswith(".py"), it["file"]))
    _progress(f"{len(items)} kernels in {len({i['file'] for i in items})} files; {len(kept)} kept from "
              f"{jsonl.name}, {len(todo)} to run; budget {max_seconds:.0f} s, {timeout:.0f} s per command, "
              f"{jobs} kernel(s) at a time")
    with jsonl.open("w", encoding="utf-8") as fh:
        def emit(row: dict[str, Any]) -> None:
            fh.write(json.dumps(row) + "\n")
            fh.flush()

        for row in kept.values():
            emit(row)
        for it in items:
            if not it.get("kernel") and _key(it) not in kept:
                emit(it)
        lock = threading.Lock()

        def one_kernel(it: dict[str, Any]) -> None:
            if separate:
                v = _verify(corpus, it, budget)
                p = _profile(corpus, it, budget, counters)
            else:
                v, p = _both(corpus, it, budget, counters)
            with lock:
                emit({**it, **p, **v})
            t = f"{p['time_ms']:.4f} ms" if p.get("time_ms") else "no time"
            _progress(f"{it['file']}:{it['kernel']}: verify {v['status'] or 'exit ' + str(v['verify_rc'])} "
                      f"({v['verify_s']} s), profile {p['mode'] or p['profile_error']} ({t}, {p['profile_s']} s)")

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one_kernel, todo))
    by_key = {**kept, **{_key(r): r for r in (_json(ln) for ln in jsonl.read_text().splitlines()) if r}}
    return [by_key[_key(it)] for it in items if _key(it) in by_key]


def _markdown(rows: list[dict[str, Any]], device: str, cmd: str, counters: bool, jobs: int = 1) -> str:
    kern = [r for r in rows if r.get("kernel")]
    profiled = sum(1 for r in kern if r.get("profile_rc") == 0)
    timed = sum(1 for r in kern if r.get("time_ms"))
    accepted = sum(1 for r in kern if r.get("accepted"))
    inferred = sum(1 for r in kern if r.get("harness"))
    cut = sum(1 for r in kern if "budget" in str(r.get("status")) or "budget" in str(r.get("profile_error")))
    lines = [f"# Zero-config corpus ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)", "",
             f"Device: {device}. Command: `{cmd}`. No file has an htam.toml: every harness is inferred from the file "
             "(its `__main__`/tests, or the CUDA `main()`), or the kernel is its own oracle. Profiles are "
             + ("full (timer and Nsight Compute counters)." if counters else
                "stage 1 (the timer, no Nsight Compute counters).")
             + (f" {jobs} kernels ran at a time: times were taken while other commands shared the device, so they "
                "are indicative only (`--jobs 1` for clean times)." if jobs > 1 else ""), "",
             f"**{len(kern)} kernels in {len({r['file'] for r in rows})} files: {profiled} profiled "
             f"({timed} with a measured time), {inferred} with a harness, {accepted} verified (accepted)"
             + (f"; {cut} not reached inside the budget" if cut else "") + ".**", "",
             "| file | kernel | profile | time (ms) | harness | verify | last message |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r.get("kernel"):
            lines.append(f"| {r['file']} | — | failed | — | — | — | {r.get('error')} |")
            continue
        prc = r.get("profile_rc")
        prof = (r.get("mode") or "ok") if prc == 0 else (r.get("profile_error") if prc is None
                                                          else f"exit {prc}: {r.get('profile_error')}")
        t = f"{r['time_ms']:.4f}" if r.get("time_ms") else "not measured"
        ver = "accepted" if r.get("accepted") else f"{r.get('status') or 'exit'} ({r.get('verify_rc')})"
        cells = [r["file"], r["kernel"], prof, t, r.get("harness") or "none", ver, r.get("verify_summary") or ""]
        lines.append("| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; exit 0 when the tables were written (also when the budget cut the run short)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=REPO / "tests" / "fixtures" / "zeroconf")
    ap.add_argument("--out", type=Path, required=True, help="folder for rows.jsonl, zeroconf.json and zeroconf.md")
    ap.add_argument("--timeout", type=float, default=40.0, help="seconds per htam command (default 40)")
    ap.add_argument("--max-seconds", type=float, default=135.0,
                    help="budget of the whole run; then the tables are written with what was done (default 135)")
    ap.add_argument("--jobs", type=int, default=None, help="kernels at a time (default 4 with a GPU, 1 without)")
    ap.add_argument("--counters", action="store_true", help="full profiles (wait for Nsight Compute's counters)")
    ap.add_argument("--resume", action="store_true", help="keep the finished rows of OUT/rows.jsonl")
    ap.add_argument("--separate", action="store_true",
                    help="run verify and profile in a fresh process each (default: one process per kernel)")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"bench_zeroconf: no corpus folder {args.corpus}", file=sys.stderr)
        return 2
    cmd = "python bench/bench_zeroconf.py " + " ".join(sys.argv[1:] if argv is None else argv)
    gpu = _gpu()
    device = gpu or f"no GPU ({platform.node()})"
    jobs = args.jobs if args.jobs is not None else (4 if gpu else 1)
    rows = run(args.corpus, args.out, timeout=args.timeout, max_seconds=args.max_seconds, jobs=jobs,
               counters=args.counters, resume=args.resume, separate=args.separate)
    (args.out / "zeroconf.json").write_text(json.dumps({"device": device, "command": cmd, "rows": rows}, indent=1))
    md = _markdown(rows, device, cmd, args.counters, jobs)
    (args.out / "zeroconf.md").write_text(md, encoding="utf-8")
    print(md, flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--pair-child":
        pair_child(Path(sys.argv[2]), json.loads(sys.argv[3]))
        raise SystemExit(0)
    raise SystemExit(main())
