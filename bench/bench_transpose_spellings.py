"""The padded transpose tile on every spelling of the naive transpose, timed on the GPU beside its start.

For each spelling under ``tests/fixtures/spellings/transpose_tile/`` that has a host launcher
(``launch_transpose(in, out, rows, cols)``), the start and each candidate of ``cuda.transpose_smem_tile`` are built
with nvcc into a shared library with a timing entry (CUDA events around ``--reps`` calls of the launcher, after
warm-up calls), run on one non-square matrix whose sides are not multiples of 32 (default 8191 x 4097), checked
against the start's output (bit-exact: a transpose only moves values) and timed. Also timed: a copy of the same
bytes (``cudaMemcpy`` device to device), the bandwidth ceiling a transpose can approach.

Writes ``<out>/transpose_spellings.json`` (one record per start and candidate, with the device, the date and the
command) and ``<out>/transpose_spellings.md`` (the table)::

    python bench/bench_transpose_spellings.py --out bench/results/transpose-spellings     # on a GPU machine

Needs torch with a CUDA device and nvcc; without them it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from htam_core.source import load  # noqa: E402
from htam_core.transforms import registry  # noqa: E402

FOLDER = REPO / "tests" / "fixtures" / "spellings" / "transpose_tile"

ENTRY = """
extern "C" float htam_time(float *in, float *out, int rows, int cols, int reps) {
    for (int i = 0; i < 3; ++i) launch_transpose(in, out, rows, cols);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    cudaEventRecord(a);
    for (int i = 0; i < reps; ++i) launch_transpose(in, out, rows, cols);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms = 0; cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a); cudaEventDestroy(b);
    return cudaGetLastError() == cudaSuccess ? ms / reps : -1.0f;
}
"""


def build(text: str, tmp: Path) -> ctypes.CDLL:
    """``text`` plus the timing entry, built with ``nvcc -O3 -arch=native`` into a shared library and loaded."""
    full = text + ENTRY
    key = hashlib.sha256(full.encode()).hexdigest()[:16]
    src, lib = tmp / f"t-{key}.cu", tmp / f"t-{key}.so"
    src.write_text(full)
    p = subprocess.run(["nvcc", "-O3", "-arch=native", "-shared", "-Xcompiler", "-fPIC", str(src), "-o", str(lib)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    fn = ctypes.CDLL(str(lib)).htam_time
    fn.restype = ctypes.c_float
    return fn


def main(argv: list[str] | None = None) -> int:
    """Time every spelling's start and candidates; write the JSON and the Markdown table; 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8191)
    ap.add_argument("--cols", type=int, default=4097)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--out", default="bench/results/transpose-spellings")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or shutil.which("nvcc") is None:
        print("needs a CUDA device and nvcc", file=sys.stderr)
        return 2
    meta = json.loads((FOLDER / "step.json").read_text())
    n = args.rows * args.cols
    x = torch.randn(n, device="cuda")
    copy = torch.empty_like(x)
    for _ in range(3):
        copy.copy_(x)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(args.reps):
        copy.copy_(x)
    b.record()
    torch.cuda.synchronize()
    copy_ms = a.elapsed_time(b) / args.reps
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        for name, sp in sorted(meta["spellings"].items()):
            if sp.get("host") != "launch_transpose":
                continue
            path = FOLDER / name
            model = load(str(path))
            cands = registry.propose(meta["strategy"], model, model.kernel(sp["kernel"]))
            versions = [("start", path.read_text())]
            if isinstance(cands, list):
                versions += [(c.description, c.new_text) for c in cands]
            ref = None
            start_ms = None
            for label, text in versions:
                out = torch.zeros(n, device="cuda")
                rec = {"spelling": name, "version": label, "ms": None, "matches_start": None, "error": ""}
                try:
                    fn = build(text, tmp)
                    ms = fn(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(out.data_ptr()), args.rows, args.cols,
                            args.reps)
                    torch.cuda.synchronize()
                    rec["ms"] = ms if ms >= 0 else None
                except RuntimeError as e:
                    rec["error"] = str(e).splitlines()[-1] if str(e) else "build failed"
                if label == "start":
                    ref, start_ms = out.clone(), rec["ms"]
                elif ref is not None:
                    rec["matches_start"] = bool(torch.equal(ref, out))
                rec["speedup"] = (start_ms / rec["ms"]) if start_ms and rec["ms"] else None
                rec["of_copy"] = (copy_ms / rec["ms"]) if rec["ms"] else None
                rows.append(rec)
                print(json.dumps(rec), flush=True)
    device = torch.cuda.get_device_name(0)
    date = _dt.date.today().isoformat()
    command = "python bench/bench_transpose_spellings.py " + " ".join(argv if argv is not None else sys.argv[1:])
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "transpose_spellings.json").write_text(json.dumps(
        {"device": device, "date": date, "command": command.strip(), "rows": args.rows, "cols": args.cols,
         "copy_ms": copy_ms, "records": rows}, indent=1) + "\n")
    md = ["# The padded transpose tile on every spelling", "",
          f"Device: {device}. Date: {date}. Command: `{command.strip()}`. Matrix {args.rows} x {args.cols} fp32; "
          f"a device-to-device copy of the same bytes takes {copy_ms:.4f} ms.", "",
          "| spelling | version | ms | × start | of copy bandwidth | matches start |", "|---|---|---|---|---|---|"]
    for r in rows:
        ms = f"{r['ms']:.4f}" if r["ms"] else f"– {r['error']}"
        sx = f"{r['speedup']:.2f}" if r["speedup"] else "–"
        oc = f"{r['of_copy']:.2f}" if r["of_copy"] else "–"
        ok = "–" if r["matches_start"] is None else ("✓" if r["matches_start"] else "✗")
        md.append(f"| {r['spelling']} | {r['version'][:90]} | {ms} | {sx} | {oc} | {ok} |")
    (outdir / "transpose_spellings.md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
