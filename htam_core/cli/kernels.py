"""``htam kernels FILE [--json]``: list the kernels of a CUDA or Python file.

With ``--json`` prints a JSON list with one ``Kernel.to_json()`` object per kernel (plus
``launches_elsewhere``, :meth:`WorkspaceLaunch.to_json` objects, for a kernel launched only from other files of its
workspace); otherwise a readable table (rich). A missing file or an unsupported suffix is a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from htam_core.cli.errors import UsageError, require_source
from htam_core.runtime.compiler import settle_incomplete
from htam_core.source import SourceError, SourceModel, load

if TYPE_CHECKING:
    from htam_core.source.workspace import WorkspaceLaunch


def _elsewhere(model: SourceModel) -> dict[str, list[WorkspaceLaunch]]:
    """Launches in other files of the workspace (or in ``#define`` wrappers) of the kernels with none in their own
    host code, by kernel identity (:func:`htam_core.source.workspace.find_launches`)."""
    if all(k.launch_sites or k.incomplete for k in model.kernels):
        return {}
    # imported here for start-up speed: the analysis layer (sympy) loads only for a kernel with no launch in its file
    from htam_core.source.workspace import find_launches

    return {k.identity: find_launches(model, k) for k in model.kernels if not k.launch_sites and not k.incomplete}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``kernels`` subcommand."""
    p = subparsers.add_parser("kernels", help="list the CUDA/Triton kernels of a file",
                              description="List the kernels of a .cu/.cuh/.py file with ranges, parameters "
                                          "and launch sites.")
    p.add_argument("file", help="a .cu, .cuh or .py file")
    p.add_argument("--json", action="store_true", help="print a JSON list (one object per kernel)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the kernels of ``args.file``. Returns 0.

    Raises:
        UsageError: the file is missing, unreadable or not CUDA/Python.
    """
    require_source(args.file)
    try:
        model = settle_incomplete(load(args.file))  # the compiler decides what is incomplete
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    elsewhere = _elsewhere(model)
    if args.json:
        json.dump([{**k.to_json(), **({"launches_elsewhere": [la.to_json() for la in elsewhere[k.identity]]}
                                      if elsewhere.get(k.identity) else {})} for k in model.kernels], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if not model.kernels:  # the same line as profile/suggest, not an empty table
        # start-up cost: the header reader loads only for a file with no kernel
        from htam_core.cli.kernel_arg import no_kernel_message
        from htam_core.source.included import included_kernel_hint

        print(no_kernel_message(os.path.basename(args.file), included_kernel_hint(model, "suggest")))
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title=escape(f"{args.file}: {len(model.kernels)} kernel(s)"))
    for col in ("kernel", "language", "lines", "params", "launch sites"):
        table.add_column(col, overflow="fold")
    for k in model.kernels:
        params = ", ".join(f"{p.name}: constexpr" if p.is_constexpr else p.name for p in k.params)
        sites = "\n".join(
            f"line {s.line}" + (f" (through the pointer {s.qualified_name})" if s.pointer_kernels else "")
            + (f" (through the macro {s.macro})" if s.macro else "") + (f" (through {s.api})" if s.api else "")
            + (f" (may run {' or '.join(s.ambiguous)}: not changed)" if s.ambiguous else "") + ": "
            + ", ".join(f"{key}={val}" for key, val in s.config.items()) for s in k.launch_sites
        ) or "\n".join(f"{os.path.basename(la.path)}:{la.line} ({la.style}): grid={la.grid}"
                       + (f", block={la.block}" if la.block else "") for la in elsewhere.get(k.identity, [])) or "-"
        name = k.identity + ((" (not read)" if k.compiles else " (incomplete)") if k.incomplete else "")
        # source text (array params, grid expressions like kernel[grid]) is never rich markup
        table.add_row(escape(name), k.language, f"{k.start_line}-{k.end_line}", escape(params), escape(sites))
    console.print(table)
    if model.device_functions:
        console.print(escape("device functions: " + ", ".join(
            f"{d.name} ({d.start_line}-{d.end_line})" for d in model.device_functions)))
    if model.errors:  # "LINE:COL: what" (htam_core.source.parse_problems), so editors can jump to file:line:col
        name = os.path.basename(args.file)
        more = " (an incomplete kernel is profiled and ranked once it parses: fix the first one)" \
            if any(k.incomplete and not k.compiles for k in model.kernels) else \
            " (the compiler accepts the file: htam could not read the kernels marked \"not read\")" \
            if any(k.incomplete for k in model.kernels) else ""
        console.print(f"[yellow]parse problems:[/yellow] "
                      f"{escape('; '.join(f'{name}:{e}' for e in model.errors[:5]) + more)}")
    return 0
