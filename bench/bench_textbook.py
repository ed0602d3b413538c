"""Unseen textbook kernels: each naive version beside its authors' faster version, as a new user would try them.

Pairs (naive kernel, the authors' faster versions) come from this project's own textbook pairs and from
third-party code read in place, never copied into the project:

* the project's pairs, ``tests/fixtures/textbook_pairs/<name>/`` (:func:`own_pairs`): ``naive.cu`` and
  ``expert.cu`` as a CUDA course writes them (vector add, reduction, transpose, sgemm, histogram, row softmax),
  the same kernel name launched from each file's own ``main()``; with ``--gpu`` the expert is verified against
  the naive version (``htam verify --against``) and timed (``htam profile --no-counters``) in fresh processes;

* NVIDIA cuda-samples (:data:`SAMPLE_PAIRS`: reduction, transpose, vectorAdd, ...; a pair whose file is absent
  from the corpus is listed as absent and not counted), each with the textbook step(s) a CUDA course teaches
  for it (strategy ids of the knowledge base);
* llm.c's ``dev/cuda`` progressions (every file: version 1 is naive, later ones the authors'), run from the
  work copies of :mod:`htam_core.bench.llmc` (fp32 build, ``common.h`` inlined); their textbook step is any
  *structural* step (:func:`htam_core.transforms.registry.is_structural`).

Per cuda-samples pair, always (CPU, static): the zero-config harness ``htam optimize`` finds for the naive kernel
and its nvcc build with no ``-I`` given (:func:`harness_build`: a sample's ``<helper_cuda.h>`` is found by the
include-folder rule, :mod:`htam_core.runtime.include_dirs`).

Per pair, always (CPU, static): which steps are offered on the naive kernel (predicate not false and a validated
edit, as :mod:`bench.corpus_steps` counts them), whether the textbook step is **makeable** (offered, and its edit
compiles with ``nvcc -arch=sm_90 -ptx``), and every offered step the **output contract** rules out (a step whose
edit changes the number of blocks of a kernel that writes one output per block,
:meth:`htam_core.source.analysis.KernelFacts.per_block_outputs`, where the caller reads one partial result per
block, or changes a block that is a segment of the results: :func:`contract_broken`, the block-size step's check).

With ``--gpu`` (a GPU is needed): ``htam optimize --engine rules`` with a small ``--budget`` from the naive
version (llm.c: :func:`bench.bench_llmc.gpu_row`, which also verifies and times every expert version on the same
harness; cuda-samples: the zero-config harness of a work copy of the sample, experts not timed). The table gives
engine best / naive, expert / naive and engine / expert (expert ms over engine ms: 1.0 = as fast as the
authors). Without ``--gpu`` every time is "not measured".

Targets (from the project's goals): the textbook step makeable on >= 90 % of the pairs; engine >= 0.8 of the
expert on >= 80 % of the measured pairs; no offered step that the output contract rules out.

The corpus root (holding ``public/`` and ``llmc/``) is ``--corpus``, else ``$HTAM_TEXTBOOK_CORPUS``, else
:data:`bench.data_paths.CORPUS`. Rows stream to ``<out>/rows.jsonl`` (``--max-minutes`` stops cleanly); the
table goes to ``<out>/table.md`` and ``<out>/table.json``.

    python bench/bench_textbook.py --out bench/results/textbook-static-2026-12-05          # static
    HTAM_TEXTBOOK_CORPUS=.devcarry/corpus python bench/bench_textbook.py --gpu --budget 3 --max-minutes 6.5 \\
        --out /tmp/textbook
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.corpus_steps import _shown, kernel_offers, nvcc_ok  # noqa: E402
from bench.data_paths import CORPUS  # noqa: E402
from htam_core.memory.knowledge import load_knowledge  # noqa: E402
from htam_core.source import SourceError, load, parse_text  # noqa: E402
from htam_core.source.analysis import analyze  # noqa: E402
from htam_core.source.included import included_kernels  # noqa: E402
from htam_core.source.model import Kernel, SourceModel  # noqa: E402
from htam_core.transforms._cuda import launch_change_hazard, load_unit  # noqa: E402
from htam_core.transforms.registry import is_structural  # noqa: E402

#: Steps that change the grid or the block size: ruled out where their edit changes the number or the meaning of
#: the kernel's per-block outputs (:func:`contract_broken`).
GRID_STEPS = frozenset({"cuda_block_size", "grid_stride_loop"})


#: Steps that make a pair's textbook step in another form, counted for it (and named in the row as themselves): a
#: row's running sum scanned by a warp, 32 columns at a time with a carry between chunks (``row_scan``), is the
#: warp-shuffle scan with a carry that a pair naming ``block_scan`` teaches, at the granularity of a warp per row
#: (the block-wide form scans a block's chunk of the row with the same carry).
SAME_LESSON: dict[str, tuple[str, ...]] = {"block_scan": ("row_scan",)}


def counted_steps(textbook: tuple[str, ...]) -> frozenset[str]:
    """The steps that count for a pair whose textbook steps are ``textbook`` (strategy ids): those, and the steps
    :data:`SAME_LESSON` gives for them."""
    return frozenset(textbook) | {alt for s in textbook for alt in SAME_LESSON.get(s, ())}


@dataclass(frozen=True)
class Pair:
    """One textbook pair from cuda-samples.

    Attributes:
        name: the sample's name.
        file: the file under the corpus root (``public/cuda-samples/Samples/...``).
        naive: the naive kernel's name.
        experts: the authors' faster kernels in the same file (may be empty: then the pair has no expert time).
        steps: the textbook steps (knowledge-base strategy ids); any one of them makeable counts.
    """

    name: str
    file: str
    naive: str
    experts: tuple[str, ...]
    steps: tuple[str, ...]


_S = "public/cuda-samples/Samples/"
#: The cuda-samples pairs. Idea source for each step: M. Harris, "Optimizing Parallel Reduction in CUDA" (2007);
#: M. Harris, "An Efficient Matrix Transpose in CUDA C/C++" (NVIDIA blog, 2013); the CUDA C++ Best Practices Guide
#: (coalescing, vectorized accesses, grid-stride loops); Kirk & Hwu, "Programming Massively Parallel Processors"
#: (tiling, privatized histograms).
SAMPLE_PAIRS: tuple[Pair, ...] = (
    Pair("reduction", _S + "2_Concepts_and_Techniques/reduction/reduction_kernel.cu", "reduce0",
         ("reduce1", "reduce2", "reduce3", "reduce4", "reduce5", "reduce6"),
         ("sequential_addressing", "warp_shuffle_reduction", "thread_coarsening")),
    Pair("transpose", _S + "6_Performance/transpose/transpose.cu", "transposeNaive",
         ("transposeCoalesced", "transposeNoBankConflicts"), ("transpose_smem_tile",)),
    Pair("vectorAdd", _S + "0_Introduction/vectorAdd/vectorAdd.cu", "vectorAdd", (),
         ("vectorize_loads", "grid_stride_loop")),
    Pair("vectorAddDrv", _S + "0_Introduction/vectorAddDrv/vectorAdd_kernel.cu", "VecAdd_kernel", (),
         ("vectorize_loads", "grid_stride_loop")),
)


#: The project's own textbook pairs (written for it; see the folder's README).
OWN_PAIRS_DIR = REPO / "tests" / "fixtures" / "textbook_pairs"


def own_pairs(folder: Path = OWN_PAIRS_DIR) -> list[tuple[str, Path, Pair]]:
    """The project's textbook pairs: ``(name, folder, Pair)`` per sub-folder holding ``pair.json``
    (``{"kernel": NAME, "steps": [strategy ids]}``), ``naive.cu`` and ``expert.cu``.

    Raises:
        ValueError: a ``pair.json`` without ``kernel`` or ``steps``, or a pair missing one of its two files.
    """
    out = []
    for d in sorted(p for p in folder.glob("*/") if (p / "pair.json").is_file()):
        meta = json.loads((d / "pair.json").read_text())
        if "kernel" not in meta or "steps" not in meta:
            raise ValueError(f"{d / 'pair.json'}: needs 'kernel' and 'steps'")
        for f in ("naive.cu", "expert.cu"):
            if not (d / f).is_file():
                raise ValueError(f"{d}: {f} is missing")
        out.append((d.name, d, Pair(d.name, str(d / "naive.cu"), meta["kernel"], (meta["kernel"],),
                                    tuple(meta["steps"]))))
    return out


def published_best(res: Any) -> dict[str, Any]:
    """The engine's best as published: the search's best only when a fresh-process re-timing reproduced its
    speedup (else the naive time, a 1.0x), with the search's figure and the re-timing's verdict beside it."""
    rep = getattr(res, "reproduction", None)
    status = getattr(rep, "status", "not measured")
    search = res.best_ms or res.start_ms
    return {"best_ms": search if status == "reproduced" else res.start_ms, "search_best_ms": search,
            "reproduction": status}


def engine_row(path: Path, kernel: str, budget: int, trials: int, memory: str) -> dict[str, Any]:
    """``htam optimize --engine rules`` from ``path`` (a work copy; its output under ``htam-out`` beside it) on
    the GPU: ``{"naive_ms", "best_ms", "search_best_ms", "reproduction", "made", "expert_ms": None}``, or
    ``{"error": one line}`` when the run or the naive start fails (one line of the table, never a traceback)."""
    from htam_core.optimize import OptimizeError, OptimizeTask, run_optimize

    try:
        res = run_optimize(OptimizeTask(path=str(path), kernel=kernel, engine="rules", budget=budget,
                                        out_dir=str(path.parent / "htam-out"), memory_path=memory, trials=trials,
                                        use_ncu=False, static=False))
    except OptimizeError as e:
        return {"error": f"optimize: {e}"[:300]}
    except Exception as e:  # noqa: BLE001 - a kernel the zero-config harness cannot run is one line of the table
        return {"error": f"optimize: {type(e).__name__}: {e}"[:300]}
    if not res.start_ok:
        return {"error": ("the naive start failed: " + "; ".join(res.warnings))[:300]}
    return {"naive_ms": res.start_ms, **published_best(res),
            "made": [s.strategy for s in res.steps if s.accepted], "tried": tried(res.steps), "expert_ms": None}


def tried(steps: list[Any]) -> list[dict[str, Any]]:
    """Each candidate the loop made, in order, with its verdict: ``[{"strategy", "status" (the loop's: win,
    neutral, slower, incorrect, compile error, ...), "correct", "time_ms", "speedup", "why"}]`` -- ``why`` is the
    step's reason, else why it was not timed (a timer CUPTI refused), else its first message, cut to 160
    characters. It says why a makeable textbook step was not kept."""

    def why(s: Any) -> str:
        untimed = [m for m in s.messages if m.startswith("not measured")]
        return (s.reason or (untimed or s.messages or [""])[0])[:160]

    return [{"strategy": s.strategy, "status": s.status, "correct": s.correct, "time_ms": s.time_ms,
             "speedup": s.speedup, "parent": s.parent, "why": why(s)} for s in steps]


def _cli_json(args: list[str], timeout_s: float = 900.0) -> tuple[dict[str, Any] | None, str]:
    """``htam ARGS --json`` in a fresh process: (the JSON printed, or ``None``; the last stderr line)."""
    import subprocess

    from htam_core.runtime.children import child_env

    try:
        r = subprocess.run([sys.executable, "-m", "htam_core.cli.main", *args, "--json"], capture_output=True,
                           text=True, timeout=timeout_s, env=child_env(), cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:g} s"
    tail = (r.stderr.strip().splitlines() or [""])[-1]
    try:
        return json.loads(r.stdout), tail
    except json.JSONDecodeError:
        return None, tail or (r.stdout.strip().splitlines() or [""])[-1]


def own_gpu(pair: Pair, folder: Path, work: Path, budget: int, trials: int, memory: str) -> dict[str, Any]:
    """``htam optimize --engine rules`` from ``naive.cu`` (a work copy; harness from its ``main()``); the expert
    verified against the naive version's outputs (at the reordered-sum tolerance the loop grants its own
    reduction steps: an expert's tree sums reorder too) and timed, each in a fresh process. The expert's time is
    published only when it is verified."""
    dest = work / f"own-{pair.name}"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(folder, dest)
    row = engine_row(_kernel_file(dest / "naive.cu", pair.naive), pair.naive, budget, trials, memory)
    if "error" in row:
        return row
    verdict, why = _cli_json(["verify", str(dest / "expert.cu"), "--against", str(dest / "naive.cu"),
                              "--kernel", pair.naive, "--reordered-sums"])
    if not verdict or not verdict.get("correct"):
        row["expert_note"] = "expert not verified (reordered-sum tolerance): " + (
            "; ".join(verdict.get("refused_by") or []) + ": " + "; ".join(verdict.get("messages", [])[-2:])
            if verdict else why)[:300]
        return row
    prof, why = _cli_json(["profile", str(dest / "expert.cu"), "--kernel", pair.naive, "--no-counters"])
    t = (prof or {}).get("time_ms") or {}
    if t.get("median"):
        row["expert_ms"] = t["median"]
    else:
        row["expert_note"] = f"expert not timed: {why}"[:200]
    return row


def contract_broken(model: Any, kernel: Any, text: str) -> str | None:
    """Why the edited file ``text`` breaks ``kernel``'s output contract, or ``None``: the same analysis facts
    the block-size step checks before it offers an edit (:func:`htam_core.transforms._cuda.launch_change_hazard`:
    a grid that changes while the kernel writes one output per block the host does not own, or a block that
    changes where each block's results are a segment of its size), read from the original and the edited launches.
    A block-size change that keeps the grid (one block per column: ``cols`` blocks either way) is not ruled out."""
    unit = load_unit(model, kernel)
    edited = parse_text(text, model.file_language, model.path)
    new_kernel = next((k for k in edited.kernels if k.name == kernel.name), None)
    if isinstance(unit, str) or new_kernel is None:
        return None
    return launch_change_hazard(unit, analyze(edited, new_kernel))


def corpus_root(arg: Path | None) -> Path:
    """The corpus root: ``arg``, else ``$HTAM_TEXTBOOK_CORPUS``, else :data:`bench.data_paths.CORPUS`."""
    if arg is not None:
        return arg
    env = os.environ.get("HTAM_TEXTBOOK_CORPUS")
    return Path(env) if env else CORPUS


def _in_header(model: SourceModel, path: Path, naive: str) -> tuple[SourceModel, Path, Kernel | None]:
    """The kernel ``naive`` where the file ``path`` (``model``) reaches it: in a local header it includes
    (``#include "dwconv.cuh"``, :func:`~htam_core.source.included.included_kernels`), read in that header (the steps
    are offered and compiled there, its launch found in the including file); ``(model, path, None)`` when no header
    defines it."""
    for h in included_kernels(model):
        if naive not in {n.split("(")[0].split("::")[-1] for n in h.names}:
            continue
        try:
            hm = load(h.path)
        except (SourceError, OSError):
            continue
        k = next((k for k in hm.kernels if k.name == naive and not k.incomplete), None)
        if k is not None:
            return hm, Path(h.path), k
    return model, path, None


def _kernel_file(path: Path, naive: str) -> Path:
    """The file that defines kernel ``naive``: ``path``, or the local header it includes that does
    (:func:`_in_header`); ``path`` when neither can be read."""
    try:
        model = load(path)
    except (SourceError, OSError):
        return path
    if any(k.name == naive for k in model.kernels):
        return path
    return _in_header(model, path, naive)[1]


def static_facts(path: Path, naive: str, textbook: tuple[str, ...] | None, common: Path, cache: Path,
                 compile_edits: bool = True, includes: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The static part of a row for kernel ``naive`` of ``path``: offered steps, the textbook steps that are
    makeable (offered and compiling), and the offered steps the output contract rules out.

    ``textbook``: the pair's textbook steps, or ``None`` for "any structural step" (llm.c). ``includes``: more
    ``-I`` folders for nvcc. An offered textbook step whose file does not compile here even unedited is listed in
    ``textbook_unchecked`` (offered; its edit could not be judged), not as makeable.
    """
    kb = load_knowledge()
    row: dict[str, Any] = {"offered": [], "textbook_makeable": [], "textbook_unchecked": [], "textbook_refused": {}, "contract_ruled_out": [],
                           "per_block_outputs": None, "compile_errors": {}, "error": None}
    try:
        model = load(path)
    except (SourceError, OSError) as exc:
        row["error"] = f"not loaded: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        return row
    kernel = next((k for k in model.kernels if k.name == naive and not k.incomplete), None)
    if kernel is None:  # a naive.cu with main() only, whose kernel is in a header it includes
        model, path, kernel = _in_header(model, path, naive)
        row["kernel_file"] = path.name if kernel is not None else None
    if kernel is None:
        row["error"] = f"kernel {naive} not found"
        return row
    offers = kernel_offers(model, kernel, kb)
    strategies = {s.id: s for s in kb.strategies}
    row["offered"] = [r["step"] for r in offers if r["offered"]]
    per_block = analyze(model, kernel).per_block_outputs()
    row["per_block_outputs"] = [f"{a.pointer}[{a.index_text}] line {a.line}" for a in per_block]
    row["contract_ruled_out"] = [r["step"] for r in offers if r["offered"] and r["step"] in GRID_STEPS
                                 and contract_broken(model, kernel, r["_text"])]
    want = [r for r in offers if (r["step"] in counted_steps(textbook) if textbook is not None
                                  else is_structural(strategies[r["step"]].transform))]
    base_ok = nvcc_ok(model.text, path, common, cache, includes) if compile_edits else (False, "not compiled")
    for r in want:
        if not r["offered"]:
            row["textbook_refused"][r["step"]] = r.get("reason", "")
            continue
        if not compile_edits:
            row["textbook_makeable"].append(r["step"])
            continue
        if not base_ok[0]:
            row["compile_errors"][r["step"]] = "original does not compile here: " + base_ok[1]
            row["textbook_unchecked"].append(r["step"])
            continue
        ok, err = nvcc_ok(r["_text"], path, common, cache, includes)
        if ok:
            row["textbook_makeable"].append(r["step"])
        else:
            row["compile_errors"][r["step"]] = err
    if textbook is not None:
        for s in textbook:
            if s not in row["textbook_makeable"] and s not in row["textbook_refused"] and s not in row["compile_errors"]:
                row["textbook_refused"][s] = "its predicate is false on this kernel"
    return row


def harness_build(path: Path, kernel: str, root: Path | None = None) -> dict[str, Any]:
    """The zero-config harness of kernel ``kernel`` of the sample ``path`` and its nvcc build (CPU, no GPU), as
    ``htam optimize`` would find and build it: no ``-I`` is given, so a sample that includes ``<helper_cuda.h>``
    builds only through the include-folder rule (:mod:`htam_core.runtime.include_dirs`). Returns
    ``{"harness": where it came from, "harness_kind", "harness_built": [...], "harness_notes": [...]}`` or
    ``{"harness_error": one line}``. Paths under ``root`` (the corpus) are written ``CORPUS/...``."""
    from htam_core.harness.base import HarnessError
    from htam_core.harness.build_check import check_build
    from htam_core.harness.cu_main import build_program
    from htam_core.harness.find import find_harness

    try:
        h = find_harness(path, kernel, run_code=False)
        if h.kind == "cu-main":
            built = [f"program {build_program(h.path).name}"]
        else:
            built = check_build(h).built
    except HarnessError as e:
        return {"harness_error": (e.message.splitlines() or ["?"])[0][:300]}
    notes = [n.replace(str(root), "CORPUS") if root is not None else n for n in h.notes]
    return {"harness": h.source, "harness_kind": h.kind, "harness_built": built, "harness_notes": notes}


def work_copy(path: Path, work: Path, name: str) -> Path:
    """A work copy of the sample ``path``'s folder, at the same place under ``work/<name>`` as under the samples'
    root (``Samples/<group>/<sample>/``), beside a copy of the samples' ``Common/``: the include-folder rule then
    finds ``helper_cuda.h`` in the copy as in the corpus. Returns the copied file."""
    root = path.parents[3] if len(path.parents) > 3 else path.parent
    dest = work / name
    shutil.rmtree(dest, ignore_errors=True)
    rel = path.parent.relative_to(root)
    shutil.copytree(path.parent, dest / rel)
    if (root / "Common").is_dir():
        shutil.copytree(root / "Common", dest / "Common")
    return dest / rel / path.name


def sample_gpu(pair: Pair, path: Path, work: Path, budget: int, trials: int, memory: str) -> dict[str, Any]:
    """``htam optimize --engine rules`` on a work copy of the sample (zero-config harness, its headers found by
    the include-folder rule); the experts are not timed (no harness runs them)."""
    copy = work_copy(path, work, pair.name.replace(" ", "_").replace("(", "").replace(")", ""))
    row = engine_row(copy, pair.naive, budget, trials, memory)
    if "error" not in row:
        row["expert_note"] = "not measured: no harness runs the sample's faster kernels"
    return row


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or ``None`` when either is missing or ``b`` is 0."""
    return a / b if a and b else None


def markdown(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The table and the targets."""
    def f(v: float | None) -> str:
        return "not measured" if v is None else f"{v:.2f}"

    counted = [r for r in rows if not r.get("absent") and not r.get("error")]
    mk = [r for r in counted if r["textbook_makeable"]]
    measured = [r for r in counted if r.get("engine_over_expert") is not None]
    good = [r for r in measured if r["engine_over_expert"] >= 0.8]
    bad = [r for r in counted if r["contract_ruled_out"]]
    lines = ["# Unseen textbook kernels: naive beside the authors' faster version", "",
             f"- date: {meta['date']}", f"- device: {meta['device']}", f"- command: `{meta['command']}`",
             f"- mode: {meta['mode']}" + ("" if meta["mode"] == "gpu" else " (nothing timed: every time is "
                                          "\"not measured\")"), *([f"- {meta['stopped']}"] if meta.get("stopped") else []),
             "",
             "*textbook step makeable*: one of the pair's textbook steps (llm.c: any structural step) is offered "
             "on the naive kernel (predicate not false, a validated edit) and its edit compiles with nvcc sm_90. "
             "*ruled out by the output contract*: an offered step whose edit changes the number of blocks of a kernel "
             "writing one output per block (the host not owning them), or what each block writes. Ratios: engine best / naive and expert / naive are speedups; engine / "
             "expert is expert ms over engine ms (1.0 = as fast as the authors). The engine's best counts only when "
             "a re-timing in a fresh process reproduced its speedup (else 1.0x; the search's figure is "
             "`search_best_ms` in the JSON).", "",
             "| pair | naive kernel | textbook step makeable | engine best / naive | expert / naive | "
             "engine / expert | offered steps | ruled out by the output contract |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("absent"):
            lines.append(f"| {r['pair']} | {r['naive']} | absent from the corpus (not counted) | | | | | |")
            continue
        if r.get("error"):
            lines.append(f"| {r['pair']} | {r['naive']} | not counted: {r['error']} | | | | | |")
            continue
        made = ("yes (" + ", ".join(r["textbook_makeable"]) + ")" if r["textbook_makeable"] else
                "offered, compile not checked (" + ", ".join(r["textbook_unchecked"]) + ")"
                if r.get("textbook_unchecked") else "**no**")
        lines.append(f"| {r['pair']} | {r['naive']} | {made} | {f(r.get('engine_over_naive'))} | "
                     f"{f(r.get('expert_over_naive'))} | {f(r.get('engine_over_expert'))} | "
                     f"{', '.join(r['offered']) or '-'} | {', '.join(r['contract_ruled_out']) or 'none'} |")
    n = len(counted)
    unseen = [r for r in counted if r["pair"].startswith("cuda-samples") or r.get("unseen")]
    absent = [r["pair"] for r in rows if r.get("absent")]
    lines += ["", "llm.c's kernels are this project's development set; the cuda-samples pairs and pairs read from "
              "--own-pairs (kernels a new user wrote) are the unseen ones"
              + (f" (absent from this corpus copy, so not counted: {', '.join(absent)})" if absent else "") + ": "
              f"the textbook step is makeable on {sum(1 for r in unseen if r['textbook_makeable'])} of {len(unseen)} "
              "of them."]
    lines += ["", "## Targets", "",
              f"- textbook step makeable: {len(mk)} of {n} pairs ({100 * len(mk) / n:.0f} %; target >= 90 %)" if n
              else "- textbook step makeable: no pair counted",
              f"- engine >= 0.8 of the expert: {len(good)} of {len(measured)} measured pairs"
              + (f" ({100 * len(good) / len(measured):.0f} %; target >= 80 %)" if measured else " (not measured)"),
              f"- offered steps the output contract rules out: {sum(len(r['contract_ruled_out']) for r in bad)} "
              f"(target 0)"]
    built = [r for r in counted if "harness_built" in r or "harness_error" in r]
    if built:
        lines += ["", "## The zero-config harness of each sample, built with nvcc (no GPU, no -I given)", "",
                  "| pair | harness | built | include folders and notes |", "|---|---|---|---|"]
        for r in built:
            if "harness_error" in r:
                lines.append(f"| {r['pair']} | **none**: {r['harness_error']} | no | |")
                continue
            notes_cell = "; ".join(r.get("harness_notes") or []) or "-"
            lines.append(f"| {r['pair']} | {r['harness_kind']}: {r['harness']} | yes ({'; '.join(r['harness_built'])}) "
                         f"| {notes_cell} |")
    notes = [r for r in counted if r["textbook_refused"] or r["compile_errors"] or r.get("gpu_error")
             or r.get("expert_note")]
    if notes:
        lines += ["", "## Why a textbook step is not made, and what was not measured", ""]
        for r in notes:
            for s, why in {**r["textbook_refused"], **r["compile_errors"]}.items():
                if r["textbook_makeable"] and s not in r["compile_errors"]:
                    continue
                lines.append(f"- {r['pair']} / {s}: {why}".replace("\n", " ")[:400])
            if r.get("gpu_error"):
                lines.append(f"- {r['pair']}: not measured: {r['gpu_error']}"[:400])
            elif r.get("expert_note"):
                lines.append(f"- {r['pair']}: expert: {r['expert_note']}"[:400])
    kept_not = [r for r in counted if r.get("tried") and not set(r.get("made") or ()) & set(r["textbook_makeable"])]
    if kept_not:
        lines += ["", "## Candidates of the pairs whose textbook step was not kept (in the loop's order)", ""]
        lines += [f"- {r['pair']}: " + "; ".join(f"{t['strategy']} {t['status']}" + (f" ({t['why']})" if t["why"]
                                                                                      else "")
                                                for t in r["tried"])[:600] for r in kept_not]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the pairs (static always, timed with ``--gpu``); write ``rows.jsonl``, ``table.md``, ``table.json``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None, help="corpus root holding public/ and llmc/")
    ap.add_argument("--out", type=Path,
                    default=REPO / "bench" / "results" / f"textbook-static-{datetime.date.today().isoformat()}")
    ap.add_argument("--gpu", action="store_true", help="optimize and time on the GPU")
    ap.add_argument("--budget", type=int, default=3)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--max-minutes", type=float, default=None)
    ap.add_argument("--pairs", default="", help="comma-separated pair names (default: all)")
    ap.add_argument("--own-pairs", type=Path, default=None,
                    help="folder of pairs in the textbook_pairs layout (<name>/pair.json, naive.cu, expert.cu) "
                         "instead of tests/fixtures/textbook_pairs: kernels a new user wrote, never seen here; "
                         "default $HTAM_TEXTBOOK_PAIRS, else the project's own pairs")
    ap.add_argument("--llmc-rows", type=Path, default=None,
                    help="GPU rows of bench/bench_llmc.py (its .jsonl) to use for the llm.c pairs instead of "
                         "running them again (the llmc stage of the same GPU session)")
    ap.add_argument("--cache", type=Path,
                    default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "htam-corpus-nvcc")
    ap.add_argument("--no-compile", action="store_true", help="do not compile the edits")
    args = ap.parse_args(argv)
    root = corpus_root(args.corpus)
    if not root.is_dir():
        print(f"bench_textbook: no corpus at {root}; only the project's own pairs run")
    deadline = None if args.max_minutes is None else time.time() + 60 * args.max_minutes
    common = root / "public" / "cuda-samples" / "Common"
    args.cache.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    want = {p.strip() for p in args.pairs.split(",") if p.strip()}
    device = "CPU only (no GPU)"
    if args.gpu:
        import torch

        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else device
    meta = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "device": device,
            "machine": platform.node() or "unknown", "mode": "gpu" if args.gpu else "static",
            "command": "python bench/bench_textbook.py " + " ".join(
                _shown(a) for a in (sys.argv[1:] if argv is None else argv))}
    rows: list[dict[str, Any]] = []
    stream = (args.out / "rows.jsonl").open("w")
    work = Path(tempfile.mkdtemp(prefix="htam-textbook-"))
    memory = str(work / "memory.sqlite3")

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        stream.write(json.dumps(row) + "\n")
        stream.flush()
        print(f"{row['pair']}: makeable {row.get('textbook_makeable')} offered {row.get('offered')} "
              f"{row.get('error') or row.get('gpu_error') or ''}", flush=True)
        for t in row.get("tried") or []:
            print(f"  tried {t['strategy']}: {t['status']} correct={t['correct']} ms={t['time_ms']} "
                  f"{t['why']}", flush=True)

    try:
        pairs_dir = args.own_pairs or Path(os.environ.get("HTAM_TEXTBOOK_PAIRS") or OWN_PAIRS_DIR)
        for name, folder, p in own_pairs(pairs_dir):
            if want and name not in want and f"own {name}" not in want:
                continue
            row = {"pair": f"own {name}", "naive": p.naive, "experts": ["expert.cu"], "textbook": list(p.steps),
                   "unseen": pairs_dir.resolve() != OWN_PAIRS_DIR.resolve()}
            row.update(static_facts(folder / "naive.cu", p.naive, p.steps, common, args.cache, not args.no_compile))
            if args.gpu and not row["error"] and (deadline is None or time.time() < deadline):
                g = own_gpu(p, folder, work, args.budget, args.trials, memory)
                row["gpu_error"] = g.get("error")
                row.update({k: v for k, v in g.items() if k != "error"})
            emit(row)
        for p in SAMPLE_PAIRS:
            if want and p.name not in want:
                continue
            path = root / p.file
            row: dict[str, Any] = {"pair": f"cuda-samples {p.name}", "naive": p.naive, "experts": list(p.experts),
                                   "textbook": list(p.steps)}
            if not path.is_file():
                emit({**row, "absent": True})
                continue
            row.update(static_facts(path, p.naive, p.steps, common, args.cache, not args.no_compile))
            if not row["error"] and not args.no_compile:
                row.update(harness_build(path, p.naive, root.resolve()))
            if args.gpu and not row["error"] and (deadline is None or time.time() < deadline):
                g = sample_gpu(p, path, work, args.budget, args.trials, memory)
                row["gpu_error"] = g.get("error")
                row.update({k: v for k, v in g.items() if k != "error"})
            emit(row)
        llmc_dir = root / "llmc"
        if llmc_dir.is_dir():
            from bench import bench_llmc
            from htam_core.bench import llmc

            # a toolkit without cuBLAS compiles llm.c's host code against declarations only (never run)
            done = {r["file"]: r for r in bench_llmc._done_rows(args.llmc_rows).values() if r.get("mode") == "gpu"} \
                if args.llmc_rows else {}
            stub = () if llmc.toolkit_has_header("cublas_v2.h") else (llmc.cublas_stub(work / "cublas-stub"),)

            for entry in llmc.discover(llmc_dir):
                if want and f"llmc {entry.name}" not in want and entry.name not in want:
                    continue
                n = entry.naive
                row = {"pair": f"llm.c {entry.name}", "naive": n.kernels[0] if n else "-",
                       "experts": [f"v{v.number}" for v in entry.experts], "textbook": "any structural step"}
                if n is None:
                    emit({**row, "error": "no naive version found"})
                    continue
                built = llmc.build_harness(entry, n, work, block_size=bench_llmc._naive_block(entry))
                row.update(static_facts(built.work_file, n.kernels[0], None, common, args.cache,
                                        not args.no_compile, stub))
                if args.gpu and not row["error"]:
                    if entry.name in done:
                        g = done[entry.name]
                        row.update(naive_ms=g.get("naive_ms"), best_ms=g.get("best_ms"),
                                   expert_ms=g.get("expert_ms") if bench_llmc._published_expert(g) else None,
                                   expert_note=g.get("expert_note"), made=g.get("made"), gpu_error=g.get("error"),
                                   gpu_from="bench_llmc rows")
                    elif deadline is not None and time.time() >= deadline:
                        row["gpu_error"] = "the time budget (--max-minutes) was spent"
                    else:
                        g = bench_llmc.gpu_row(entry, work, args.budget, args.trials, memory, deadline)
                        row.update(naive_ms=g.get("naive_ms"), best_ms=g.get("best_ms"),
                                   expert_ms=g.get("expert_ms") if bench_llmc._published_expert(g) else None,
                                   expert_note=g.get("expert_note"), made=g.get("made"), gpu_error=g.get("error"))
                emit(row)
    except KeyboardInterrupt:  # the GPU session's time limit: keep the rows done so far and write the table
        meta["stopped"] = "interrupted: the rows after the last one listed were not run"
        print(meta["stopped"], flush=True)
    finally:
        stream.close()
        shutil.rmtree(work, ignore_errors=True)
    for r in rows:
        r["engine_over_naive"] = ratio(r.get("naive_ms"), r.get("best_ms"))
        r["expert_over_naive"] = ratio(r.get("naive_ms"), r.get("expert_ms"))
        r["engine_over_expert"] = ratio(r.get("expert_ms"), r.get("best_ms"))
    (args.out / "table.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (args.out / "table.md").write_text(markdown(meta, rows))
    print(f"wrote {args.out / 'table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
