"""Start-up cost: what ``htam kernels FILE`` and the language server's ``initialize`` import, and how long they take.

Two scenarios, each run in fresh processes of this checkout (``PYTHONPATH`` points at it; ``htam_server`` is
linked to its ``server/`` folder through a temporary folder, so the checkout's server is measured, not an
installed one):

* ``kernels``: ``python -X importtime -m htam_core.cli.main kernels examples/vector_add.py``, to the exit;
* ``initialize``: ``python -X importtime -m htam_core.cli.main serve`` (stdio), one LSP ``initialize`` request
  sent as the process starts, the reply awaited, then ``shutdown`` and ``exit``: every import made before the
  server could answer, and those the ``initialize`` handler makes.

Python's ``-X importtime`` writes one line per imported module (self and cumulative microseconds, nesting by
indent; https://docs.python.org/3/using/cmdline.html#cmdoption-X). Reported per scenario: the total import time
(the sum of every module's own time), the number of modules, the top-level imports with the largest cumulative
time, which heavy optional packages were loaded (torch, openai, httpx, matplotlib, dask, ...), and the median
wall time over ``--repeats`` runs without ``-X importtime`` (``kernels``: start to exit; ``initialize``: start to
the ``initialize`` reply). Import times are of one run and vary with the machine's load; the wall medians are
the figures to compare.

Run:  python bench/bench_importtime.py [--repeats 5] [--top 15] [--out bench/results/importtime-DATE/after]
Writes ``OUT.json`` and ``OUT.md`` when ``--out`` is given; prints the markdown either way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: optional packages whose import costs seconds or pulls in a large tree; a listing never needs them
HEAVY = ("torch", "openai", "httpx", "httpx2", "matplotlib", "dask", "distributed", "triton", "scipy", "sympy",
         "numpy", "pygls", "lsprotocol", "cattrs")
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)")


def parse_importtime(stderr: str) -> list[dict[str, Any]]:
    """The ``-X importtime`` lines of ``stderr`` as ``{"module", "self_us", "cumulative_us", "level"}`` rows.

    ``level`` is the nesting depth (0 for a module imported by the program itself, not by another import).
    Other lines (the program's own messages) are ignored.
    """
    rows = []
    for ln in stderr.splitlines():
        m = _LINE.match(ln)
        if m:
            rows.append({"module": m.group(4), "self_us": int(m.group(1)), "cumulative_us": int(m.group(2)),
                         "level": len(m.group(3)) // 2})
    return rows


def summarize_imports(rows: list[dict[str, Any]], top: int) -> dict[str, Any]:
    """Total import time (ms), module count, the ``top`` level-0 imports by cumulative time and the heavy
    packages among the modules (by top-level package name)."""
    loaded = {r["module"].split(".")[0] for r in rows}
    first = sorted((r for r in rows if r["level"] == 0), key=lambda r: -r["cumulative_us"])[:top]
    return {"total_import_ms": round(sum(r["self_us"] for r in rows) / 1000, 1), "modules": len(rows),
            "top_cumulative": [{"module": r["module"], "cumulative_ms": round(r["cumulative_us"] / 1000, 1)}
                               for r in first],
            "heavy_loaded": [h for h in HEAVY if h in loaded]}


def _env(shim: Path) -> dict[str, str]:
    """This checkout first on the path, with ``htam_server`` resolving to its ``server/`` folder."""
    link = shim / "htam_server"
    if not link.exists():
        link.symlink_to(REPO / "server", target_is_directory=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(shim), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    return env


def _frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode("utf-8")
    return f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body


def _read_message(stream: Any) -> dict[str, Any]:
    """One LSP message from a binary stream (``Content-Length`` framing)."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError("the server closed its output before replying")
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.lower() == "content-length":
            length = int(value)
    if length is None:
        raise RuntimeError("an LSP message without Content-Length")
    return json.loads(stream.read(length))


def run_kernels(env: dict[str, str], importtime: bool) -> tuple[float, str]:
    """One ``htam kernels examples/vector_add.py`` process: (wall seconds, stderr)."""
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "htam_core.cli.main", "kernels",
           "examples/vector_add.py"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"htam kernels exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return wall, p.stderr


def run_initialize(env: dict[str, str], importtime: bool) -> tuple[float, str]:
    """One ``htam serve`` process: (seconds from start to the ``initialize`` reply, stderr to its exit)."""
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "htam_core.cli.main", "serve"]
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        assert p.stdin is not None and p.stdout is not None
        try:
            p.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": {"processId": os.getpid(), "rootUri": None, "capabilities": {}}}))
            p.stdin.flush()
            while True:
                msg = _read_message(p.stdout)
                if msg.get("id") == 1:
                    break
            wall = time.perf_counter() - t0
            if "result" not in msg:
                raise RuntimeError(f"initialize failed: {msg.get('error')}")
            p.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            p.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            p.stdin.flush()
            while _read_message(p.stdout).get("id") != 2:
                pass
            p.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
            p.stdin.close()
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        err.seek(0)
        return wall, err.read().decode("utf-8", "replace")


SCENARIOS = {"kernels": run_kernels, "initialize": run_initialize}


def measure(repeats: int, top: int) -> dict[str, Any]:
    """Both scenarios: one ``-X importtime`` run each, then ``repeats`` timed runs each."""
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
                           "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "repeats": repeats,
                           "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
                           "command": "python " + " ".join(sys.argv), "scenarios": {}}
    with tempfile.TemporaryDirectory() as shim:
        env = _env(Path(shim))
        for name, run in SCENARIOS.items():
            run(env, False)  # warm the file-system cache and the byte-code cache once
            _, stderr = run(env, True)
            walls = [run(env, False)[0] for _ in range(repeats)]
            out["scenarios"][name] = {**summarize_imports(parse_importtime(stderr), top),
                                      "wall_median_s": round(statistics.median(walls), 3),
                                      "wall_s": [round(w, 3) for w in walls]}
    return out


def markdown(doc: dict[str, Any]) -> str:
    """A short report of :func:`measure`'s document."""
    lines = [f"# Start-up imports ({doc['date']})", "",
             f"Python {doc['python']} on {doc['machine']} (CPU, load average {doc['load_average']}); "
             f"command: `{doc['command']}`.", "",
             "| scenario | wall median (s) | total import (ms) | modules | heavy packages loaded |",
             "|---|---|---|---|---|"]
    for name, s in doc["scenarios"].items():
        lines.append(f"| {name} | {s['wall_median_s']} | {s['total_import_ms']} | {s['modules']} | "
                     f"{', '.join(s['heavy_loaded']) or 'none'} |")
    for name, s in doc["scenarios"].items():
        lines += ["", f"## {name}: top-level imports by cumulative time", "", "| module | cumulative (ms) |",
                  "|---|---|"]
        lines += [f"| `{r['module']}` | {r['cumulative_ms']} |" for r in s["top_cumulative"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    """Measure, print the markdown, and write ``OUT.json``/``OUT.md`` when ``--out`` is given."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per scenario (median reported)")
    ap.add_argument("--top", type=int, default=15, help="top-level imports listed per scenario")
    ap.add_argument("--out", type=Path, default=None, help="write OUT.json and OUT.md")
    args = ap.parse_args()
    try:
        doc = measure(max(1, args.repeats), args.top)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"bench_importtime: {exc}", file=sys.stderr)
        return 1
    md = markdown(doc)
    print(md, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
