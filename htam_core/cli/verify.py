"""``htam verify CANDIDATE [--harness PATH | --reference REF | --against START] [--kernel NAME] [--json]``.

Checks one candidate.

Every static reward-hack guard reads the file, then the correctness check runs it against its reference in
a worker process: on the GPU when there is one, through the Triton interpreter on the CPU, compile-only for
CUDA without a GPU (see :mod:`htam_core.verify.check`). Prints the verdict
``{"correct", "verified_on", "refused_by", "messages", "labels", ...}``.

Exit codes: 0 accepted; 1 refused by a rule, or unverified (compile-only is not correct, and not wrong
either: the message says so); 2 usage error (missing file, no harness and nothing refused, bad options).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from htam_core.cli.errors import UsageError, require_source


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``verify`` subcommand."""
    p = subparsers.add_parser(
        "verify", help="check one candidate with every guard and the correctness check",
        description="Check one candidate file (a KernelBench ModelNew file, or a Triton/CUDA file with an htam.toml "
                    "table) with every static reward-hack guard and the correctness check against its reference "
                    "(in a worker: GPU, Triton interpreter on the CPU, or compile-only for CUDA without a GPU). "
                    "Exit 0 accepted, 1 refused or unverified, 2 usage error.")
    p.add_argument("candidate", help="the candidate .py or .cu file")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--harness", metavar="PATH", help="an htam.toml (or its directory) describing the candidate")
    src.add_argument("--reference", metavar="REF",
                     help="the reference, as reference = of an htam.toml table takes it: file.py:function (the file "
                          "from the current folder), module:function or a torch expression over the inputs (it "
                          "replaces the reference of the candidate's harness); or, for a KernelBench ModelNew "
                          "candidate, a file with class Model, get_inputs() and get_init_inputs()")
    src.add_argument("--against", metavar="START_FILE",
                     help="check against the outputs of the starting kernel in START_FILE (same inputs, seeds and "
                          "guards: the oracle rule), with START_FILE's harness")
    p.add_argument("--kernel", metavar="NAME", help="the kernel's name (default: the file's only kernel)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.add_argument("--all-checks", action="store_true",
                   help="run the correctness check even when a static guard already refused the candidate")
    p.add_argument("--baseline-dtype", default="float32", metavar="DTYPE",
                   help="dtype of the reference (the reduced-precision label applies against float32)")
    p.add_argument("--reordered-sums", action="store_true",
                   help="check float32 outputs at the reordered-sum tolerance (1e-3, not 1e-4): for a candidate "
                        "whose only numeric change is the order of its float additions (a tree or shuffle "
                        "reduction, split sums), as the optimize loop checks its own reordering steps")
    p.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="wall-clock limit of the correctness check (default 600)")
    p.set_defaults(func=run)


def format_verdict(v: dict) -> str:
    """A readable summary of a verdict's JSON form."""
    head = {"accepted": "ACCEPTED", "refused": "REFUSED", "unverified": "UNVERIFIED"}[v["status"]]
    where = v["verified_on"] or "not run"
    lines = [f"{head}  (correct: {str(v['correct']).lower()}, verified on: {where})"]
    if v["refused_by"]:
        lines.append(f"  refused by: {', '.join(v['refused_by'])}")
    if v["labels"]:
        lines.append(f"  labels:     {', '.join(v['labels'])}")
    if v.get("harness"):
        lines.append(f"  harness:    {v['harness']}")
    lines.extend(f"  - {m}" for m in v["messages"])
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Verify ``args.candidate``; print the verdict; return 0 (accepted) or 1 (refused/unverified).

    Raises:
        UsageError: missing candidate, malformed harness, or no harness while no guard refuses.
    """
    from pathlib import Path

    # start-up cost: loads psutil, sympy, tomllib, tree_sitter and 56 more project modules, only when this runs
    from htam_core.harness.base import HarnessError
    from htam_core.verify.check import resolve_harness, verify_candidate
    from htam_core.verify.correctness import REORDERED_SUM_FP32_TOL

    require_source(args.candidate, "candidate file (.py, .cu or .cuh)")
    cand = Path(args.candidate)
    if cand.suffix not in (".py", ".cu", ".cuh"):
        raise UsageError(f"{cand.name}: htam verify checks .py, .cu and .cuh files")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    _check_kernel_name(cand, args.kernel)
    harness, harness_error = None, None
    try:
        harness = resolve_harness(cand, harness_path=args.harness, reference=args.reference, kernel=args.kernel,
                                  against=args.against)
    except HarnessError as exc:
        harness_error = str(exc)
    if harness is not None and args.reordered_sums:
        harness = dataclasses.replace(harness, fp32_tol=REORDERED_SUM_FP32_TOL)
    try:
        verdict = verify_candidate(cand, harness, harness_error=harness_error, run_refused=args.all_checks,
                                   baseline_dtype=args.baseline_dtype, timeout_s=args.timeout)
    except OSError as exc:
        raise UsageError(f"cannot read {cand}: {exc.strerror or exc}") from None
    if harness is None and verdict.status != "refused":
        raise UsageError((harness_error or "no harness").replace("\n\n", "\n"))
    out = verdict.to_json()
    if harness is not None and harness.inference:
        out["harness_inference"] = dict(harness.inference)  # cached: the recording of an earlier command was reused
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_verdict(out))
    return 0 if verdict.accepted else 1


def _check_kernel_name(cand: Path, kernel: str | None) -> None:
    """Refuse a ``--kernel`` that names no kernel of the file, with the same line as ``profile``/``suggest``
    (before, an unknown kernel read as a missing harness). ``ModelNew`` (a KernelBench candidate) is a name too.

    Raises:
        UsageError: the file parses, holds kernels, and none answers to ``kernel``.
    """
    # start-up cost: loads sympy, tree_sitter and 25 more project modules, only when this runs
    from htam_core.source import load

    if kernel is None or kernel == "ModelNew":
        return
    try:
        model = load(str(cand))
    except Exception:  # noqa: BLE001 - a file that does not parse is judged by the verifier, which says why
        return
    if model.kernels and not any(k.answers_to(kernel) for k in model.kernels):
        names = ", ".join(k.name for k in model.kernels)
        raise UsageError(f"no kernel named {kernel!r} in {cand.name} (kernels: {names})")
