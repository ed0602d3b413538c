"""Does the HTAM memory guide a real (small, local) LLM? Triton kernels on the CPU interpreter, per policy.

Each (kernel, policy) pair runs ``htam optimize`` in static mode (Triton candidates checked with the Triton
interpreter) with budget 3, and appends one JSON line to ``<out>/results.jsonl``; a rerun skips the pairs already
there, so an interrupted run continues where it stopped. Policies:

- ``htam``: the LLM engine, HTAM ranking, one memory per policy that grows over the run;
- ``flat``: the LLM engine, HTAM with the ``flat`` ablation (no hierarchy), its own growing memory;
- ``none``: the LLM engine, random strategy order, a fresh empty memory per kernel and nothing recorded;
- ``rules``: the mechanical transforms beside them (HTAM ranking, its own memory), no LLM.

Each line reports the candidates made, those verified correct under the interpreter, every LLM reply and how it
was accounted for (a checked candidate, an endpoint fault, or no code), the strategies passed over because the reply
was a kernel already evaluated in the run (such a reply spends a request but no budget), and the model's tokens per
second over the run's replies. ``--measure`` first times both local models on one fixed prompt and writes ``tokens_per_s.json``.

Kernels (read by path, never copied): the Triton kernels of ``bench/suite``, the KernelBench pairs of
``tests/fixtures/corpus``, and the naive Triton starts of ``bench/kernelbench_solutions/level1`` paired with their
KernelBench problem (when the problems file exists: ``bench/data_paths.py``) at the small CPU sizes of
``bench/kernelbench_small_sizes.json``.

Usage (the server is started here, on 127.0.0.1, from ``htam llm``'s model cache)::

    python bench/bench_llm_guidance.py --model smollm2 --out bench/results/llm-guidance-smollm2 [--measure]
        [--limit N] [--kernels NAME,...] [--policies htam,flat,none,rules] [--python PY]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.data_paths import KERNELBENCH_PROBLEMS  # noqa: E402
from htam_core.generate.config import LLMConfig  # noqa: E402
from htam_core.generate.local_model import (  # noqa: E402
    MODELS,
    PYTHON_ENV,
    LocalServer,
    fetch_model,
    llama_cpp_missing,
)

POLICIES = ("htam", "flat", "none", "rules")
#: The key variable set for the local server (it accepts any key).
KEY_ENV = "HTAM_BENCH_LOCAL_LLM_KEY"
MEASURE_PROMPT = ("Write a Triton kernel that adds two float32 vectors of length N with a mask, and the Python "
                  "function that launches it. Reply with one Python code block.")


@dataclass(frozen=True)
class BenchKernel:
    """One kernel of the benchmark: a file (with its harness or ``_ref.py`` pair) and the kernel's name."""

    name: str
    path: Path
    kernel: str
    ref_code: str | None = None  # a KernelBench problem's code: written next to a copy of the start


def _suite_kernels() -> list[BenchKernel]:
    man = json.loads((REPO / "bench/suite/manifest.json").read_text())
    return [BenchKernel(f"suite/{k['file']}", REPO / "bench/suite" / k["file"], k["kernel"])
            for k in man["kernels"] if k["lang"] == "triton"]


def _first_triton_kernel(path: Path) -> str | None:
    from htam_core.source import load

    ks = [k for k in load(path).kernels if k.language == "triton"]
    return ks[0].name if ks else None


def _corpus_pairs() -> list[BenchKernel]:
    out = []
    for ref in sorted((REPO / "tests/fixtures/corpus").glob("kb_*_ref.py")):
        start = ref.with_name(ref.name.removesuffix("_ref.py") + ".py")
        name = _first_triton_kernel(start) if start.is_file() else None
        if name:
            out.append(BenchKernel(f"corpus/{start.name}", start, name))
    return out


def _kernelbench_pairs() -> list[BenchKernel]:
    problems = Path(os.environ.get("HTAM_KB_PROBLEMS") or KERNELBENCH_PROBLEMS)
    if not problems.is_file():
        return []
    from htam_core.bench.kernelbench import find_start_solution, load_problems, reference_code

    sizes = json.loads((REPO / "bench/kernelbench_small_sizes.json").read_text())
    out = []
    for p in load_problems(problems, levels=[1]):
        start = find_start_solution(REPO / "bench/kernelbench_solutions", 1, p.problem_id)
        over = sizes.get(f"1/{p.problem_id}")
        name = _first_triton_kernel(start) if start and over else None
        if start and name:
            out.append(BenchKernel(f"kb1/{start.name}", start, name, reference_code(p, over)))
    return out


def all_kernels() -> list[BenchKernel]:
    """Every kernel of the benchmark, in a fixed order."""
    return _suite_kernels() + _corpus_pairs() + _kernelbench_pairs()


def _done(results: Path) -> set[tuple[str, str]]:
    if not results.is_file():
        return set()
    keys = set()
    for line in results.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if not fault_only(r):
                keys.add((r["kernel"], r["policy"]))
    return keys


def fault_only(rec: dict[str, Any]) -> bool:
    """True for a line of the LLM engine whose requests all failed (no reply came back: a server too slow for
    ``--timeout``): it says nothing about the model, so a rerun runs that (kernel, policy) again and the summary
    keeps the last line of each pair."""
    rep = rec.get("replies") or {}
    return (rec.get("engine") == "llm" and rec.get("status") == "ok" and rep.get("replies", 0) == 0
            and rec.get("endpoint_faults", 0) > 0)


def _prepare(k: BenchKernel, work: Path) -> Path:
    """The file to optimize: the kernel itself, or for a KernelBench pair a copy next to its reference."""
    if k.ref_code is None:
        return k.path
    work.mkdir(parents=True, exist_ok=True)
    stem = "p_" + k.path.stem.replace("-", "_")
    (work / f"{stem}_ref.py").write_text(k.ref_code)
    dst = work / f"{stem}.py"
    dst.write_text(k.path.read_text())
    return dst


def _replies(log: Path) -> dict[str, Any]:
    """Every reply in an ``llm.jsonl`` and how it was accounted for, with completion tokens and seconds."""
    if not log.is_file():
        return {"requests": 0, "replies": 0, "checked": 0, "no_code": 0, "errors": 0, "unaccounted": 0,
                "prompt_tokens": 0, "completion_tokens": 0, "reply_s": 0.0}
    recs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    ev = [r["event"] for r in recs]
    out = {"requests": ev.count("request"), "replies": ev.count("reply"), "checked": 0, "no_code": 0, "errors": 0,
           "unaccounted": 0, "prompt_tokens": 0, "completion_tokens": 0, "reply_s": 0.0}
    for i, r in enumerate(recs):
        if r["event"] != "reply":
            continue
        nxt = recs[i + 1] if i + 1 < len(recs) else None
        if nxt is None:
            out["unaccounted"] += 1
        elif nxt["event"] == "check":
            out["checked" if "contains no code" not in (nxt.get("error_text") or "") else "no_code"] += 1
        elif nxt["event"] == "parse_error":
            out["no_code"] += 1
        elif nxt["event"] == "error":
            out["errors"] += 1
        else:
            out["unaccounted"] += 1
        if "completion_tokens" in r:  # recorded per reply by the engine
            usage = {"prompt_tokens": r.get("prompt_tokens"), "completion_tokens": r.get("completion_tokens")}
        else:
            try:
                usage = json.loads(r.get("body") or "{}").get("usage") or {}
            except json.JSONDecodeError:
                usage = {}
        out["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
        out["completion_tokens"] += int(usage.get("completion_tokens") or 0)
        out["reply_s"] += float(r.get("elapsed_s") or 0.0)
    return out


def run_one(k: BenchKernel, policy: str, out: Path, llm: dict[str, Any]) -> dict[str, Any]:
    """Optimize ``k`` with ``policy`` (budget 3, static); the result line."""
    from htam_core.optimize import OptimizeError, OptimizeTask, run_optimize

    slug = k.name.replace("/", "__")
    run_dir = out / "runs" / policy / slug
    path = _prepare(k, out / "work" / slug)
    engine = "rules" if policy == "rules" else "llm"
    memory = out / "memory" / (f"{policy}.sqlite3" if policy != "none" else f"none-{slug}.sqlite3")
    memory.parent.mkdir(parents=True, exist_ok=True)
    if policy == "none":
        memory.unlink(missing_ok=True)
    task = OptimizeTask(path=str(path), kernel=k.kernel, engine=engine, budget=3,
                        policy="random" if policy == "none" else "htam", ablation="flat" if policy == "flat" else None,
                        out_dir=str(run_dir), memory_path=str(memory), static=True, record=policy != "none",
                        llm=llm if engine == "llm" else None, use_ncu=False)
    t0 = time.time()
    base: dict[str, Any] = {"kernel": k.name, "kernel_name": k.kernel, "policy": policy, "engine": engine,
                            "model": llm.get("model") if engine == "llm" else None, "budget": 3,
                            "max_tokens": llm.get("max_tokens") if engine == "llm" else None,
                            "timeout_s": llm.get("timeout_s") if engine == "llm" else None}
    try:
        res = run_optimize(task)
    except OptimizeError as exc:
        return {**base, "status": "error", "error": str(exc)[:500], "wall_s": round(time.time() - t0, 1)}
    steps = [{"strategy": s.strategy, "status": s.status, "correct": s.correct,
              "fault": s.params.get("fault") if s.status == "endpoint_fault" else None,
              "candidate": (os.path.relpath(s.candidate_path, out) if s.candidate_path else None)}
             for s in res.steps]
    made = [s for s in steps if s["status"] != "endpoint_fault"]
    rep = _replies(run_dir / "llm.jsonl")
    tok_s = rep["completion_tokens"] / rep["reply_s"] if rep["reply_s"] > 0 else None
    return {**base, "status": "ok", "steps": steps, "candidates": len(made),
            "correct": sum(1 for s in made if s["correct"] is True),
            "refused_or_wrong": sum(1 for s in made if s["status"] in ("incorrect", "failed")),
            "endpoint_faults": sum(1 for s in steps if s["status"] == "endpoint_fault" and s["fault"] != "repeat"),
            "replies": rep,
            # replies whose code was a kernel already evaluated in the run: one step of the budget each, no candidate
            "already_evaluated": sum(1 for s in steps if s["fault"] == "repeat"),
            "start": os.path.relpath(path, out) if k.ref_code is not None else str(k.path.relative_to(REPO)),
            "tokens_per_s": round(tok_s, 2) if tok_s else None, "warnings": res.warnings[:5],
            "wall_s": round(time.time() - t0, 1)}


def measure_tokens_per_s(spec_key: str, python: str, max_tokens: int = 128) -> dict[str, Any]:
    """Serve ``spec_key``, send :data:`MEASURE_PROMPT` twice (the first warms the server up) and time the second."""
    spec = MODELS[spec_key]
    path = fetch_model(spec)
    t0 = time.time()
    with LocalServer(path, spec, python=python, log=path.parent / "measure-server.log") as srv:
        start_s = time.time() - t0
        body = json.dumps({"model": spec.name, "max_tokens": max_tokens, "temperature": 0.0,
                           "messages": [{"role": "user", "content": MEASURE_PROMPT}]}).encode()
        runs = []
        for _ in range(2):
            req = urllib.request.Request(f"{srv.base_url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": "Bearer local"})
            t = time.time()
            with urllib.request.urlopen(req, timeout=600) as r:  # noqa: S310 - loopback
                data = json.loads(r.read())
            runs.append((time.time() - t, data.get("usage") or {}))
    secs, usage = runs[-1]
    comp = int(usage.get("completion_tokens") or 0)
    return {"model": spec_key, "served_as": spec.name, "server_start_s": round(start_s, 1),
            "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": comp, "seconds": round(secs, 2),
            "tokens_per_s": round(comp / secs, 2) if secs > 0 else None, "threads": os.cpu_count(),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or continue it); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=tuple(MODELS), default="smollm2")
    ap.add_argument("--out", type=Path, default=REPO / "htam-bench-out" / "llm-guidance")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (suite/x.py, kb1/19_ReLU.py, ...)")
    ap.add_argument("--limit", type=int, default=0, help="run at most this many kernels (0: all)")
    ap.add_argument("--measure", action="store_true", help="first measure tokens/s of both models")
    ap.add_argument("--python", default=os.environ.get(PYTHON_ENV) or sys.executable,
                    help="interpreter with llama-cpp-python[server]")
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--timeout", type=float, default=300.0, help="--llm-timeout per request (s)")
    ap.add_argument("--list", action="store_true", help="list the kernels and exit")
    args = ap.parse_args(argv)
    args.out = args.out.resolve()
    kernels = all_kernels()
    if args.kernels:
        want = set(args.kernels.split(","))
        kernels = [k for k in kernels if k.name in want]
    if args.limit:
        kernels = kernels[:args.limit]
    if args.list:
        for k in kernels:
            print(f"{k.name}\t{k.kernel}")
        return 0
    policies = [p for p in args.policies.split(",") if p]
    bad = [p for p in policies if p not in POLICIES]
    if bad:
        print(f"unknown policies {bad}; known: {', '.join(POLICIES)}", file=sys.stderr)
        return 2
    missing = llama_cpp_missing(args.python)
    if missing:
        print(missing, file=sys.stderr)
        return 1
    os.environ.setdefault("TRITON_INTERPRET", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.measure:
        tps = [measure_tokens_per_s(m, args.python) for m in MODELS]
        (args.out / "tokens_per_s.json").write_text(json.dumps(tps, indent=1) + "\n")
        print(json.dumps(tps, indent=1))
    results = args.out / "results.jsonl"
    done = _done(results)
    todo = [(k, p) for k in kernels for p in policies if (k.name, p) not in done]
    print(f"{len(kernels)} kernels x {len(policies)} policies: {len(done)} done before, {len(todo)} to run")
    if not todo:
        return 0
    spec = MODELS[args.model]
    os.environ[KEY_ENV] = "sk-local-no-auth"
    with contextlib.ExitStack() as stack:
        llm: dict[str, Any] = {}
        if any(p != "rules" for _, p in todo):  # the rules engine alone needs no server
            srv = stack.enter_context(LocalServer(fetch_model(spec), spec, python=args.python,
                                                  log=args.out / "server.log"))
            llm = LLMConfig(base_url=srv.base_url, model=spec.name, api_key_env=KEY_ENV, timeout_s=args.timeout,
                            max_tokens=args.max_tokens, max_repairs=1, max_faults=3).to_json()
        for k, p in todo:
            rec = run_one(k, p, args.out, llm)
            with results.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(f"{k.name} {p}: {rec['status']} candidates={rec.get('candidates')} correct={rec.get('correct')} "
                  f"tok/s={rec.get('tokens_per_s')} {rec['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
