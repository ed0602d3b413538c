"""``--kernel NAME`` of the commands that act on one kernel: optional when the file defines exactly one.

``htam profile FILE``, ``htam suggest FILE``, ``htam optimize FILE`` and ``htam harness infer FILE`` take the
file's only kernel without ``--kernel``; a file with several kernels gets one line that lists them (a new
user's trial: argparse's "the following arguments are required: --kernel" did not say which names exist).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from htam_core.cli.errors import UsageError

if TYPE_CHECKING:
    from htam_core.source import SourceModel

__all__ = ["add_kernel_argument", "no_kernel_message", "resolve_kernel"]


def add_kernel_argument(p: argparse.ArgumentParser, help_text: str = "the kernel's name") -> None:
    """Add ``--kernel NAME`` (optional: the file's only kernel by default) to subcommand parser ``p``."""
    p.add_argument("--kernel", metavar="NAME", default=None,
                   help=f"{help_text} (default: the file's only kernel; `htam kernels FILE` lists them)")


def resolve_kernel(file: str, given: str | None, command: str = "suggest") -> str:
    """The kernel a command acts on: ``given``, else the only kernel of ``file``.

    Args:
        file: the file the user named.
        given: the ``--kernel`` argument, or ``None``.
        command: the subcommand, named in the line that points to a header defining the kernel.

    Raises:
        UsageError: ``given`` is ``None`` and the file defines no kernel or several (the line lists them), or
            ``given`` is defined not in the file but in a local header it includes (the line names the header),
            or the file cannot be read as a kernel file.
    """
    # start-up cost: loads sympy, tree_sitter and 25 more project modules, only when this runs
    from htam_core.source import SourceError, load

    try:
        model = load(file)
    except SourceError as exc:
        if given is not None:
            return given  # the command reports the file's problem itself
        raise UsageError(str(exc)) from None
    kernels, name = model.kernels, Path(file).name
    if given is not None:
        if any(k.answers_to(given) or k.name == given for k in kernels):
            return given
        hint = _header_hint(model, command, given) or (_header_hint(model, command) if not kernels else "")
        if hint:
            raise UsageError(f"{name} does not define {given}{hint}")
        return given  # the command's own line lists the file's kernels
    if len(kernels) == 1:
        return kernels[0].name
    names = [k.identity for k in kernels]  # qualified names, signatures for overloads: each one selects
    if not names:
        raise UsageError(no_kernel_message(name, _header_hint(model, command)))
    raise UsageError(f"{name} defines {len(names)} kernels ({', '.join(names)}); pass --kernel NAME")


def _header_hint(model: SourceModel, command: str, name: str | None = None) -> str:
    """Where the kernels of the file's local headers are (:func:`~htam_core.source.included.included_kernel_hint`)."""
    # start-up cost: read only when the file itself does not define the kernel
    from htam_core.source.included import included_kernel_hint

    return included_kernel_hint(model, command, name)


def no_kernel_message(name: str, hint: str = "") -> str:
    """The one line for a file ``name`` (as the user knows it) that defines no kernel, shared by ``htam kernels``
    and every command that resolves a kernel: what a kernel is here and what to do; ``hint``: where the kernels
    of its local headers are (``"; it includes dwconv.cuh, which defines dwconv3x3: run htam suggest
    dwconv.cuh"``), when one defines any."""
    if hint:
        return f"{name} defines no kernel{hint}"
    return (f"{name} defines no kernel (a CUDA `__global__` function or a Triton `@triton.jit` function); "
            "open the file that defines it")
