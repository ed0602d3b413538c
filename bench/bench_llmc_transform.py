"""One mechanical transform on one llm.c file's naive start, beside the llm.c authors' versions: is it made, does
it build, and (on a GPU) is it correct and how fast, against the naive start and the experts.

A cheaper, narrower check than ``bench/bench_llmc.py``'s optimize loop: no ranking, no search; every candidate of
the transform (``--transform``, default ``cuda.smem_panel_tiling``) on the naive work copy of ``--file`` (default
``trimat_forward``) is written beside it and run on the naive version's inferred harness, checked against the naive
version (its oracle). The llm.c folder is third-party and read where it is (``--llmc``); it is never copied into
the project, and the script skips cleanly when it is absent.

* **static** (no GPU, or ``--static``): each candidate's description and whether its harness builds with nvcc
  (:func:`htam_core.bench.llmc.build_status`, a cuBLAS stub when the toolkit has none);
* **GPU**: the naive start, each candidate and every expert verified and timed with the project's one timer
  (:func:`htam_core.measure.gpu.measure_harness` in its GPU worker), with candidate/expert speed.

Records stream to ``<out>/llmc-transform-<mode>-<date>.jsonl`` with one progress line each (flushed); the run
stops cleanly, records so far kept, once ``--max-seconds`` is spent.

Usage::

    python bench/bench_llmc_transform.py --static --max-seconds 120
    python bench/bench_llmc_transform.py --max-seconds 240 --trials 20       # on a GPU
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_llmc import _expert_ms, _naive_block, _setup_static_build  # noqa: E402
from bench.data_paths import DEFAULTS  # noqa: E402
from htam_core.bench import llmc  # noqa: E402


def _log(msg: str) -> None:
    print(msg, flush=True)


def _emit(path: Path, rec: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def candidates(entry: llmc.LlmcEntry, transform: str, work: Path) -> tuple[Any, list[Any], str | None]:
    """``(naive BuiltHarness, [(candidate, BuiltHarness)], refusal)`` for ``transform`` on the naive work copy:
    each candidate written to ``work/<file>/<transform>-<n>/`` with the naive harness pointed at it (its oracle the
    naive work copy)."""
    from htam_core.source.api import parse_text
    from htam_core.transforms.base import NotApplicable
    from htam_core.transforms.registry import propose

    n = entry.naive
    assert n is not None
    built = llmc.build_harness(entry, n, work, block_size=_naive_block(entry))
    if built.harness is None:
        return built, [], f"no harness for the naive start: {built.reason}"
    text = built.work_file.read_text(encoding="utf-8")
    model = parse_text(text, "cuda", str(built.work_file))
    res = propose(transform, model, model.kernel(n.kernels[0]))
    if isinstance(res, NotApplicable):
        return built, [], res.reason
    out = []
    for i, c in enumerate(res):
        d = built.work_file.parent.parent / f"{transform}-{i}"
        d.mkdir(parents=True, exist_ok=True)
        f = d / built.work_file.name
        f.write_text(c.new_text, encoding="utf-8")
        h = dataclasses.replace(built.harness, path=str(f), origin_path=str(f), oracle_path=built.harness.path,
                                oracle_launcher=built.harness.launcher)
        out.append((c, llmc.BuiltHarness(entry.name, n.number, n.kernels[0], f, h)))
    return built, out, None


def _time(h: Any, trials: int, left: float) -> dict[str, Any]:
    """Verify (against the harness's oracle) and time ``h`` in the GPU worker: ``{"ms", "correct", "note"}``."""
    from htam_core.runtime.worker import run_in_worker

    r = run_in_worker("htam_core.measure.gpu:measure_harness", {"harness": h.to_json(), "trials": trials,
                                                                 "verify": True},
                      timeout_s=max(5.0, min(600.0, left)), pool_key="gpu0", interpret=False, gpu_index=0)
    if not r.ok:
        return {"ms": None, "correct": None, "note": f"{r.error.kind}: {r.error.message}"[:300] if r.error else "?"}
    times = [s["time"].get("median") for s in r.value["sets"] if not s["time"].get("refused")]
    corr = r.value.get("correctness") or {}
    return {"ms": min([t for t in times if t], default=None), "correct": corr.get("correct"),
            "note": "; ".join(corr.get("messages") or [])[:300] or None}


def main(argv: list[str] | None = None) -> int:
    """Run the bench (see the module docstring); exit 0 also when the llm.c folder is absent (skipped)."""
    from htam_core.profile.api import gpu_available

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llmc", default=str(DEFAULTS["llmc"]), help="llm.c's dev/cuda folder")
    ap.add_argument("--file", default="trimat_forward", help="the llm.c file (stem)")
    ap.add_argument("--transform", default="cuda.smem_panel_tiling")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--work", default=None, help="work copies (default: a temporary folder)")
    ap.add_argument("--static", action="store_true", help="static mode even with a GPU")
    ap.add_argument("--max-seconds", type=float, default=300.0, help="stop cleanly after this long")
    ap.add_argument("--trials", type=int, default=20)
    args = ap.parse_args(argv)
    deadline = time.time() + args.max_seconds
    root = Path(args.llmc)
    if not root.is_dir():
        _log(f"[llmc-transform] skipped: no llm.c folder at {root}; pass --llmc PATH")
        return 0
    entry = next((e for e in llmc.discover(root) if e.name == args.file), None)
    if entry is None or entry.naive is None:
        _log(f"[llmc-transform] {args.file}: not found in {root}, or no naive version")
        return 1
    mode = "static" if args.static or not gpu_available() else "gpu"
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="htam-llmc-transform-"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"llmc-transform-{mode}-{_dt.date.today().isoformat()}.jsonl"
    if mode == "static":
        _log(f"[llmc-transform] {_setup_static_build(work)}")
    base = {"file": entry.name, "transform": args.transform, "mode": mode, "command": " ".join(sys.argv)}
    built, cands, refusal = candidates(entry, args.transform, work)
    _emit(path, {**base, "what": "transform", "candidates": len(cands), "refusal": refusal})
    _log(f"[llmc-transform] {entry.name}: {len(cands)} candidate(s) of {args.transform}"
         + (f"; refused: {refusal}" if refusal else ""))
    naive_ms = None
    if mode == "gpu" and built.harness is not None:
        rec = _time(built.harness, args.trials, deadline - time.time())
        naive_ms = rec["ms"]
        _emit(path, {**base, "what": "naive", **rec})
        _log(f"[llmc-transform] naive: {rec['ms']} ms")
    for i, (c, b) in enumerate(cands):
        if time.time() >= deadline:
            _log("[llmc-transform] time budget spent; stopping")
            break
        rec: dict[str, Any] = {**base, "what": "candidate", "index": i, "description": c.description,
                               "params": c.params}
        if mode == "static":
            rec["build"] = llmc.build_status(b)
            _log(f"[llmc-transform] candidate {i} ({c.params}): builds {rec['build']['ok']}")
        else:
            rec.update(_time(b.harness, args.trials, deadline - time.time()))
            rec["speedup"] = naive_ms / rec["ms"] if naive_ms and rec["ms"] else None
            _log(f"[llmc-transform] candidate {i}: {rec['ms']} ms, correct {rec['correct']}, "
                 f"speedup {rec['speedup']}")
        _emit(path, rec)
    if mode == "gpu" and built.harness is not None and time.time() < deadline:
        for e in _expert_ms(entry, built.harness, work, args.trials, deadline):
            _emit(path, {**base, "what": "expert", **e})
            _log(f"[llmc-transform] expert v{e['version']}: {e['ms']} ms ({e['note'] or 'verified'})")
    _log(f"[llmc-transform] wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
