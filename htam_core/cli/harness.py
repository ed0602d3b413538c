"""``htam harness infer FILE [--kernel NAME] [--write|--save] [--json]``: show or save an inferred harness.

For a KernelBench candidate (``ModelNew``), prints its pair (the reference found as ``verify`` and ``optimize``
find it: :func:`htam_core.harness.find.kernelbench_pair`). For another ``.py`` file, runs the file's ``__main__`` block (or a pytest test beside it) in a child process, records
the calls of the kernel's launcher; for a ``.cu`` program, reads the launch in ``main()``
(:mod:`htam_core.harness.infer_cuda`). Prints the harness htam infers from them as a filled-in ``htam.toml`` table
(:func:`htam_core.harness.toml_render.render_toml`), with where it came from. ``--write`` appends it to the
``htam.toml`` beside the file (never over an existing table of the same kernel).

Exit codes: 0 inferred (and written with ``--write``); 1 nothing could be inferred (the message names what is
missing, and a filled-in template, :func:`htam_core.harness.template.write_template`, follows it on stderr); 2 usage error (missing file, a ``.py`` file that does not parse, a half-typed kernel, several kernels without ``--kernel``,
a table already there).
"""

from __future__ import annotations

import argparse
import json
import sys

from htam_core.cli.errors import UsageError, require_source
from htam_core.cli.kernel_arg import resolve_kernel


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``harness`` subcommand (``harness infer``)."""
    p = subparsers.add_parser("harness", help="show or save the harness inferred from a kernel's file",
                              description="Harness tools. `htam harness infer FILE` runs the file's __main__ block "
                                          "or a test beside it in a child process and prints the inferred harness "
                                          "as an htam.toml table.")
    sub = p.add_subparsers(dest="harness_cmd", required=True)
    inf = sub.add_parser("infer", help="infer the harness of a kernel from its file and print it as htam.toml",
                         description="Infer how to call a kernel from its file's __main__ block or tests; print the "
                                     "htam.toml table (exit 1 when nothing could be inferred).")
    inf.add_argument("file", help="the kernel's .py file, or a .cu/.cuh program with main()")
    inf.add_argument("--kernel", metavar="NAME", help="the kernel (default: the file's only kernel)")
    inf.add_argument("--write", "--save", action="store_true", dest="write",
                     help="append the table to the htam.toml beside the file (a new table; never over an existing one)")
    inf.add_argument("--json", action="store_true", help="print the harness and the recording as JSON")
    inf.set_defaults(func=run)


def _infer_cuda(path, name: str, model):
    """The CUDA ``main()`` inference as an :class:`~htam_core.harness.infer_py.Inference` (no recording: the
    launch is read from the source)."""
    # start-up cost: loads psutil, sympy, tomllib, tree_sitter and 43 more project modules, only when this runs
    from htam_core.harness.base import HarnessError
    from htam_core.harness.infer_host import infer_cuda
    from htam_core.harness.infer_py import Inference

    try:  # the file's main(), else the workspace program that runs the kernel
        return Inference(infer_cuda(path, name, model), "", {})
    except HarnessError as exc:
        return Inference(None, exc.message or "main() says nothing about the launch", {})


#: What ``htam harness infer`` reads, for the missing-file message.
_INFER_FILE = ("kernel file (a .py file holding a Triton kernel, or a .cu/.cuh file with main() or launched from a "
               "program of its folder)")


def run(args: argparse.Namespace) -> int:
    """Infer, print (and with ``--write`` save) the harness. Returns 0, or 1 when none could be inferred.

    Raises:
        UsageError: the file is missing or not Python, the kernel is ambiguous or unknown, or ``htam.toml``
            already has a table for it.
    """
    from pathlib import Path

    # start-up cost: loads psutil, sympy, tomllib, tree_sitter and 43 more project modules, only when this runs
    from htam_core.harness.base import HarnessError
    from htam_core.harness.find import kernelbench_pair, pair_table
    from htam_core.harness.infer_py import infer
    from htam_core.harness.pysource import parse_failure
    from htam_core.harness.spec import SPEC_FILENAME, table_header
    from htam_core.harness.toml_render import render_toml, save_to_spec
    from htam_core.lang import create as language_backend
    from htam_core.runtime.compiler import settle_incomplete
    from htam_core.source import SourceError, incomplete_reason, load

    require_source(args.file, _INFER_FILE)
    path = Path(args.file)
    if path.suffix not in (".py", ".cu", ".cuh"):
        raise UsageError(f"{args.file}: pass an existing .py file holding a Triton kernel, or a .cu/.cuh file with "
                         "main() or launched from a program of its folder")
    if path.suffix == ".py":  # a syntax error is the cause, not a missing launcher or __main__ block
        broken = parse_failure(path.name, path.read_text(encoding="utf-8", errors="replace"),
                               f"run `htam harness infer {args.file}` again")
        if broken is not None:
            raise UsageError(broken)
    try:
        model = settle_incomplete(load(str(path)))  # the compiler decides what is incomplete
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    name = resolve_kernel(args.file, args.kernel, "harness infer")
    try:
        name = model.selector(model.kernel(name))
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    if (why := incomplete_reason(model.kernel(name), "its harness is inferred")) is not None:
        raise UsageError(f"{why}, then run `htam harness infer {args.file}` again")
    try:  # a KernelBench pair is found the way verify and optimize find it (one discovery function)
        pair = kernelbench_pair(path, name)
    except HarnessError as exc:
        raise UsageError(exc.message) from None
    if pair is not None:
        if args.json:
            json.dump({"harness": pair.to_json(), "reason": "", "template": None, "recording": {},
                       "inference": {"cached": False, "seconds": 0.0}}, sys.stdout, indent=2, default=str)
            sys.stdout.write("\n")
        else:
            print(pair_table(pair), end="")
        if args.write:
            print(f"nothing written: {path.name} and its reference are found as a pair without htam.toml",
                  file=sys.stderr)
        return 0
    inf = infer(path, name, model) if path.suffix == ".py" else _infer_cuda(path, name, model)
    kernel = model.kernel(name)
    template = None if inf.harness else language_backend(kernel.language).harness_template(model, kernel, inf.dtypes)
    if args.json:
        json.dump({"harness": inf.harness.to_json() if inf.harness else None, "reason": inf.reason,
                   "template": template,
                   "recording": inf.recording,
                   "inference": {"cached": inf.cached, "seconds": inf.seconds}}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    if inf.harness is None:
        print(f"no harness could be inferred for {name} from {path.name}: {inf.reason}", file=sys.stderr)
        if not args.json:
            print(f"\nStart from this table in {path.resolve().parent / SPEC_FILENAME} (check every TODO, then write the "
                  f"reference):\n\n{template}", end="", file=sys.stderr)
        return 1
    if not args.json:
        print(render_toml(inf.harness), end="")
    if args.write:
        try:
            spec = save_to_spec(inf.harness)
        except HarnessError as exc:
            raise UsageError(exc.message) from None
        print(f"wrote {table_header(name)} to {spec}", file=sys.stderr)
    return 0
