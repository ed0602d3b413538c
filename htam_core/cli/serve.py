"""``htam serve [--tcp HOST:PORT]``: run the HTAM language server (stdio by default).

The server lives in the ``htam_server`` package (pygls); it is imported only when this command runs, so
``htam_core`` itself never imports pygls or lsprotocol.
"""

from __future__ import annotations

import argparse
import importlib

from htam_core.cli.errors import UsageError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``serve`` subcommand."""
    p = subparsers.add_parser("serve", help="run the language server (stdio, or TCP with --tcp)",
                              description="Run the HTAM language server for editors (LSP over stdio by default).")
    p.add_argument("--tcp", metavar="HOST:PORT", default=None,
                   help="listen on TCP (for example 127.0.0.1:2087) instead of stdio")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects. Returns 0.

    Raises:
        UsageError: a malformed ``--tcp`` value, or the server package is not installed.
    """
    if args.tcp is not None:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"--tcp must be HOST:PORT with a port from 1 to 65535 (for example 127.0.0.1:2087), "
                             f"got {args.tcp!r}")
    try:
        server = importlib.import_module("htam_server.server")
    except ModuleNotFoundError as exc:
        raise UsageError(f"the language server is not installed ({exc}); reinstall htam with its dependencies "
                         "(pygls, lsprotocol)") from None
    return int(server.serve(args.tcp) or 0)
