"""Per step: on how many kernels of the public corpus it is offered, and on how many it is made.

Over every kernel of every ``.cu``/``.cuh``/``.py`` file under the public corpus (NVIDIA cuda-samples and
Liger-Kernel's Triton ops, read in place, never copied), for every knowledge-base strategy of the kernel's
language that has a mechanical transform:

* **offered**: the strategy's predicate is not false on the kernel's facts (the ranker keeps it,
  :meth:`htam_core.memory.Ranker`) and its transform makes a validated edit
  (:func:`htam_core.transforms.registry.resolve_step`, the path a click on the code action takes): a makeable
  code action;
* **made**: the first candidate of an offered step compiles: for CUDA, the whole edited file with
  ``nvcc -arch=sm_90 -ptx`` (``-I`` the file's folder and cuda-samples' ``Common/``); for Triton, with
  ``--triton-compile`` only, the edited kernel AOT-compiled for sm_90
  (:func:`htam_core.profile.static_triton.compile_triton_kernel`, no GPU; Liger's ops import from
  ``liger_kernel``, so a package whose ``ops`` links to the corpus folder is put on ``PYTHONPATH``). The Liger
  kernels cannot be run here (no inputs or harness), so the Triton interpreter does not judge them. When the
  *original* file does not compile here (a missing third-party header or module), or Triton edits are not
  compiled, the offer is counted as *unchecked*, not as made or failed.

The candidates of ``--sample`` offers (spread over the steps, seeded) are written as unified diffs for the hand
check into ``--sample-dir`` (default: a new temporary folder): never into the repository, since the diffs quote
the third-party code. nvcc's answers are cached by content in ``--cache``.

Run:  python bench/corpus_steps.py [--corpus PUBLIC_DIR] [--out bench/results/corpus-steps-DATE] [--no-compile]
The corpus folder defaults to ``public`` under :data:`bench.data_paths.CORPUS` (``$HTAM_CORPUS`` overrides the
corpus root). Skips (exit 0, one line) when it is absent.
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.data_paths import CORPUS  # noqa: E402
from htam_core.memory.facts import compute_facts  # noqa: E402
from htam_core.memory.knowledge import load_knowledge  # noqa: E402
from htam_core.source import SourceError, load, parse_text  # noqa: E402
from htam_core.transforms.registry import resolve_step  # noqa: E402

NVCC_FLAGS = ["-arch=sm_90", "-ptx", "-std=c++17", "-w"]


def nvcc_ok(text: str, src: Path, common: Path, cache: Path, includes: tuple[Path, ...] = ()) -> tuple[bool, str]:
    """Whether ``text`` (a CUDA file that lives at ``src``) compiles to PTX for sm_90, and nvcc's first error line
    (cached by content in ``cache``). ``-rdc=true`` is tried when nvcc asks for separate compilation.
    ``includes``: more ``-I`` folders (a compile-check stand-in for a library header the toolkit lacks)."""
    extra = str(includes).encode() if includes else b""
    key = hashlib.sha256(text.encode() + str(src).encode() + extra + b"steps-v1").hexdigest()
    hit = cache / f"{key}.json"
    if hit.exists():
        ok, err = json.loads(hit.read_text())
        return bool(ok), str(err)
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / (src.stem + ".cu")
        f.write_text(text, encoding="utf-8")
        ok, err = False, ""
        for extra in ([], ["-rdc=true"]):
            cmd = ["nvcc", *NVCC_FLAGS, *extra, "-x", "cu", f"-I{src.parent}", f"-I{common}",
                   *[f"-I{i}" for i in includes], str(f),
                   "-o", str(Path(tmp) / "out.ptx")]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                ok, err = False, "nvcc timed out"
                break
            ok = proc.returncode == 0
            lines = proc.stderr.strip().splitlines()
            err = "" if ok else next((ln for ln in lines if "error" in ln), lines[0] if lines else "nvcc failed")
            err = err.replace(tmp + "/", "")[:200]
            if ok or "separate compilation" not in proc.stderr:
                break
    hit.write_text(json.dumps([ok, err]))
    return ok, err


def triton_ok(text: str, src: Path, kernel_name: str) -> tuple[bool, str]:
    """Whether kernel ``kernel_name`` of the Triton file ``text`` (living at ``src``) AOT-compiles for sm_90."""
    from htam_core.profile.static_triton import compile_triton_kernel
    from htam_core.types.errors import ProfileError

    try:
        model = parse_text(text, "python", path=str(src))
    except (SourceError, TypeError):
        model = parse_text(text, "python")
    kernel = next((k for k in model.kernels if k.name == kernel_name), None)
    if kernel is None:
        return False, f"{kernel_name} not found after the edit"
    try:
        compile_triton_kernel(model, kernel, timeout_s=120)
    except ProfileError as exc:
        return False, str(exc).splitlines()[0][:200] if str(exc) else "compile failed"
    except Exception as exc:  # noqa: BLE001 - the benchmark counts any failure as not compiled
        return False, f"{type(exc).__name__}: {str(exc)[:160]}"
    return True, ""


#: The three helpers Liger's ops import from ``liger_kernel.utils`` (a module outside ``ops/``, so not in the corpus),
#: written here for a CUDA device: enough for the ops to import, so Triton can compile their kernels.
_LIGER_UTILS = '''"""Stand-ins written by htam's corpus benchmark: the device queries Liger's ops import."""


def infer_device():
    return "cuda"


def infer_device_arch():
    return "cuda"


def is_npu_available():
    return False
'''


def liger_package(liger: Path, into: Path) -> Path:
    """A ``liger_kernel`` package under ``into`` whose ``ops`` is the corpus folder ``liger`` (a link, nothing
    copied) and whose ``utils`` holds :data:`_LIGER_UTILS`; returns ``into`` (put it on ``PYTHONPATH``)."""
    pkg = into / "liger_kernel"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(_LIGER_UTILS)
    if not (pkg / "ops").exists():
        (pkg / "ops").symlink_to(liger.resolve(), target_is_directory=True)
    return into


def files_of(corpus: Path) -> list[Path]:
    """Every kernel file under ``corpus`` (sorted): ``.cu``, ``.cuh`` and ``.py``."""
    return sorted(p for p in corpus.rglob("*") if p.suffix in (".cu", ".cuh", ".py") and p.is_file())


def offers_of(path: Path, corpus: Path, kb: Any) -> tuple[list[dict[str, Any]], int, str | None]:
    """``(offers, kernels, error)`` of one file: one dict per (kernel, strategy) whose predicate is not false,
    with ``offered`` and, when offered, the first candidate's text (``_text``, dropped before writing) and
    description; the number of complete kernels; the load error, if any."""
    try:
        model = load(path)
    except (SourceError, OSError, UnicodeDecodeError) as exc:
        return [], 0, (str(exc).splitlines() or [type(exc).__name__])[0]
    out: list[dict[str, Any]] = []
    n = 0
    rel = str(path.relative_to(corpus))
    for k in model.kernels:
        if k.incomplete:
            continue
        n += 1
        out += [{"file": rel, **r} for r in kernel_offers(model, k, kb)]
    return out, n, None


def kernel_offers(model: Any, kernel: Any, kb: Any) -> list[dict[str, Any]]:
    """One dict per knowledge-base strategy with a transform whose predicate is not false on ``kernel`` of
    ``model``: ``kernel``, ``language``, ``step``, ``offered`` (the transform makes a validated edit), and either
    ``description`` plus the first candidate's file text (``_text``) and the original (``_orig``), or the
    refusal (``reason``). Runs every such transform (blocking)."""
    facts = compute_facts(kernel.features, kernel.language, None, kernel, model)
    lang = facts["language"]
    out: list[dict[str, Any]] = []
    for s in kb.strategies:
        if lang not in s.languages or not s.transform or s.applies.evaluate(facts) is False:
            continue
        res = resolve_step(s.title, s.transform, s.guidance, model, kernel, None, llm_hint="")
        row: dict[str, Any] = {"kernel": kernel.name, "language": kernel.language, "step": s.id,
                               "offered": isinstance(res, list) and bool(res)}
        if row["offered"]:
            row["description"] = res[0].description
            row["_text"] = res[0].new_text
            row["_orig"] = model.text
        else:
            row["reason"] = str(getattr(res, "reason", ""))[:300]
        out.append(row)
    return out


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per step: kernels considered (predicate not false), offered, made, failed to compile, unchecked."""
    by: dict[str, dict[str, Any]] = defaultdict(lambda: {"considered": 0, "offered": 0, "made": 0, "failed": 0,
                                                         "unchecked": 0, "language": ""})
    for r in rows:
        b = by[r["step"]]
        b["language"] = "triton" if r["language"] == "triton" else "cuda"
        b["considered"] += 1
        if r["offered"]:
            b["offered"] += 1
            c = r.get("compiles")
            b["made" if c is True else "failed" if c is False else "unchecked"] += 1
    return [{"step": k, **v} for k, v in sorted(by.items(), key=lambda kv: (kv[1]["language"], -kv[1]["offered"]))]


def markdown(meta: dict[str, Any], steps: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    """The Markdown report: header, the per-step table, and the compile failures."""
    triton = "Triton's AOT compiler" if meta.get("triton_compile") else "Triton edits not compiled (--triton-compile)"
    lines = ["# Steps on the public corpus", "", f"- date: {meta['date']}", f"- machine: {meta['machine']} (CPU "
             f"only, no GPU; compile checks with nvcc sm_90; {triton})",
             f"- command: `{meta['command']}`", f"- files: {meta['files']}, complete kernels: {meta['kernels']} "
             f"(CUDA {meta['kernels_cuda']}, Triton {meta['kernels_triton']}); files not loaded: "
             f"{meta['load_errors']}; wall: {meta.get('wall_s', '?')} s", "",
             "*considered*: kernels where the step's predicate is not false (the ranker keeps it); *offered*: its "
             "transform also makes a validated edit (a makeable code action); *made*: the first candidate "
             "compiles (nvcc `-arch=sm_90 -ptx` on the edited file, Triton AOT for sm_90 with `--triton-compile`); "
             "*failed*: it does not; *unchecked*: the original file does not compile here (a header or module the "
             "corpus lacks) or Triton edits were not compiled, so the edit could not be judged. What a reading of "
             "the offers found is in `hand-check.md` beside this table.", "",
             "| step | language | considered | offered | made | failed | unchecked |", "|---|---|---|---|---|---|---|"]
    for s in steps:
        lines.append(f"| {s['step']} | {s['language']} | {s['considered']} | {s['offered']} | {s['made']} | "
                     f"{s['failed']} | {s['unchecked']} |")
    tot = {k: sum(s[k] for s in steps) for k in ("considered", "offered", "made", "failed", "unchecked")}
    lines.append(f"| **all** | | {tot['considered']} | {tot['offered']} | {tot['made']} | {tot['failed']} | "
                 f"{tot['unchecked']} |")
    bad = [r for r in rows if r.get("compiles") is False]
    if bad:
        lines += ["", "## Offers whose edit does not compile", ""]
        lines += [f"- `{r['file']}` {r['kernel']} / {r['step']}: {r.get('compile_error', '')}".replace("|", "\\|")
                  for r in bad]
    return "\n".join(lines) + "\n"


def _shown(arg: str) -> str:
    """A command-line argument as the results show it: a path inside the repository relative to it, any other
    absolute path as ``PATH`` (the results name no machine's folders)."""
    if not arg.startswith("/"):
        return arg
    try:
        return str(Path(arg).resolve().relative_to(REPO))
    except ValueError:
        return "PATH"


def main(argv: list[str] | None = None) -> int:
    """Count the offers and the made steps; write ``table.json``, ``table.md`` and the sample diffs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(os.environ.get("HTAM_CORPUS", CORPUS))
    ap.add_argument("--corpus", type=Path, default=root / "public")
    today = datetime.date.today().isoformat()
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / f"corpus-steps-{today}")
    ap.add_argument("--cache", type=Path,
                    default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "htam-corpus-nvcc")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles (default 2)")
    ap.add_argument("--no-compile", action="store_true", help="count offers only")
    ap.add_argument("--triton-compile", action="store_true",
                    help="AOT-compile Triton edits (slow: minutes per Liger kernel on a small machine; many Liger "
                         "kernels do not compile here unedited); otherwise Triton offers are counted unchecked")
    ap.add_argument("--sample", type=int, default=40, help="offers written as diffs for the hand check")
    ap.add_argument("--sample-dir", type=Path, default=None,
                    help="where the sample diffs go (default: a new temporary folder; never inside the repository: "
                         "the diffs quote third-party code)")
    ap.add_argument("--only", default="", help="only files whose corpus path contains this text")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"corpus_steps: no corpus at {args.corpus}; nothing to count")
        return 0
    t0 = time.monotonic()
    kb = load_knowledge()
    common = args.corpus / "cuda-samples" / "Common"
    args.cache.mkdir(parents=True, exist_ok=True)
    has_nvcc = shutil.which("nvcc") is not None and not args.no_compile
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                            "machine": platform.node() or "unknown",
                            "command": "python bench/corpus_steps.py " + " ".join(
                                _shown(a) for a in (sys.argv[1:] if argv is None else argv)),
                            "triton_compile": args.triton_compile, "files": 0, "kernels": 0, "kernels_cuda": 0, "kernels_triton": 0, "load_errors": 0}
    files = [p for p in files_of(args.corpus) if args.only in str(p.relative_to(args.corpus))]
    if (args.corpus / "liger").is_dir() and args.triton_compile:  # before the first Triton worker starts
        shim = liger_package(args.corpus / "liger", Path(tempfile.mkdtemp(prefix="htam-liger-")))
        os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(shim), os.environ.get("PYTHONPATH")) if x)
    for p in files:
        got, n, err = offers_of(p, args.corpus, kb)
        meta["files"] += 1
        meta["kernels"] += n
        meta["kernels_triton" if p.suffix == ".py" else "kernels_cuda"] += n
        if err:
            meta["load_errors"] += 1
        offered = [r for r in got if r["offered"]]
        if offered and not args.no_compile:
            if p.suffix == ".py" and not args.triton_compile:
                for r in offered:
                    r["compiles"], r["compile_error"] = None, "Triton edits not compiled (--triton-compile not given)"
            elif p.suffix == ".py":
                base_ok, base_err = {}, {}
                for r in offered:
                    if r["kernel"] not in base_ok:
                        base_ok[r["kernel"]], base_err[r["kernel"]] = triton_ok(r["_orig"], p, r["kernel"])
                    if not base_ok[r["kernel"]]:
                        r["compiles"], r["compile_error"] = None, "original: " + base_err[r["kernel"]]
                    else:
                        r["compiles"], r["compile_error"] = triton_ok(r["_text"], p, r["kernel"])
            elif has_nvcc:
                ok0, err0 = nvcc_ok(offered[0]["_orig"], p, common, args.cache)
                if not ok0:
                    for r in offered:
                        r["compiles"], r["compile_error"] = None, "original: " + err0
                else:
                    with ThreadPoolExecutor(args.jobs) as pool:
                        res = list(pool.map(lambda r, p=p: nvcc_ok(r["_text"], p, common, args.cache), offered))
                    for r, (ok, e) in zip(offered, res, strict=True):
                        r["compiles"], r["compile_error"] = ok, e
        rows += got
        print(f"{p.relative_to(args.corpus)}: {n} kernels, {len(offered)} offers, "
              f"{sum(1 for r in offered if r.get('compiles') is True)} made", flush=True)
    meta["wall_s"] = round(time.monotonic() - t0, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    offers = [r for r in rows if r["offered"]]
    rng = random.Random(5)
    by_step: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in offers:
        by_step[r["step"]].append(r)
    picked: list[dict[str, Any]] = []
    while len(picked) < min(args.sample, len(offers)):  # round-robin over the steps: the sample spreads
        for step in sorted(by_step):
            if by_step[step] and len(picked) < args.sample:
                picked.append(by_step[step].pop(rng.randrange(len(by_step[step]))))
    sample = args.sample_dir or Path(tempfile.mkdtemp(prefix="htam-corpus-sample-"))
    sample.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(picked):
        diff = difflib.unified_diff(r["_orig"].splitlines(keepends=True), r["_text"].splitlines(keepends=True),
                                    r["file"], r["file"] + " (" + r["step"] + ")", n=3)
        (sample / f"{i:02d}-{r['step']}-{r['kernel']}.diff").write_text(
            f"# {r['file']} :: {r['kernel']} :: {r['step']}\n# {r['description']}\n" + "".join(diff))
    for r in rows:
        r.pop("_text", None)
        r.pop("_orig", None)
        if r.get("compile_error"):  # corpus-relative paths: the results name no machine's folders
            r["compile_error"] = r["compile_error"].replace(str(args.corpus.resolve()) + "/", "").replace(
                str(args.corpus) + "/", "")
    steps = summary(rows)
    (args.out / "table.json").write_text(json.dumps({"meta": meta, "steps": steps, "rows": rows}, indent=1))
    (args.out / "table.md").write_text(markdown(meta, steps, rows))
    print(f"wrote {args.out / 'table.md'} ({meta['wall_s']} s); sample diffs for the hand check in {sample}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
