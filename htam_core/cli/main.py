"""The ``htam`` command line.

Each subcommand lives in its own module under ``htam_core.cli`` and registers itself in
:data:`SUBCOMMANDS` (``name -> module path``). A module exposes ``add_parser(subparsers)`` which
adds its parser and sets ``func`` to a callable ``(args) -> int`` returning the exit code.
Every command runs inside :func:`htam_core.cli.errors.error_boundary`: an error is one line on stderr
(``htam: error: <what happened>. <what to do>``) and a documented exit code (``htam --help`` lists them,
see :data:`htam_core.cli.errors.EXIT_CODES`); an unexpected exception names the file holding its traceback
(``HTAM_DEBUG=1`` prints it instead).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from htam_core import __version__
from htam_core.cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
    catch_interrupts,
    error_boundary,
    exit_codes_help,
    exit_now,
    quiet_interrupts,
    was_interrupted,
)
from htam_core.runtime.children import hide_own_environ

#: Subcommand name -> module that implements it. Modules that do not exist yet are skipped.
SUBCOMMANDS: dict[str, str] = {
    "kernels": "htam_core.cli.kernels",
    "profile": "htam_core.cli.profile",
    "suggest": "htam_core.cli.suggest",
    "optimize": "htam_core.cli.optimize",
    "verify": "htam_core.cli.verify",
    "harness": "htam_core.cli.harness",
    "memory": "htam_core.cli.memory",
    "bench": "htam_core.cli.bench",
    "serve": "htam_core.cli.serve",
    "llm": "htam_core.cli.llm",
}


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (``htam: error: htam optimize: argument --budget:
    invalid int value: 'abc'. Run `htam optimize --help` for the options``, exit 2) instead of argparse's usage
    block. Subcommand parsers inherit the class (argparse creates them with the parent's type).

    Raises:
        UsageError: from :meth:`error`, caught by :func:`htam_core.cli.errors.error_boundary`.
    """

    def error(self, message: str) -> NoReturn:  # noqa: D401 - argparse's hook
        """Raise :class:`UsageError` with argparse's ``message`` and where the options are listed."""
        raise UsageError(f"{self.prog}: {message}. Run `{self.prog} --help` for the options")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser.

    Args:
        only: import just this subcommand's module (the others get empty placeholders), so that
            ``htam kernels`` or ``htam --version`` does not pay for importing torch; ``None`` imports them all
            (``htam --help`` lists every command with its help).
    """
    parser = OneLineParser(
        prog="htam",
        description="HTAM kernel assistant: find, profile and optimize CUDA and Triton kernels.",
        epilog=exit_codes_help() + "\n\nHTAM_DEBUG=1 prints the full traceback of an internal error; "
               "HTAM_MEMORY_LOCK_TIMEOUT=SECONDS sets how long to wait for a memory store locked by another "
               "writer (default 60).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"htam {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, modpath in SUBCOMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name)
            continue
        try:
            mod = importlib.import_module(modpath)
        except ModuleNotFoundError as exc:
            if exc.name == modpath:
                continue
            raise
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``htam`` console script. Returns the process exit code (see ``htam --help``)."""
    entry = argv is None  # the console script or `python -m`: this process ends with the command
    argv = sys.argv[1:] if argv is None else list(argv)
    catch_interrupts()
    if entry:
        hide_own_environ()  # an API key in our environment stays out of reach of the children we start
    code = error_boundary(lambda: _dispatch(argv))
    if code == EXIT_INTERRUPTED and entry and was_interrupted():
        exit_now(code)
    if entry:
        quiet_interrupts()  # a Ctrl-C during the exit cleanup: no traceback, the command's code stands
    return code


def _dispatch(argv: list[str]) -> int:
    first = argv[0] if argv else None
    if first in SUBCOMMANDS:
        only: str | None = first
    elif first == "--version":
        only = ""
    else:
        only = None
    parser = build_parser(only)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    return int(args.func(args) or 0)


__all__ = ["SUBCOMMANDS", "OneLineParser", "UsageError", "build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
