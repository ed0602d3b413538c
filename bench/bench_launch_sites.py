"""Launch sites anywhere, on a corpus of kernels written elsewhere: how many kernels with no launch in their own file
have their launch found in another file of the workspace, and which launch steps are then made over both files.

For every complete kernel of every ``.cu``/``.cuh``/``.py`` file under ``--corpus`` whose own file holds no launch
of it, the workspace launch index (:func:`htam_core.source.workspace.find_launches`) is asked for its launches, and
the launch steps are proposed through the transforms registry (CUDA: ``cuda.block_size``, ``cuda.grid_stride``,
``cuda.vectorize_float4``; Triton: ``triton.block_size``): made with the launcher edited too, made in the
launch-independent form (correct for any grid), or refused. CPU only; the corpus is read by path and never copied.

Writes ``launch_sites.json`` (one row per kernel) and ``README.md`` (the counts, the date and the command) into
``--out``.

Usage: ``python bench/bench_launch_sites.py [--corpus DIR] [--out DIR]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.data_paths import CORPUS  # noqa: E402
from htam_core.source import load  # noqa: E402
from htam_core.source.errors import SourceError  # noqa: E402
from htam_core.source.workspace import find_launches  # noqa: E402
from htam_core.transforms import registry  # noqa: E402

#: the launch steps tried, per kernel language
STEPS = {"cuda": ("cuda.block_size", "cuda.grid_stride", "cuda.vectorize_float4"), "triton": ("triton.block_size",)}


def _outcome(res: object) -> str:
    """``"both files"``, ``"launch-independent"``, ``"own file"`` or ``"refused"`` for one propose result."""
    if not isinstance(res, list):
        return "refused"
    c = res[0]
    if c.file_edits:
        return "both files"
    return "launch-independent" if c.params.get("launch") == "independent" else "own file"


def scan(corpus: Path) -> list[dict[str, object]]:
    """One row per complete kernel with no launch in its own file, in file order."""
    rows: list[dict[str, object]] = []
    files = sorted(p for ext in ("*.cu", "*.cuh", "*.py") for p in corpus.rglob(ext))
    for path in files:
        try:
            model = load(path)
        except (SourceError, OSError, UnicodeDecodeError):
            continue
        for k in model.kernels:
            if k.incomplete or k.launch_sites or k.language not in STEPS:
                continue
            launches = find_launches(model, k)
            steps = {tid: _outcome(registry.propose(tid, model, k)) for tid in STEPS[k.language]}
            rows.append({"file": str(path.relative_to(corpus)), "kernel": k.name, "language": k.language,
                         "launches": [{**la.to_json(), "path": str(Path(la.path).relative_to(corpus.resolve()))}
                                      for la in launches], "steps": steps})
    return rows


def table(rows: list[dict[str, object]]) -> str:
    """The markdown summary: kernels, launches found by kind, and per step how it was made."""
    found = [r for r in rows if r["launches"]]
    kinds = Counter(la["style"] for r in rows for la in r["launches"])  # type: ignore[index,union-attr]
    lines = ["| kernels with no launch in their file | launch found elsewhere | launches by kind |", "|---|---|---|",
             f"| {len(rows)} | {len(found)} | {', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))} |", "",
             "| step | kernels tried | both files edited | launch-independent | own file only | refused |",
             "|---|---|---|---|---|---|"]
    for tid in sorted({t for r in rows for t in r["steps"]}):  # type: ignore[union-attr]
        got = Counter(r["steps"][tid] for r in rows if tid in r["steps"])  # type: ignore[index,operator]
        lines.append(f"| `{tid}` | {sum(got.values())} | {got['both files']} | {got['launch-independent']} | "
                     f"{got['own file']} | {got['refused']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Scan the corpus and write the results; exit 0, or 2 when the corpus folder is absent."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS / "public", help="folder of kernels written elsewhere")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / f"{time.strftime('%Y-%m-%d')}-launch-sites")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: pass --corpus DIR", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    rows = scan(args.corpus)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "launch_sites.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    md = (f"# Launch sites anywhere: `{args.corpus.name}` corpus\n\nDevice: CPU only (no GPU needed). Date: "
          f"{time.strftime('%Y-%m-%d')}. Command: `python bench/bench_launch_sites.py --corpus "
          f"<corpus>/{args.corpus.name}` ({time.monotonic() - t0:.0f} s).\n\n{table(rows)}\n\n"
          "Rows per kernel (its launches with file, line, kind, grid, block, known values; each step's outcome): "
          "`launch_sites.json`.\n")
    (args.out / "README.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
