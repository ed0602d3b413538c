"""External kernels: the rules engine on llm.c's naive kernels, beside the llm.c authors' faster versions.

For each file of an llm.c ``dev/cuda`` folder (third-party: read from where it is, never copied into the
project) this builds work copies in a folder outside the repository (:mod:`htam_core.bench.llmc`), and

* **on a GPU**: runs ``htam optimize --engine rules`` (the engine API, :func:`htam_core.optimize.run_optimize`)
  from the naive version with a small budget (its harness inferred zero-config from the work copy's
  ``main()``; the naive kernel is the oracle), then times every expert version with the same timer
  (:func:`htam_core.measure.gpu.measure_harness`) at each block size of the file's list, keeping the best;
  the table gives naive ms, engine best ms, expert ms, engine/expert speed and the steps made, and the
  geomean of engine over naive;
* **without a GPU** (static mode): lists, for each naive kernel, which rules-engine steps are makeable
  (a validated edit) and which are refused and why, whether the step is structural, and whether the harness
  could be inferred. Nothing is timed.

Rows stream to ``<out>/llmc-<mode>-<date>.jsonl`` with a progress line each; a rerun resumes from that file
(``--fresh`` starts over; a GPU row whose experts were timed before experts were verified keeps its engine
figures and gets only its experts verified and timed again, :func:`needs_expert_check`); ``--max-minutes`` ends the run cleanly with the rows done so far; the table is
written as ``.md`` and ``.json`` beside it.

Usage::

    python bench/bench_llmc.py --static                      # CPU: the engine's reach
    python bench/bench_llmc.py --budget 4 --max-minutes 3 --kernels gelu_forward,residual_forward
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.data_paths import DEFAULTS  # noqa: E402
from htam_core.bench import llmc  # noqa: E402
from htam_core.harness.base import HarnessError  # noqa: E402
from htam_core.verify.correctness import NONDETERMINISTIC  # noqa: E402

#: The naive start's block size when the file's list has it (llm.c's main() tries 32 first, which no user keeps).
NAIVE_BLOCK = 256


def _log(msg: str) -> None:
    print(msg, flush=True)


def _done_rows(path: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a row cut by a kill: run again
            if r.get("complete"):
                rows[r["file"]] = r
    return rows


def _naive_block(entry: llmc.LlmcEntry) -> int | None:
    import re

    text = entry.path.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"int\s+block_sizes\s*\[\s*\]\s*=\s*\{([^}]*)\}", text)
    if not m:
        return None
    vals = [int(v) for v in re.findall(r"(?<![/*\w])(\d+)(?![\w*])", re.sub(r"/\*.*?\*/", "", m.group(1)))]
    return NAIVE_BLOCK if NAIVE_BLOCK in vals else None


def _block_list(entry: llmc.LlmcEntry) -> list[int]:
    import re

    text = entry.path.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"int\s+block_sizes\s*\[\s*\]\s*=\s*\{([^}]*)\}", text)
    return [int(v) for v in re.findall(r"\d+", re.sub(r"/\*.*?\*/", "", m.group(1)))] if m else []


def static_row(entry: llmc.LlmcEntry, work: Path, build: bool = False,
               deadline: float | None = None) -> dict[str, Any]:
    """The engine's reach on the naive kernel of ``entry`` and whether its harness is inferred (no GPU).

    With ``build``, also whether each harness compiles with nvcc (no GPU: what the GPU run would build,
    :func:`htam_core.bench.llmc.build_status`): the naive start's (``naive_build``) and every expert's
    (``expert_builds``, each checked against the naive version when ``oracle_checked``). Experts not reached
    before ``deadline`` are recorded as not built and the row is marked incomplete (built on a rerun).
    """
    n = entry.naive
    row: dict[str, Any] = {"file": entry.name, "complete": True, "mode": "static",
                           "versions": [v.number for v in entry.versions], "naive": None, "harness": None,
                           "harness_reason": None, "steps": [], "naive_build": None, "expert_builds": []}
    if n is None:
        row["harness_reason"] = "no version found (no `kernel_num` dispatch and no kernel launched by main())"
        return row
    row["naive"] = n.kernels[0]
    built = llmc.build_harness(entry, n, work, block_size=_naive_block(entry))
    h = built.harness
    row["harness"] = None if h is None else (f"launcher {h.launcher}" if h.launcher else f"direct {h.grid} x {h.block}")
    row["harness_reason"] = built.reason
    try:
        row["steps"] = [{"strategy": s.strategy, "direction": s.direction, "structural": s.structural,
                         "makeable": s.makeable, "refusal": s.refusal}
                        for s in llmc.reach(built.work_file if built.work_file.is_file() else entry.path, n.kernels[0])]
    except HarnessError as e:
        row["harness_reason"] = (row["harness_reason"] or "") + f"; reach: {e.message}"
    if build:
        row["naive_build"] = llmc.build_status(built)
        for v in entry.experts:
            rec: dict[str, Any] = {"version": v.number, "launcher": v.launcher}
            if deadline is not None and time.time() >= deadline:
                rec.update(ok=None, reason="not built: the time budget (--max-minutes) was spent")
                row["complete"] = False
            elif h is None:
                rec.update(ok=False, reason="not built: the naive start has no harness to run it on")
            else:
                b = llmc.build_harness(entry, v, work, like=h)
                rec.update(llmc.build_status(b), unchecked=b.unchecked)
            row["expert_builds"].append(rec)
    return row


def _expert_ms(entry: llmc.LlmcEntry, naive_h: Any, work: Path, trials: int,
               deadline: float | None = None) -> list[dict[str, Any]]:
    """Verify and time every expert version of ``entry`` (GPU worker), each at every block size of the file.

    An expert's time is published (``ms``) only when its outputs match the naive version's on the same
    inputs, with the verifier's one tolerance rule (strict, or widened from a nondeterministic naive
    version's self-difference); otherwise ``ms`` is ``None``, ``note`` says ``expert not verified: <why>``
    and a time taken anyway is kept as ``unverified_ms`` (never published).
    """
    from htam_core.runtime.worker import run_in_worker

    out = []
    blocks = _block_list(entry)
    for v in entry.experts:
        rec: dict[str, Any] = {"version": v.number, "kernel": v.kernels[0] if v.kernels else v.launcher,
                               "ms": None, "block_size": None, "note": None, "verified": False,
                               "unverified_ms": None}
        out.append(rec)
        left = None if deadline is None else deadline - time.time()
        if left is not None and left < 5:
            rec["note"] = "not measured: the time budget (--max-minutes) was spent"
            continue
        b = llmc.build_harness(entry, v, work, like=naive_h)
        if b.harness is None or b.unchecked:
            rec["note"] = f"expert not verified: {b.unchecked or b.reason}"
            continue
        h = b.harness
        base = dict(h.sizes[0]) if h.sizes else {}
        if "block_size" in base and blocks:
            h.sizes = [{**base, "block_size": bs} for bs in blocks]
        r = run_in_worker("htam_core.measure.gpu:measure_harness", {"harness": h.to_json(), "trials": trials,
                                                                     "verify": True},
                          timeout_s=600 if left is None else min(600.0, left), pool_key="gpu0", interpret=False,
                          gpu_index=0)
        if not r.ok:
            rec["note"] = (f"expert not verified: {r.error.kind if r.error else '?'}: "
                           f"{r.error.message if r.error else ''}")[:300]
            continue
        times = [(s["time"].get("median"), s.get("sizes", {}).get("block_size")) for s in r.value["sets"]
                 if not s["time"].get("refused")]
        times = [t for t in times if t[0]]
        corr = r.value.get("correctness") or {}
        if not corr.get("correct"):
            why = [m for m in corr.get("messages") or [] if NONDETERMINISTIC not in m] or ["no verdict"]
            rec["note"] = f"expert not verified: its outputs do not match the naive version's: {why[0]}"[:300]
            rec["unverified_ms"] = min(times)[0] if times else None
            continue
        rec["verified"] = True
        rec["note"] = next((m for m in corr.get("messages") or [] if NONDETERMINISTIC in m), None)
        if times:
            rec["ms"], rec["block_size"] = min(times)
    return out


def gpu_row(entry: llmc.LlmcEntry, work: Path, budget: int, trials: int, memory: str,
            deadline: float | None) -> dict[str, Any]:
    """Optimize the naive version with the rules engine and time the experts (see the module docstring)."""
    from htam_core.bench.parallel import cancel_at
    from htam_core.optimize import OptimizeError, OptimizeTask, run_optimize

    row = static_row(entry, work)
    row.update(mode="gpu", naive_ms=None, best_ms=None, expert_ms=None, expert=None, engine_over_expert=None,
               speedup=None, made=[], candidates=[], experts=[], error=None, expert_note=None,
               naive_nondeterministic=None)
    n = entry.naive
    if n is None or row["harness"] is None:
        row["error"] = f"not measured: {row['harness_reason']}"
        return row
    built = llmc.build_harness(entry, n, work, block_size=_naive_block(entry))
    with cancel_at(deadline) as cancel:
        try:
            res = run_optimize(OptimizeTask(path=str(built.work_file), kernel=n.kernels[0], engine="rules",
                                            budget=budget, out_dir=str(built.work_file.parent / "htam-out"),
                                            memory_path=memory, trials=trials, use_ncu=False, static=False),
                               cancel=cancel)
        except OptimizeError as e:
            row["error"] = f"optimize: {e}"
            return row
    row.update(naive_ms=res.start_ms, best_ms=res.best_ms or res.start_ms,
               candidates=[{"strategy": s.strategy, "status": s.status, "speedup_vs_start": s.speedup_vs_start,
                            "reason": s.reason} for s in res.steps],
               made=[s.strategy for s in res.steps if s.accepted], warnings=[w[:300] for w in res.warnings[:6]])
    if not res.start_ok:
        row["error"] = "the naive start failed: " + "; ".join(res.warnings)[:300]
        return row
    _publish(row, res.reproduction)
    row["naive_nondeterministic"] = next((w for w in res.warnings if NONDETERMINISTIC in w), None)
    _fill_experts(row, entry, built.harness, work, trials, deadline)
    return row


def _fill_experts(row: dict[str, Any], entry: llmc.LlmcEntry, naive_h: Any, work: Path, trials: int,
                  deadline: float | None) -> None:
    """Verify and time ``entry``'s experts into ``row``: ``experts``, the fastest verified one's ``expert_ms``
    and ``expert``, ``engine_over_expert`` and ``expert_note``."""
    row["experts"] = _expert_ms(entry, naive_h, work, trials, deadline)
    row.update(expert_ms=None, expert=None, engine_over_expert=None)
    timed = [e for e in row["experts"] if e["ms"]]
    if timed:
        best = min(timed, key=lambda e: e["ms"])
        row.update(expert_ms=best["ms"], expert=f"v{best['version']} (block {best['block_size']})")
        if row.get("best_ms"):
            row["engine_over_expert"] = best["ms"] / row["best_ms"]
    row["expert_note"] = expert_note(entry, row["experts"])


def needs_expert_check(row: dict[str, Any]) -> bool:
    """A GPU row of an earlier run whose expert times were taken before experts were verified (its expert
    records have no ``verified`` key) and whose engine part is done: only its experts are run again."""
    return (row.get("mode") == "gpu" and not row.get("error") and row.get("naive_ms") is not None
            and any("verified" not in e for e in row.get("experts") or []))


def recheck_experts(row: dict[str, Any], entry: llmc.LlmcEntry, work: Path, trials: int,
                    deadline: float | None) -> dict[str, Any]:
    """``row`` with its experts verified and timed again (:func:`_expert_ms`); the engine's figures are kept.
    The old expert figures stay in ``experts_unchecked`` (never published)."""
    row = dict(row)
    built = llmc.build_harness(entry, entry.naive, work, block_size=_naive_block(entry)) if entry.naive else None
    if built is None or built.harness is None:
        return row
    row["experts_unchecked"] = row.get("experts")
    _fill_experts(row, entry, built.harness, work, trials, deadline)
    return row


def expert_note(entry: llmc.LlmcEntry, experts: list[dict[str, Any]]) -> str | None:
    """What the expert column says when no expert time is published: the file has no expert version, or the
    first expert's reason (``expert not verified: ...``); ``None`` when one is published."""
    if any(e.get("ms") for e in experts):
        return None
    if not entry.experts:
        return "no expert version in the file"
    return next((e["note"] for e in experts if e.get("note")), "not measured")


def _publish(row: dict[str, Any], rep: Any) -> None:
    """Set ``row["speedup"]`` and ``row["best_ms"]`` to what may be published.

    A speedup counts only when the fresh-process re-timing (``rep``, a
    :class:`htam_core.optimize.reproduce.Reproduction`) reproduced it; otherwise the row publishes the naive
    start (1.0x, ``best_ms = naive_ms``) and keeps the search's figures as ``search_best_ms`` /
    ``search_speedup`` with the reason in ``reproduction``.
    """
    from htam_core.optimize.reproduce import REPRODUCED

    naive, best = row.get("naive_ms"), row.get("best_ms")
    row["reproduction"] = None if rep is None else {"status": rep.status, "fresh": rep.fresh, "reason": rep.reason}
    if not naive or not best:
        return
    search = naive / best
    row.update(search_best_ms=best, search_speedup=search, speedup=search)
    if search > 1.0 and (rep is None or rep.status != REPRODUCED):
        row.update(speedup=1.0, best_ms=naive)


def _published_expert(r: dict[str, Any]) -> bool:
    """The row's expert time may be published: it was verified (rows from before the check never are)."""
    return bool(r.get("expert_ms")) and any(e.get("verified") and e.get("ms") for e in r.get("experts") or [])


def _expert_cell(r: dict[str, Any]) -> str:
    """The expert column: the fastest verified expert, else why none is published (one line)."""
    if _published_expert(r):
        return f"{r['expert_ms']:.4f} {r.get('expert') or ''}"
    if needs_expert_check(r):
        return "expert not verified: timed before experts were checked against the naive version (rerun)"
    default = "no expert version in the file" if len(r.get("versions") or []) == 1 else "not measured"
    note = (r.get("expert_note") or default).replace("|", "/").splitlines()[0]
    return note[:160]


def _why_unmeasured(r: dict[str, Any]) -> str:
    """Why a row that ran has no start time: the optimize loop's first warning (one line), or that the row
    predates the recorded warnings."""
    w = r.get("warnings")
    if w is None:
        return "the cause was not recorded by this version of the bench (rerun)"
    return (w[0].replace("|", "/").splitlines()[0][:160] if w else
            "the optimize loop gave no warning; see its report in the work folder")


def command_line(argv: list[str]) -> str:
    """The command as a reader can rerun it: the llm.c folder given to ``--llmc`` is written ``LLMC_DIR``, since a
    results file must not record where this machine keeps the third-party corpus."""
    out, skip = [], False
    for a in argv:
        if skip:
            out.append("LLMC_DIR")
            skip = False
        elif a == "--llmc":
            out.append(a)
            skip = True
        elif a.startswith("--llmc="):
            out.append("--llmc=LLMC_DIR")
        else:
            out.append(a)
    return "python bench/bench_llmc.py " + " ".join(out)


def _fmt(v: Any, spec: str = ".4f") -> str:
    return "not measured" if v is None else format(v, spec)


def _naive_build_cell(r: dict[str, Any]) -> str:
    """``yes`` / ``no: <why>`` / ``not checked`` for a static row's naive build."""
    b = r.get("naive_build")
    if not b:
        return "not checked"
    return "yes" if b.get("ok") else f"no: {(b.get('reason') or '?').replace('|', '/')[:120]}"


def _experts_built_cell(r: dict[str, Any]) -> str:
    """``2 of 3 (2 checked)``: a static row's experts that build, and how many are checked against the naive
    version; the versions that do not build are named (their reasons are listed below the table)."""
    ex = r.get("expert_builds") or []
    if r.get("naive_build") is None:
        return "not checked"
    if not ex:
        return "no expert version"
    ok = [x for x in ex if x.get("ok")]
    bad = [f"v{x['version']}" for x in ex if not x.get("ok")]
    checked = sum(1 for x in ok if x.get("oracle_checked"))
    return f"{len(ok)} of {len(ex)} ({checked} checked)" + (f"; not: {', '.join(bad)}" if bad else "")


def markdown(rows: list[dict[str, Any]], mode: str, meta: dict[str, Any]) -> str:
    """The table of ``rows`` (static: the reach; gpu: naive/engine/expert)."""
    lines = [f"# llm.c external kernels: {mode} ({meta['date']})", "",
             f"Device: {meta['device']}. Command: `{meta['command']}`. Source: {meta['llmc']} (read in place; "
             "third-party, MIT). Work copies (fp32 build, common.h inlined, version selected in main()) under a "
             "temporary folder; line numbers in the messages are the work copy's (common.h's lines come first).", ""]
    if mode == "static":
        lines += ["Static mode: nothing timed. For each naive kernel, every rules-engine strategy with a transform "
                  "was tried on the kernel as the engine gets it (the fp32 work copy): **makeable** = a validated edit. Structural = not a "
                  "launch-parameter or hint-only step.", "",
                  f"{meta.get('build') or 'Builds: not checked (--no-build).'}", "",
                  "| file | naive kernel | harness (zero-config) | naive start builds | experts built | "
                  "makeable structural | makeable other | refused |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            st = r.get("steps") or []
            ms = [s["strategy"] for s in st if s["makeable"] and s["structural"]]
            mo = [s["strategy"] for s in st if s["makeable"] and not s["structural"]]
            harness = r.get("harness") or f"not inferred: {r.get('harness_reason')}"
            lines.append(f"| {r['file']} | {r.get('naive') or '-'} | {harness.replace('|', '/')[:160]} | "
                         f"{_naive_build_cell(r)} | {_experts_built_cell(r)} | "
                         f"{', '.join(ms) or '**none**'} | {', '.join(mo) or '-'} | "
                         f"{sum(1 for s in st if not s['makeable'])} of {len(st)} |")
        with_struct = sum(1 for r in rows if any(s["makeable"] and s["structural"] for s in r.get("steps") or []))
        harn = sum(1 for r in rows if r.get("harness"))
        lines += ["", f"{with_struct} of {len(rows)} naive kernels have at least one makeable structural step; "
                  f"{harn} of {len(rows)} get a zero-config harness."]
        if any(r.get("naive_build") for r in rows):
            nb = sum(1 for r in rows if (r.get("naive_build") or {}).get("ok"))
            ex = [x for r in rows for x in r.get("expert_builds") or []]
            lines.append(f"{nb} of {len(rows)} naive starts build; {sum(1 for x in ex if x.get('ok'))} of {len(ex)} "
                         f"experts build, {sum(1 for x in ex if x.get('ok') and x.get('oracle_checked'))} of them "
                         "checked against the naive version (their outputs compared on the naive version's inputs).")
            fails = [(r["file"], "naive", (r.get("naive_build") or {}).get("reason")) for r in rows
                     if r.get("naive_build") and not r["naive_build"].get("ok")]
            fails += [(r["file"], f"v{x['version']}", x.get("reason")) for r in rows
                      for x in r.get("expert_builds") or [] if not x.get("ok")]
            fails += [(r["file"], f"v{x['version']}", f"builds, not checked: {x['unchecked']}") for r in rows
                      for x in r.get("expert_builds") or [] if x.get("ok") and x.get("unchecked")]
            if fails:
                lines += ["", "## Builds that failed or are not checked", ""]
                lines += [f"- {f} / {v}: {(why or '?').replace('|', '/')[:300]}" for f, v, why in fails]
        lines += ["", "## Refusals", ""]
        for r in rows:
            for s in r.get("steps") or []:
                if not s["makeable"]:
                    lines.append(f"- {r['file']} / {s['strategy']}: {(s['refusal'] or '').splitlines()[0][:240]}")
        return "\n".join(lines) + "\n"
    lines += ["| kernel | naive ms | engine best ms | fresh re-time | expert ms (version) | engine / expert | "
              "steps made |", "|---|---|---|---|---|---|---|"]
    sp = []
    for r in rows:
        if r.get("speedup"):
            sp.append(r["speedup"])
        made = ", ".join(r.get("made") or []) or "-"
        note = f" ({r['error']})" if r.get("error") else ""
        if not note and r.get("naive_ms") is None:
            note = f" (start time not published: {_why_unmeasured(r)})"
        if r.get("naive_nondeterministic"):
            note += " (naive start nondeterministic: its noisy outputs are checked with a widened atol, see JSON)"
        rep = r.get("reproduction") or {}
        fresh = ("-" if not rep.get("status") else rep["status"] if rep.get("fresh") is None
                 else f"{rep['status']} ({rep['fresh']:.2f}x)")
        lines.append(f"| {r['file']} / {r.get('naive') or '-'} | {_fmt(r.get('naive_ms'))} | {_fmt(r.get('best_ms'))}"
                     f" | {fresh} | {_expert_cell(r)} | {_fmt(r.get('engine_over_expert') if _published_expert(r) else None, '.2f')}"
                     f" | {made}{note[:200]} |")
    g = math.exp(sum(math.log(s) for s in sp) / len(sp)) if sp else None
    lines += ["", f"Geomean speedup of the engine's best over the naive start: {_fmt(g, '.2f')}x over {len(sp)} "
              f"kernels with both timed (of {len(rows)} rows).", "",
              "Engine best ms and the geomean are published figures: a speedup that the re-timing of the best "
              "kernel in a fresh process did not reproduce counts as 1.0x (the search's figure is in the JSON's "
              "`search_speedup`).",
              "Engine / expert is the expert's time over the engine's (1.0 = as fast as the authors' best version "
              "at its best block size). Experts run through their own host launcher on the naive version's "
              "buffers, timed by htam's timer; an expert's time is published only when its outputs match the "
              "naive version's on the same inputs at every block size (the verifier's tolerance: strict, or, when "
              "the naive version is nondeterministic, atol = min(1e-2, 4 x its self-difference) on its noisy "
              "outputs); otherwise the column says `expert not verified: <why>`."]
    return "\n".join(lines) + "\n"


def _setup_static_build(work: Path) -> str:
    """Prepare nvcc for the static mode's compile checks and say how they are made (the table's note).

    The builds go to a cache under ``work`` (``HTAM_CACHE_DIR``), never the user's htam cache. When the
    toolkit has no cuBLAS headers (a CUDA install without the math libraries), a stub of the cuBLAS names is
    put on nvcc's include and library path (:func:`htam_core.bench.llmc.cublas_stub`, through
    ``NVCC_APPEND_FLAGS``): the kernels and shims are then compiled for real, the cuBLAS calls only against
    stub declarations, and the note says so.
    """
    from htam_core.harness.build_check import DEFAULT_ARCH
    from htam_core.harness.cu_main import find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        return "Builds: not checked (nvcc not found)."
    os.environ["HTAM_CACHE_DIR"] = str(work / "htam-cache")
    import subprocess

    ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
    release = next((ln for ln in ver if "release" in ln), "nvcc")
    how = (f"Builds: compile-only with {release} for {DEFAULT_ARCH} (`nvcc -shared` of each "
           "harness's shim, or `nvcc -cubin` of a direct launch, as the GPU run builds them; nothing run)")
    if llmc.toolkit_has_header("cublas_v2.h"):
        return how + "."
    stub = llmc.cublas_stub(work / "cublas-stub")
    os.environ["NVCC_APPEND_FLAGS"] = f"{os.environ.get('NVCC_APPEND_FLAGS', '')} -I{stub} -L{stub}".strip()
    return how + ("; this toolkit has no cuBLAS, so cuBLAS calls were compiled against stub declarations "
                  "(htam_core.bench.llmc.cublas_stub): the kernels and shims are checked, the cuBLAS calls are not.")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 (also when the llm.c folder is absent: it says so and skips)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llmc", default=os.environ.get("HTAM_LLMC") or str(DEFAULTS["llmc"]),
                    help="llm.c dev/cuda folder (default: $HTAM_LLMC, else %(default)s)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"), help="results folder")
    ap.add_argument("--work", default=None, help="work folder for the work copies (default: a temporary one)")
    ap.add_argument("--budget", type=int, default=4, help="optimize budget per kernel (GPU)")
    ap.add_argument("--trials", type=int, default=30, help="timed trials per measurement (GPU)")
    ap.add_argument("--max-minutes", type=float, default=None, help="stop cleanly after this many minutes")
    ap.add_argument("--kernels", default="", help="comma-separated file stems to run (default: all)")
    ap.add_argument("--static", action="store_true", help="static mode even with a GPU")
    ap.add_argument("--fresh", action="store_true", help="ignore the rows of an earlier run of the same day")
    ap.add_argument("--tag", default="", help="suffix of the result files' names")
    ap.add_argument("--no-build", action="store_true",
                    help="static mode: do not compile the harnesses with nvcc (reach and inference only)")
    ap.add_argument("--date", default=None, help="the date in the result files' names (default: today)")
    args = ap.parse_args(argv)
    root = Path(args.llmc)
    if not root.is_dir():
        _log(f"[llmc] skipped: no llm.c folder at {root}; pass --llmc PATH (a checkout's dev/cuda)")
        return 0
    from htam_core.profile.api import gpu_available

    mode = "static" if args.static or not gpu_available() else "gpu"
    date = args.date or _dt.date.today().isoformat()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"llmc-{mode}-{date}{('-' + args.tag) if args.tag else ''}"
    stream = stem.with_suffix(".jsonl")
    if args.fresh:
        stream.unlink(missing_ok=True)
    done = _done_rows(stream)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="htam-llmc-"))
    memory = str(work / "memory.sqlite3")
    deadline = time.time() + args.max_minutes * 60 if args.max_minutes else None
    wanted = {k.strip() for k in args.kernels.split(",") if k.strip()}
    entries = [e for e in llmc.discover(root) if not wanted or e.name in wanted]
    device = "CPU (static mode)"
    build_note = None
    if mode == "static" and not args.no_build:
        build_note = _setup_static_build(work)
    build = build_note is not None and not build_note.startswith("Builds: not checked")
    if mode == "gpu":
        import torch

        device = torch.cuda.get_device_name()
    _log(f"[llmc] {len(entries)} files, mode {mode}, {len(done)} rows already in {stream.name}")
    rows: list[dict[str, Any]] = []
    for i, e in enumerate(entries, 1):
        if e.name in done and mode == "gpu" and needs_expert_check(done[e.name]) and \
                (deadline is None or time.time() < deadline):
            t0 = time.time()
            row = recheck_experts(done[e.name], e, work, args.trials, deadline)
            row["experts_wall_s"] = round(time.time() - t0, 1)
            if all("verified" in x for x in row.get("experts") or []) and \
                    not any("time budget" in (x.get("note") or "") for x in row.get("experts") or []):
                with stream.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")  # the later line of a file wins on resume
            rows.append(row)
            _log(f"[llmc] {i}/{len(entries)} {e.name}: engine done earlier; experts verified again: "
                 f"{_expert_cell(row)} ({row['experts_wall_s']} s)")
            continue
        if e.name in done:
            rows.append(done[e.name])
            _log(f"[llmc] {i}/{len(entries)} {e.name}: done earlier")
            continue
        if deadline is not None and time.time() >= deadline:
            _log(f"[llmc] {i}/{len(entries)} {e.name}: not run (--max-minutes spent); rerun to resume")
            continue
        t0 = time.time()
        row = static_row(e, work, build=build, deadline=deadline) if mode == "static" else \
            gpu_row(e, work, args.budget, args.trials, memory, deadline)
        row["wall_s"] = round(time.time() - t0, 1)
        if deadline is not None and time.time() >= deadline and mode == "gpu":
            row["complete"] = False  # cut by the budget: measured again on a rerun
        with stream.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        rows.append(row)
        made = sum(1 for s in row.get("steps") or [] if s["makeable"] and s["structural"])
        extra = (f", naive {_fmt(row.get('naive_ms'))} ms -> {_fmt(row.get('best_ms'))} ms, expert "
                 f"{_fmt(row.get('expert_ms'))} ms" if mode == "gpu" else "")
        if row.get("naive_build"):
            extra += f", naive builds: {_naive_build_cell(row)}, experts built: {_experts_built_cell(row)}"
        _log(f"[llmc] {i}/{len(entries)} {e.name}: {made} makeable structural steps, harness "
             f"{row.get('harness') or 'not inferred'}{extra} ({row['wall_s']} s)")
    meta = {"date": date, "device": device, "llmc": root.name, "build": build_note,
            "command": command_line(argv if argv is not None else sys.argv[1:])}
    stem.with_suffix(".md").write_text(markdown(rows, mode, meta), encoding="utf-8")
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "mode": mode, "rows": rows}, indent=1),
                                         encoding="utf-8")
    _log(f"[llmc] wrote {stem.with_suffix('.md')} and .json ({len(rows)} of {len(entries)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
