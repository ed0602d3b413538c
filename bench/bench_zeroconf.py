"""Zero-config corpus: profile and verify every kernel of every file in a folder with NO htam.toml.

For each ``.py``/``.cu`` file of ``--corpus`` (default ``tests/fixtures/zeroconf``) it lists the kernels
(``htam kernels --json``) and, for each complete kernel, runs ``htam profile FILE --kernel K --json`` and
``htam verify FILE --kernel K --json`` in a fresh process each, and records: whether a measured time came back
(GPU) or a static profile (CPU), where the harness came from, and whether the verifier accepted the kernel (the
start checked against its inferred reference or against itself as the oracle). Writes ``zeroconf.json`` and
``zeroconf.md`` (device, date, command) to ``--out``.

    python bench/bench_zeroconf.py --out bench/results/zeroconf-<machine>-<date>

Runs on a CPU machine too (static profiles, the Triton interpreter); on a GPU the same command measures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _htam(*args: str, timeout: float) -> tuple[int, str, str, float]:
    """Run ``htam ARGS`` in a fresh process; ``(exit code, stdout, stderr, seconds)``."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "htam_core.cli.main", *args], capture_output=True, text=True,
                           timeout=timeout, cwd=REPO)
        return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout:.0f} s", time.perf_counter() - t0


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _device() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        return out or f"no GPU ({platform.node()})"
    except (OSError, subprocess.TimeoutExpired):
        return f"no GPU ({platform.node()})"


def _last_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def run(corpus: Path, timeout: float) -> list[dict[str, Any]]:
    """Profile and verify every complete kernel in ``corpus``; one row per kernel."""
    rows: list[dict[str, Any]] = []
    files = sorted(p for p in corpus.iterdir() if p.suffix in (".py", ".cu") and not p.name.startswith("test_"))
    for f in files:
        rc, out, err, _ = _htam("kernels", str(f), "--json", timeout=timeout)
        kernels = [k for k in (_json(out) or []) if not k.get("incomplete")]
        if rc != 0 or not kernels:
            rows.append({"file": f.name, "kernel": None, "error": _last_line(err) or "no kernel found"})
            continue
        for k in kernels:
            name = k.get("qualified_name") or k["name"]
            prc, pout, perr, pt = _htam("profile", str(f), "--kernel", name, "--json", timeout=timeout)
            prof = _json(pout) or {}
            vrc, vout, verr, vt = _htam("verify", str(f), "--kernel", name, "--json", timeout=timeout)
            ver = _json(vout) or {}
            time_ms = (prof.get("time_ms") or {}).get("median") if isinstance(prof.get("time_ms"), dict) else None
            rows.append({
                "file": f.name, "kernel": name, "profile_rc": prc, "mode": prof.get("mode"),
                "time_ms": time_ms, "profile_s": round(pt, 2), "profile_error": None if prc == 0 else _last_line(perr),
                "verify_rc": vrc, "accepted": vrc == 0, "verify_s": round(vt, 2),
                "verified_on": ver.get("verified_on"), "status": ver.get("status"), "harness": ver.get("harness"),
                "verify_summary": ((ver.get("messages") or [""])[-1] if ver else _last_line(verr))[:300],
            })
    return rows


def _markdown(rows: list[dict[str, Any]], device: str, cmd: str) -> str:
    kern = [r for r in rows if r.get("kernel")]
    profiled = sum(1 for r in kern if r["profile_rc"] == 0)
    timed = sum(1 for r in kern if r.get("time_ms"))
    accepted = sum(1 for r in kern if r["accepted"])
    inferred = sum(1 for r in kern if r.get("harness"))
    lines = [f"# Zero-config corpus ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)", "",
             f"Device: {device}. Command: `{cmd}`. No file has an htam.toml: every harness is inferred from the file "
             "(its `__main__`/tests, or the CUDA `main()`), or the kernel is its own oracle.", "",
             f"**{len(kern)} kernels in {len({r['file'] for r in rows})} files: {profiled} profiled "
             f"({timed} with a measured time), {inferred} with a harness, {accepted} verified (accepted).**", "",
             "| file | kernel | profile | time (ms) | harness | verify | last message |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r.get("kernel"):
            lines.append(f"| {r['file']} | — | failed | — | — | — | {r['error']} |")
            continue
        prof = (r.get("mode") or "ok") if r["profile_rc"] == 0 else f"exit {r['profile_rc']}: {r['profile_error']}"
        t = f"{r['time_ms']:.4f}" if r.get("time_ms") else "not measured"
        ver = "accepted" if r["accepted"] else f"{r.get('status') or 'exit'} ({r['verify_rc']})"
        cells = [r["file"], r["kernel"], prof, t, r.get("harness") or "none", ver, r["verify_summary"]]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    """CLI entry point; exit 0 when the table was written."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=REPO / "tests" / "fixtures" / "zeroconf")
    ap.add_argument("--out", type=Path, required=True, help="folder for zeroconf.json and zeroconf.md")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per htam command (default 180)")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        print(f"bench_zeroconf: no corpus folder {args.corpus}", file=sys.stderr)
        return 2
    cmd = "python bench/bench_zeroconf.py " + " ".join(sys.argv[1:])
    device = _device()
    rows = run(args.corpus, args.timeout)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "zeroconf.json").write_text(json.dumps({"device": device, "command": cmd, "rows": rows}, indent=1))
    md = _markdown(rows, device, cmd)
    (args.out / "zeroconf.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
