"""Compare the kernels ``htam`` finds in each corpus file with the entry functions the compiler sees.

For every ``.cu``/``.cuh`` file of each corpus folder, nvcc compiles it to PTX (``nvcc -arch=sm_90 -ptx``,
with ``-I`` for the file's folder and cuda-samples' ``Common/``); the ``.entry`` names of the PTX, demangled
with ``c++filt`` and cut to their unqualified name, are the kernels nvcc accepts. A file nvcc cannot compile
here is listed as such and not counted. Only entries whose body comes from the file itself count (the first
``.loc`` of the entry, with ``-lineinfo``, names the file), not those of headers it includes. For ``.py`` files the Triton kernels are the functions decorated with
``triton.jit`` (``@triton.jit``, ``@triton.jit(...)``, ``@jit``), read with Python's ``ast``; a jit helper that
htam lists as a device function of the file counts as found.

Per folder the table counts: files, files nvcc could not compile, kernels htam found, compiler entries, entries
htam missed, kernels marked incomplete, tracebacks (an exception other than ``SourceError`` while loading a
file or analyzing one of its kernels). nvcc's answers are cached by file content in ``--cache``, so a second
run only re-reads the files with htam.

Run:  python bench/corpus_kernels.py [--corpus /work/shared/corpus] [--out bench/results/corpus-kernels-DATE]
Skips (exit 0, one line) when the corpus is absent.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.data_paths import CORPUS  # noqa: E402
from htam_core.profile.static_cuda import entry_base_name  # noqa: E402
from htam_core.source import SourceError, load  # noqa: E402
from htam_core.source.analysis import analyze  # noqa: E402

NVCC_FLAGS = ["-arch=sm_90", "-ptx", "-lineinfo", "-std=c++17", "-w"]
ENTRY_RE = re.compile(r"^\s*\.(?:visible\s+)?\.entry\s+([A-Za-z_$][\w$]*)", re.M)
FILE_RE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', re.M)
LOC_RE = re.compile(r"^\s*\.loc\s+(\d+)\s", re.M)


def own_entries(ptx: str, path: Path) -> list[str]:
    """Mangled ``.entry`` names of ``ptx`` whose body comes from ``path`` itself (its first ``.loc`` names
    that file), not from a header it includes (cub, thrust, a sample's ``*_kernel.cuh``)."""
    files = {n: Path(f).resolve() for n, f in FILE_RE.findall(ptx)}
    want = path.resolve()
    out = []
    marks = list(ENTRY_RE.finditer(ptx))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(ptx)
        loc = LOC_RE.search(ptx, m.end(), end)
        if loc is not None and files.get(loc.group(1)) == want:
            out.append(m.group(1))
    return out


def folders(corpus: Path) -> list[tuple[str, Path]]:
    """The corpus folders to scan: ``dev``, ``llmc`` and each folder under ``public`` (that exist)."""
    out = [(n, corpus / n) for n in ("dev", "llmc") if (corpus / n).is_dir()]
    pub = corpus / "public"
    if pub.is_dir():
        out += [(f"public/{p.name}", p) for p in sorted(pub.iterdir()) if p.is_dir()]
    return out


def base_name(demangled: str) -> str:
    """``ns::k<float, 4>(float*, int)`` -> ``k``: the unqualified name of a demangled entry (the engine's rule,
    :func:`htam_core.profile.static_cuda.entry_base_name`)."""
    return entry_base_name(demangled)


def nvcc_entries(path: Path, corpus: Path, cache: Path, extra: tuple[str, ...] = ()) -> dict:
    """``{"ok": bool, "entries": [names], "error": str}`` for ``path`` compiled to PTX (cached by content). A file
    that launches kernels from device code is compiled again with ``-rdc=true`` (CUDA dynamic parallelism)."""
    if not extra:
        first = nvcc_entries(path, corpus, cache, ("",))
        if not first["ok"] and "separate compilation" in first["error"]:
            return nvcc_entries(path, corpus, cache, ("-rdc=true",))
        return first
    extra = tuple(e for e in extra if e)
    data = path.read_bytes()
    includes = [path.parent, corpus / "public" / "cuda-samples" / "Common"]
    flags = [*NVCC_FLAGS, *extra]
    key = hashlib.sha256(data + str(path).encode() + " ".join(flags).encode() + b"v2").hexdigest()
    hit = cache / f"{key}.json"
    if hit.exists():
        return json.loads(hit.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "out.ptx"
        cmd = ["nvcc", *flags, "-x", "cu", *[f"-I{p}" for p in includes], str(path), "-o", str(ptx)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            ok = proc.returncode == 0 and ptx.exists()
            lines = proc.stderr.strip().splitlines()
            err = "" if ok else next((ln for ln in lines if "error" in ln), lines[0] if lines else "nvcc failed")[:200]
            mangled = own_entries(ptx.read_text(), path) if ok else []
        except subprocess.TimeoutExpired:
            ok, err, mangled = False, "nvcc timed out", []
    names: list[str] = []
    if mangled:
        demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True).stdout
        names = sorted({base_name(d) for d in demangled.splitlines()})
    result = {"ok": ok, "entries": names, "error": err}
    hit.write_text(json.dumps(result))
    return result


def triton_entries(path: Path) -> dict:
    """``{"ok": bool, "entries": [names]}``: functions of ``path`` decorated with ``triton.jit``/``jit``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError) as exc:
        return {"ok": False, "entries": [], "error": str(exc)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                d = d.func if isinstance(d, ast.Call) else d
                dotted = ast.unparse(d)
                if dotted in ("triton.jit", "jit", "tl.jit"):
                    names.add(node.name)
    return {"ok": True, "entries": sorted(names), "error": ""}


def htam_scan(path: Path) -> dict:
    """Kernels htam finds in ``path``, those marked incomplete, and any traceback (load, then ``analyze``)."""
    out: dict = {"found": [], "helpers": [], "incomplete": [], "tracebacks": []}
    try:
        model = load(path)
    except SourceError as exc:
        out["refused"] = str(exc)
        return out
    except Exception:  # noqa: BLE001 - the benchmark counts every traceback
        out["tracebacks"].append(traceback.format_exc(limit=3).splitlines()[-1])
        return out
    out["helpers"] = [d.name for d in model.device_functions]
    for k in model.kernels:
        out["found"].append(k.name)
        if k.incomplete:
            out["incomplete"].append(k.name)
        try:
            analyze(model, k)
        except Exception:  # noqa: BLE001
            out["tracebacks"].append(f"{k.name}: " + traceback.format_exc(limit=3).splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    """Scan the corpus, write ``table.md`` and ``table.json``; return the exit status (0)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    today = datetime.date.today().isoformat()
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / f"corpus-kernels-{today}")
    ap.add_argument("--cache", type=Path,
                    default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "htam-corpus-nvcc")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    todo = folders(args.corpus)
    if not todo:
        print(f"corpus_kernels: no corpus at {args.corpus}; nothing to compare")
        return 0
    has_nvcc = shutil.which("nvcc") is not None and shutil.which("c++filt") is not None
    args.cache.mkdir(parents=True, exist_ok=True)
    rows, files_out = [], []
    for label, folder in todo:
        files = sorted(p for p in folder.rglob("*") if p.suffix in (".cu", ".cuh", ".py") and p.is_file())
        cuda = [p for p in files if p.suffix != ".py"]
        with ThreadPoolExecutor(args.jobs) as pool:
            comp = dict(zip(cuda, pool.map(lambda p: nvcc_entries(p, args.corpus, args.cache), cuda), strict=True)) \
                if has_nvcc else {}
        row = {"folder": label, "files": len(files), "not_compiled": 0, "found": 0, "entries": 0, "missed": 0,
               "incomplete": 0, "tracebacks": 0}
        for p in files:
            ref = triton_entries(p) if p.suffix == ".py" else comp.get(p, {"ok": False, "entries": [],
                                                                              "error": "nvcc not found"})
            got = htam_scan(p)
            # a triton.jit helper is found as a device function of the file (nvcc's entries are kernels only)
            found = set(got["found"]) | (set(got["helpers"]) if p.suffix == ".py" else set())
            missed = sorted(set(ref["entries"]) - found) if ref["ok"] else []
            row["found"] += len(got["found"])
            row["incomplete"] += len(got["incomplete"])
            row["tracebacks"] += len(got["tracebacks"])
            if ref["ok"]:
                row["entries"] += len(ref["entries"])
                row["missed"] += len(missed)
            else:
                row["not_compiled"] += 1
            error = ref.get("error", "")
            files_out.append({"file": str(p.relative_to(args.corpus)), "compiled": ref["ok"],
                              "compiler_error": error.replace(str(args.corpus) + "/", ""),  # corpus-relative paths "entries": ref["entries"],
                              "found": got["found"], "missed": missed, "incomplete": got["incomplete"],
                              "tracebacks": got["tracebacks"]})
        rows.append(row)
        print(json.dumps(row), flush=True)
    command = "python bench/corpus_kernels.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.json").write_text(json.dumps({"command": command.strip(), "nvcc_flags": NVCC_FLAGS,
                                                     "nvcc": has_nvcc, "folders": rows, "files": files_out},
                                                    indent=1) + "\n")
    cols = ["folder", "files", "not_compiled", "found", "entries", "missed", "incomplete", "tracebacks"]
    lines = [f"# Corpus kernels ({today})", "", f"Command: `{command.strip()}`", "",
             "entries: `.entry` functions of `nvcc " + " ".join(NVCC_FLAGS) + "` (CUDA) or `triton.jit` "
             "functions (Python); not_compiled files are not counted.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    problems = [f for f in files_out if f["missed"] or f["incomplete"] or f["tracebacks"]]
    if problems:
        lines += ["", "## Files with a miss, an incomplete kernel or a traceback", ""]
        lines += [f"- `{f['file']}`: missed {f['missed']}, incomplete {f['incomplete']}, "
                  f"tracebacks {f['tracebacks']}" for f in problems]
    failed = [f for f in files_out if not f["compiled"]]
    if failed:
        lines += ["", "## Files the compiler did not accept here (not counted)", ""]
        lines += [f"- `{f['file']}`: {f['compiler_error']}" for f in failed]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}/table.md and table.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
