"""The sample-project look-alikes (``tests/fixtures/sample_projects``) tried as a new user would, on the CPU.

Per look-alike (the reduction's ``reduce0``, the transpose's ``transposeNaive``): the top 5 of
``htam suggest --top 5 --static`` on a cold memory, the textbook steps that are makeable (offered, and the edit
compiles with ``nvcc -arch=sm_90`` and the workspace's ``Common/`` as ``-I``;
:func:`bench.bench_textbook.static_facts`), the offered steps the output contract rules out, and the zero-config
harness ``htam optimize`` finds (:func:`bench.bench_textbook.harness_build`). Writes ``table.json`` and ``table.md``.

    python bench/bench_sample_lookalikes.py --out bench/results/sample-lookalikes-static-2026-12-05
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_textbook import harness_build, static_facts  # noqa: E402
from htam_core.memory import Ranker, load_knowledge, open_store, state_from_profile  # noqa: E402
from htam_core.profile.api import profile_kernel  # noqa: E402
from htam_core.source import load  # noqa: E402

ROOT = REPO / "tests" / "fixtures" / "sample_projects"
#: (workspace, kernel file, naive kernel, textbook steps). Idea source: M. Harris, "Optimizing Parallel Reduction in
#: CUDA" (2007); M. Harris, "An Efficient Matrix Transpose in CUDA C/C++" (NVIDIA blog, 2013).
CASES = (
    ("reduction", "Samples/reduction/reduction_kernel.cu", "reduce0",
     ("sequential_addressing", "warp_shuffle_reduction", "thread_coarsening")),
    ("transpose", "Samples/transpose/transpose.cu", "transposeNaive", ("transpose_smem_tile",)),
)


def top5(path: Path, kernel: str, store_path: Path) -> list[str]:
    """Strategy ids of ``htam suggest --top 5 --static`` for ``kernel`` on an empty memory at ``store_path``."""
    kb = load_knowledge()
    model = load(str(path))
    k = model.kernel(kernel)
    profile = profile_kernel(str(path), kernel, static=True)
    with open_store(store_path, kb=kb) as store:
        steps = Ranker(kb, store).rank(state_from_profile(profile), [], k.features, k.language, profile, top=5,
                                       kernel=k, model=model)
    return [s.strategy for s in steps]


def row(name: str, rel: str, kernel: str, steps: tuple[str, ...], work: Path) -> dict[str, Any]:
    """One look-alike's row (see the module docstring)."""
    path = ROOT / name / rel
    (work / "cache").mkdir(exist_ok=True)
    out: dict[str, Any] = {"sample": name, "kernel": kernel, "textbook": list(steps)}
    out["top5"] = top5(path, kernel, work / f"{name}.sqlite3")
    out.update(static_facts(path, kernel, steps, work, work / "cache", True, includes=(ROOT / name / "Common",)))
    h = harness_build(path, kernel, REPO)
    h["harness_notes"] = [n.replace("CORPUS/", "") for n in h.get("harness_notes", [])]  # paths from the repository
    out.update(h)
    return out


def markdown(meta: dict[str, str], rows: list[dict[str, Any]]) -> str:
    """The results table."""
    lines = [f"# Sample-project look-alikes ({meta['mode']})", "", f"- date: {meta['date']}",
             f"- device: {meta['device']}", f"- command: `{meta['command']}`", "",
             "| sample | kernel | top 5 (cold memory) | textbook step in top 5 | textbook steps makeable (edit compiles) "
             "| refused textbook steps | ruled out by the output contract | zero-config harness |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        in_top = sorted(set(r["textbook"]) & set(r["top5"]))
        refused = "; ".join(f"{k}: {v}" for k, v in r["textbook_refused"].items()) or "none"
        harness = r.get("harness") or r.get("harness_error", "")
        lines.append(f"| {r['sample']} | {r['kernel']} | {', '.join(r['top5'])} | {', '.join(in_top) or 'no'} | "
                     f"{', '.join(r['textbook_makeable']) or 'none'} | {refused.replace('|', '/')} | "
                     f"{', '.join(r['contract_ruled_out']) or 'none'} | {harness.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run both look-alikes; write ``table.json`` and ``table.md`` under ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    meta = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "device": "CPU only (no GPU)", "machine": platform.node() or "unknown", "mode": "static",
            "command": "python bench/bench_sample_lookalikes.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    with tempfile.TemporaryDirectory(prefix="htam-lookalikes-") as tmp:
        rows = [row(*case, Path(tmp)) for case in CASES]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (args.out / "table.md").write_text(markdown(meta, rows))
    print(markdown(meta, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
