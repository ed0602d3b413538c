"""``htam profile FILE --kernel NAME [--static] [--no-counters] [--json] [--target sm_90]``: profile one kernel.

On a machine with a GPU the kernel is measured (when the GPU profiler is available); otherwise,
or with ``--static``, it is compiled for ``--target`` and profiled statically, and every measured
field is ``null``. ``--no-counters`` times the kernel without waiting for Nsight Compute (stage 1 of the
two-stage profile). When ``--gpu`` or ``--no-counters`` asks for a GPU profile and there is no GPU, one note
line on stderr says why before the static profile (stdout keeps its format). A compile or profile still running
after 2 s gets one progress line on stderr (:mod:`htam_core.cli.progress`; none with ``--json``). ``--json`` prints :meth:`htam_core.types.profile.Profile.to_json`; otherwise a
readable summary. A missing file, an unknown kernel or a kernel that does not compile is a
one-line error with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from htam_core.cli.errors import UsageError, require_source
from htam_core.cli.kernel_arg import add_kernel_argument, resolve_kernel
from htam_core.cli.progress import when_slow
from htam_core.types.constexpr import parse_cli_value


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``profile`` subcommand."""
    p = subparsers.add_parser("profile", help="profile one kernel (GPU, or static without one)",
                              description="Profile one CUDA or Triton kernel: time, speed-of-light and occupancy "
                                          "on a GPU, or registers, spills, shared memory and theoretical "
                                          "occupancy from a compile when there is no GPU (or with --static).")
    p.add_argument("file", help="a .cu, .cuh or .py file")
    add_kernel_argument(p, "the kernel's name")
    p.add_argument("--static", action="store_true", help="compile only; do not run on a GPU")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.add_argument("--target", default="sm_90", help="compute capability for the static profile (default sm_90)")
    p.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="Triton constexpr value for the static compile (repeatable). VALUE is read as a Python "
                        "literal when it is one (1024, 0.5, True, None, 'silu'), as a dtype for tl.float16, else as "
                        "a string: ACTIVATION=silu")
    p.add_argument("--gpu", type=int, default=None, metavar="INDEX", help="GPU index to measure on (default 0)")
    p.add_argument("--no-counters", action="store_true",
                   help="on a GPU, time the kernel only (stage 1 of the two-stage profile): do not wait for Nsight "
                        "Compute's counters (SOL, achieved occupancy stay 'not measured')")
    p.set_defaults(func=run)


def _parse_constexprs(items: list[str]) -> dict[str, Any]:
    """``--constexpr NAME=VALUE`` items as ``{NAME: value}``: VALUE is a Python literal when it is one (``1024``,
    ``0.5``, ``True``, ``None``, ``'silu'``), a Triton dtype for ``tl.float16``, else the text as a string
    (``silu``): :func:`htam_core.types.constexpr.parse_cli_value`.

    Raises:
        UsageError: an item without ``=`` or whose NAME is no identifier.
    """
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier() or not value.strip():
            raise UsageError(f"--constexpr {item!r}: use NAME=VALUE, e.g. --constexpr BLOCK_SIZE=1024 or "
                             "--constexpr ACTIVATION=silu")
        out[name.strip()] = parse_cli_value(value)
    return out


def _fmt(v: Any, unit: str = "") -> str:
    return "not measured" if v is None else f"{v}{unit}"


def shared_line(p: Any) -> str:
    """The shared-memory figure of a profile (:meth:`~htam_core.types.profile.Profile.shared_text`: static bytes
    per block, plus the launch's dynamic bytes when read), and, with dynamic bytes, what the occupancy figure
    allocates for them (the driver's reserved bytes and granularity included), so the line and ``--json``'s
    ``occupancy.smem_per_block`` agree."""
    text = p.shared_text()
    if text is None:
        return "not measured per block"
    alloc = (p.extra.get("occupancy") or {}).get("smem_per_block")
    dyn = (p.extra.get("dynamic_shared") or {}).get("bytes")
    return f"{text} per block" + (f"; occupancy allocates {alloc} (with the driver's reserved bytes)"
                                  if alloc and dyn else "")


def format_profile(p: Any) -> str:
    """A readable multi-line summary of a :class:`Profile`."""
    lines = [f"kernel {p.kernel}  [{p.mode}, {p.device}]"]
    if p.time_ms is not None:
        lines.append(f"  time          min {p.time_ms.min:.4f} / median {p.time_ms.median:.4f} / "
                     f"max {p.time_ms.max:.4f} ms")
    else:
        lines.append("  time          not measured")
    timing = p.extra.get("timing") or {}
    if timing.get("cupti_ms") is not None:
        ag = timing.get("agreement")
        lines.append(f"  CUPTI         {timing['cupti_ms']:.4f} ms device time per call"
                     + (f" (timer {ag:+.1%})" if ag is not None else "")
                     + f", timed by {timing.get('method', '?')}")
    lines.append(f"  registers     {_fmt(p.registers)} per thread")
    lines.append(f"  spills        {_fmt(p.spill_bytes, ' bytes')}")
    lines.append(f"  stack         {_fmt(p.stack_bytes, ' bytes')}")
    lines.append(f"  shared        {shared_line(p)}")
    lines.append(f"  threads/block {_fmt(p.block_size)}")
    occ = "unknown" if p.theoretical_occupancy is None else f"{p.theoretical_occupancy:.2f}"
    lim = (p.extra.get("occupancy") or {}).get("limiter")
    if (p.extra.get("launch") or {}).get("fits") is False:
        occ, lim = "none (the launch cannot run; see the bottleneck)", None
    lines.append(f"  occupancy     theoretical {occ}" + (f" (limited by {lim})" if lim else "")
                 + f", achieved {_fmt(p.achieved_occupancy)}")
    if p.sol is not None:
        lines.append(f"  SOL           memory {p.sol.get('memory_pct')}%, compute {p.sol.get('compute_pct')}%")
    else:
        lines.append("  SOL           not measured")
    sec = f" (also: {', '.join(p.bottleneck.secondary)})" if p.bottleneck.secondary else ""
    lines.append(f"  bottleneck    {p.bottleneck.cls}{sec}")
    lines.extend(f"    - {e}" for e in p.bottleneck.evidence)
    if p.warnings:
        lines.append("  warnings")
        lines.extend(f"    - {w}" for w in p.warnings)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Profile ``args.kernel`` of ``args.file`` and print it. Returns 0.

    Raises:
        UsageError: missing file, unknown kernel, a kernel that does not compile, bad options.
    """
    import warnings

    from htam_core.profile.api import no_gpu_reason, profile_kernel
    from htam_core.types.errors import ProfileError

    require_source(args.file)
    args.kernel = resolve_kernel(args.file, args.kernel, "profile")
    constexprs = _parse_constexprs(args.constexpr)
    static = True if args.static else None
    if not args.static and (why := no_gpu_reason()) is not None:
        static = True
        if args.gpu is not None or args.no_counters:  # a GPU profile was asked for: say why it is static
            print(f"htam: note: no CUDA GPU found ({why}): static profile", file=sys.stderr, flush=True)
    step = (f"compiling {args.kernel} for {args.target} (first compile, later ones are cached)..." if static else
            f"profiling {args.kernel} on GPU {args.gpu or 0} (compile, verify, time"
            + ("" if args.no_counters else ", Nsight Compute counters") + ")...")
    try:
        with warnings.catch_warnings(), when_slow(step, enabled=not args.json):
            warnings.simplefilter("ignore", RuntimeWarning)  # the fallback note is in p.warnings
            p = profile_kernel(args.file, args.kernel, static=static, target=args.target,
                               gpu_index=0 if args.gpu is None else args.gpu, constexprs=constexprs or None,
                               use_ncu=not args.no_counters)
    except ProfileError as exc:
        raise UsageError(exc.message.replace("\n", " ")) from None
    if args.json:
        json.dump(p.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_profile(p))
    return 0
