"""The spelling matrix: each textbook step on each spelling of its kernel, offered / made / compiled / GPU-verified.

Reads the step folders under ``tests/fixtures/spellings/`` (``step.json`` plus one source file per spelling: NVIDIA
samples, PyTorch ATen, llm.c, templated C++, cooperative groups, macro-heavy code, ...) and checks each cell as the
test ``tests/transforms/test_spellings.py`` does (:mod:`tests.transforms.spellings`):

* offered: the knowledge-base strategy made by the step's transform applies to the kernel (its predicate is not
  false on the kernel's facts);
* made: the transform returns a validated edit;
* compiled: ``nvcc -arch=sm_90 -c`` accepts every candidate (CUDA), or the candidate runs under the Triton
  interpreter and matches the start (Triton; with ``--gpu`` it is compiled by Triton and run on the GPU instead,
  the start and the candidate each in its own process, and that run is the GPU column too);
* GPU-verified: with ``--gpu`` on a machine with a CUDA device, every candidate's host launcher gives the start's
  outputs; "not measured" otherwise.

Writes ``<out>/spelling_matrix.json`` (one record per cell, with the device, the date and the command) and
``<out>/spelling_matrix.md`` (the table)::

    python bench/spelling_matrix.py --out bench/results/spelling-matrix
    python bench/spelling_matrix.py --gpu --out bench/results/spelling-matrix-gpu     # on the GPU machine
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "transforms"))

from spellings import CellResult, all_spellings, check_cell, gpu_usable  # noqa: E402


def _mark(v: bool | None, unmeasured: str = "–") -> str:
    """A table cell: ✓, ✗ or ``unmeasured`` for ``None``."""
    return unmeasured if v is None else ("✓" if v else "✗")


def device_name(gpu: bool) -> str:
    """The CUDA device's name when ``gpu`` and one is usable, else the CPU's description."""
    if gpu:
        import torch  # only with --gpu

        return torch.cuda.get_device_name(0)
    return f"CPU only ({platform.machine()}, {platform.system()})"


def markdown(rows: list[CellResult], device: str, date: str, command: str, gpu: bool) -> str:
    """The step × spelling table, with the device, the date and the command."""
    out = ["# Spelling matrix: textbook steps × spellings", "",
           f"Device: {device}. Date: {date}. Command: `{command}`.", "",
           "| step | spelling | style | offered | made | compiled | GPU-verified | note |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        gpu_cell = _mark(r.gpu, "not measured") if gpu else "not measured"
        note = r.reason.replace("|", "\\|").replace("\n", " ")[:160]
        out.append(f"| {r.step} | {r.file} | {r.style} | {_mark(r.offered)} | {_mark(r.made)} | "
                   f"{_mark(r.compiled)} | {gpu_cell} | {note} |")
    steps = sorted({r.step for r in rows})
    out += ["", "| step | spellings | offered | made | compiled | GPU-verified |", "|---|---|---|---|---|---|"]
    for s in steps:
        rs = [r for r in rows if r.step == s]
        gpu_n = str(sum(1 for r in rs if r.gpu)) if gpu else "not measured"
        out.append(f"| {s} | {len(rs)} | {sum(r.offered for r in rs)} | {sum(r.made for r in rs)} | "
                   f"{sum(1 for r in rs if r.compiled)} | {gpu_n} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Check every cell and write the JSON and Markdown tables; returns the exit status (0)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", action="store_true", help="also run start and candidates on the GPU and compare")
    ap.add_argument("--out", default="bench/results/spelling-matrix", help="output folder")
    ap.add_argument("--step", action="append", default=[], help="only this step (repeatable)")
    args = ap.parse_args(argv)
    gpu = bool(args.gpu)
    if gpu and not gpu_usable():
        print("spelling_matrix: --gpu asked but no CUDA device or nvcc is usable; the GPU column is not measured")
        gpu = False
    rows: list[CellResult] = []
    for sp in all_spellings():
        if args.step and sp.step not in args.step:
            continue
        r = check_cell(sp, gpu=gpu)
        rows.append(r)
        print(f"{sp.step}/{sp.file}: offered={r.offered} made={r.made} compiled={r.compiled} gpu={r.gpu}"
              + (f" ({r.reason[:120]})" if r.reason else ""), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    date = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
    command = "python bench/spelling_matrix.py " + " ".join(argv if argv is not None else sys.argv[1:])
    device = device_name(gpu)
    (out / "spelling_matrix.json").write_text(json.dumps(
        {"device": device, "date": date, "command": command.strip(), "gpu_measured": gpu,
         "cells": [r.to_json() for r in rows]}, indent=1) + "\n")
    (out / "spelling_matrix.md").write_text(markdown(rows, device, date, command.strip(), gpu))
    print(f"wrote {out / 'spelling_matrix.json'} and {out / 'spelling_matrix.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
