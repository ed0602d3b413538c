"""``--kernel NAME`` of the commands that act on one kernel: optional when the file defines exactly one.

``htam profile FILE``, ``htam suggest FILE``, ``htam optimize FILE`` and ``htam harness infer FILE`` take the
file's only kernel without ``--kernel``; a file with several kernels gets one line that lists them (a new
user's trial: argparse's "the following arguments are required: --kernel" did not say which names exist).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from htam_core.cli.errors import UsageError

__all__ = ["add_kernel_argument", "no_kernel_message", "resolve_kernel"]


def add_kernel_argument(p: argparse.ArgumentParser, help_text: str = "the kernel's name") -> None:
    """Add ``--kernel NAME`` (optional: the file's only kernel by default) to subcommand parser ``p``."""
    p.add_argument("--kernel", metavar="NAME", default=None,
                   help=f"{help_text} (default: the file's only kernel; `htam kernels FILE` lists them)")


def resolve_kernel(file: str, given: str | None) -> str:
    """The kernel a command acts on: ``given``, else the only kernel of ``file``.

    Raises:
        UsageError: ``given`` is ``None`` and the file defines no kernel or several (the line lists them), or
            the file cannot be read as a kernel file.
    """
    if given is not None:
        return given
    # start-up cost: loads sympy, tree_sitter and 25 more project modules, only when this runs
    from htam_core.source import SourceError, load

    try:
        kernels = load(file).kernels
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    if len(kernels) == 1:
        return kernels[0].name
    names = [k.identity for k in kernels]  # qualified names, signatures for overloads: each one selects
    name = Path(file).name
    if not names:
        raise UsageError(no_kernel_message(name))
    raise UsageError(f"{name} defines {len(names)} kernels ({', '.join(names)}); pass --kernel NAME")


def no_kernel_message(name: str) -> str:
    """The one line for a file ``name`` (as the user knows it) that defines no kernel, shared by ``htam kernels``
    and every command that resolves a kernel: what a kernel is here and what to do."""
    return (f"{name} defines no kernel (a CUDA `__global__` function or a Triton `@triton.jit` function); "
            "open the file that defines it")
