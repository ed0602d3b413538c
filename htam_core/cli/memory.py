"""``htam memory stats|export [FILE]|import FILE|merge A B ... --into TEAM|reset [--yes] [--move-aside]``: manage
the HTAM memory store.

Every action takes ``--memory PATH`` (default ``$HTAM_MEMORY`` or the platformdirs user data dir).
Export writes JSON (to FILE or stdout) that round-trips exactly through import; import merges records by
uid, so statistics add up and importing twice changes nothing. Import validates every record first (required
fields, types, finite numbers, UTF-8 JSON): when any is invalid it imports nothing and lists the bad records'
line numbers, unless ``--skip-invalid`` is given (then it imports the valid ones and lists the skipped lines).
Merge pools stores or exports into one store by record uid (:mod:`htam_core.memory.merge`): idempotent, the
sources of one call in any order; conflicting duplicates (same uid, other content) are listed and not applied
(the stored record wins, so separate calls commute only without conflicts), and the exit code is still 0.
``reset --move-aside`` renames a corrupt SQLite store out of the way and creates an empty store; it refuses a
folder or any file that does not start with the SQLite header. A store path whose folder does not exist is
refused (a mistyped ``--memory``), and reading commands (``stats``, ``export``) never create a store.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from htam_core.cli.errors import EXIT_IO, CLIError, UsageError, require_path
from htam_core.memory import Store, default_store_path, open_store
from htam_core.memory.export_file import ExportFileError, read_export
from htam_core.memory.fingerprint import kernel_of
from htam_core.memory.store import EXPORT_FORMAT, SCHEMA_VERSION, MemoryStoreError, check_movable, move_aside

#: At most this many bad records are listed in an import error.
_MAX_LISTED = 5


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``memory`` subcommand and its actions."""
    p = subparsers.add_parser("memory", help="inspect, export, import or reset the HTAM memory",
                              description="Manage the HTAM memory store (SQLite).")
    p.add_argument("--memory", default=None, metavar="PATH", help="store file (default: $HTAM_MEMORY or the "
                                                                   "user data dir)")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = sub.add_parser("stats", help="counts per direction and strategy")
    s.add_argument("--json", action="store_true", help="print JSON")
    e = sub.add_parser("export", help="write the memory as JSON")
    e.add_argument("file", nargs="?", default=None, help="output file (default: stdout)")
    i = sub.add_parser("import", help="merge a JSON export into the store")
    i.add_argument("file", help="a file written by `htam memory export`")
    i.add_argument("--skip-invalid", action="store_true",
                   help="import the valid records and list the invalid ones (default: import nothing if any "
                        "record is invalid)")
    m = sub.add_parser("merge", help="merge stores or exports into one store (a team's pooled memory)")
    m.add_argument("sources", nargs="+", help="store files (.sqlite3) or exports (.json) to merge; never modified")
    m.add_argument("--into", required=True, metavar="TEAM", help="the store that receives the records (created "
                                                                  "when missing, in an existing folder)")
    r = sub.add_parser("reset", help="delete every record and statistic")
    r.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    r.add_argument("--move-aside", action="store_true",
                   help="rename the file to <name>.corrupt-<time> instead (for a corrupt store) and start empty")
    for q in (s, e, i, m, r):
        q.add_argument("--memory", default=argparse.SUPPRESS, metavar="PATH", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _warn(warnings: list[str]) -> None:
    """Print each warning of a store as one ``htam: warning:`` line on stderr."""
    for w in warnings:
        print(f"htam: warning: {w}", file=sys.stderr)


def _open(path: str | None) -> Store:
    """Open the store and print its warnings; a :class:`MemoryStoreError` goes to the CLI error boundary (exit 3,
    4 when the OS failed to write it, 75 when locked)."""
    store = open_store(path)
    _warn(store.warnings)
    return store


def _listed(file: str, errors: list[tuple[int, str]]) -> str:
    """The first invalid records as ``FILE:LINE: what`` (the form editors and terminals jump to)."""
    shown = "; ".join(f"{file}:{line}: {msg}" for line, msg in errors[:_MAX_LISTED])
    return shown + (f"; and {len(errors) - _MAX_LISTED} more" if len(errors) > _MAX_LISTED else "")


def _import(path: str | None, file: str, skip_invalid: bool) -> int:
    """Validate ``file`` completely, then open the store and add its records in one transaction."""
    try:
        export = read_export(file, export_format=EXPORT_FORMAT, schema=SCHEMA_VERSION)
    except ExportFileError as exc:
        raise UsageError(str(exc)) from None
    n_bad, n_ok = len(export.errors), len(export.records)
    if n_bad and not skip_invalid:
        raise UsageError(f"{file}: {n_bad} invalid record(s), nothing was imported ({_listed(file, export.errors)}). "
                         f"Fix them, or pass --skip-invalid to import the {n_ok} valid record(s) (any already in the store "
                         "are skipped)")
    store = open_store(path)  # its warnings are printed after the import: "created a new store" may be undone
    try:
        result = store.import_records([rec for _, rec in export.records])
    except BaseException:
        if not store.discard_if_new():  # a failed import never leaves behind an empty store it created
            _warn(store.warnings)
        raise
    store.close()
    _warn(store.warnings)
    print(f"imported {result.added} records ({result.skipped} already present) into {store.path}")
    if n_bad:
        print(f"htam: warning: skipped {n_bad} invalid record(s) of {file}: {_listed(file, export.errors)}",
              file=sys.stderr)
    return 0


def _merge(sources: list[str], into: str) -> int:
    """Merge every source into ``into``; print the counts and every conflict (same uid, other content)."""
    from htam_core.memory.merge import merge_files

    try:
        report = merge_files(sources, into)
    except ExportFileError as exc:
        raise UsageError(str(exc)) from None
    except MemoryStoreError as exc:  # the target's advice names --into, the option that gave its path
        if Path(exc.path).resolve() == Path(into).expanduser().resolve():
            raise exc.for_option("--into") from None
        raise
    print(report.summary())
    if report.conflicts:
        shown = "; ".join(f"{uid} in {src}" for src, uid in report.conflicts[:_MAX_LISTED])
        more = len(report.conflicts) - _MAX_LISTED
        print(f"htam: warning: {len(report.conflicts)} conflicting record(s) (same uid, other content) were not "
              f"merged; the record already in {into} (or the earliest) was kept: {shown}"
              + (f"; and {more} more" if more > 0 else ""), file=sys.stderr)
    return 0


def _strategy_line(step: str, trials: int, measured: int, wins: int) -> str:
    """``"<step> W/M wins"`` over its judged trials (timed, or failed to build or verify), plus how many were not
    measured: a static record carries no timing, so it is neither a win nor a loss."""
    unmeasured = trials - measured
    if not measured:
        return f"{step} {trials} not measured"
    return f"{step} {wins}/{measured} wins" + (f" (+{unmeasured} not measured)" if unmeasured else "")


def _stats(store: Store, as_json: bool) -> int:
    recs = list(store.records())
    by_dir = Counter(r.direction for r in recs)
    by_step = Counter(r.step for r in recs)
    wins = Counter(r.step for r in recs if r.outcome.status == "win")
    measured = Counter(r.step for r in recs if r.outcome.measured or r.outcome.is_failure)  # judged: timed, or failed
    fails = sum(1 for r in recs if r.outcome.is_failure)
    info = {"path": str(store.path), "schema": SCHEMA_VERSION, "kb_version": store.kb.version,
            "records": len(recs), "kernels": len({kernel_of(r.fingerprint) for r in recs}),
            "devices": sorted({r.device for r in recs}), "failures": fails,
            "last_write": max((r.time for r in recs), default=None),
            "directions": dict(by_dir.most_common()),
            "strategies": {k: {"trials": n, "measured": measured[k], "wins": wins[k]} for k, n in by_step.most_common()},
            "edges": sum(s.count > 0 for lvl in ("direction", "strategy") for s in store.edge_stats(lvl).values())}
    if as_json:
        json.dump(info, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"memory: {info['path']} (schema v{SCHEMA_VERSION}, knowledge base v{store.kb.version})")
    print(f"records: {len(recs)} over {info['kernels']} kernel(s), {fails} failed or incorrect; "
          f"{info['edges']} transition edges")
    if recs:
        print("by direction: " + ", ".join(f"{k} {n}" for k, n in by_dir.most_common()))
        print("top strategies: " + ", ".join(_strategy_line(k, n, measured[k], wins[k])
                                             for k, n in by_step.most_common(8)))
    return 0


def run(args: argparse.Namespace) -> int:
    """Run one memory action. Returns 0, or 1 when a reset is declined.

    Raises:
        UsageError: unreadable or invalid import file, reset without confirmation, nothing to read.
        MemoryStoreError: the store is unusable (corrupt, locked, not writable, not a store, ...); reset
            ``--move-aside`` of something that is not an SQLite file.
    """
    path = args.memory
    if args.action == "reset" and args.move_aside:
        target = Path(path).expanduser() if path else default_store_path()
        if not target.exists():
            raise UsageError(f"no memory store at {target}")
        check_movable(target)  # before asking: a folder or another file is refused, never renamed
        if not args.yes and not _confirm(f"move {target} aside and start an empty memory?"):
            return 1
        moved = move_aside(target)
        _open(str(target)).close()
        print(f"moved {target} to {moved}; created an empty memory store")
        return 0
    if path and args.action in ("stats", "export") and not Path(path).expanduser().exists():
        # reading a store that is not there: a mistyped --memory must not silently look like an empty memory
        raise UsageError(f"no memory store at {path}: check the path (an empty store is created by the first "
                         "`htam optimize`, `htam memory import` or the editor)")
    if args.action == "import":
        require_path(args.file, "export file (.json, from htam memory export)")
        return _import(path, args.file, args.skip_invalid)
    if args.action == "merge":
        for src in args.sources:  # sources are read, never created: a mistyped one is bad input, not a store error
            require_path(src, "memory store (.sqlite3) or export (.json)")
        return _merge(args.sources, args.into)
    store = _open(path)
    with store:
        if args.action == "stats":
            return _stats(store, args.json)
        if args.action == "export":
            text = json.dumps(store.export(), indent=1, sort_keys=True) + "\n"
            if args.file:
                _write_export(args.file, text)
                print(f"exported {store.count()} records to {args.file}", file=sys.stderr)
            else:
                sys.stdout.write(text)
            return 0
        if args.action == "reset":
            if not args.yes and not _confirm(f"delete every record in {store.path}?"):
                return 1
            n = store.reset()
            print(f"deleted {n} records from {store.path}")
            return 0
    raise UsageError(f"unknown memory action {args.action!r}")


def _write_export(file: str, text: str) -> None:
    """Write an export to ``file`` whole or not at all.

    A regular file (or a new one) is written to a temporary file in the same folder, flushed to disk and renamed
    over ``file`` (``os.replace`` is atomic on POSIX), so a full disk leaves the old file, or none, never a
    truncated one. A pipe or a device (``/dev/stdout``) is written directly: it cannot be renamed over.

    Raises:
        CLIError: (exit 4) the write failed; the message names ``file`` and the reason.
    """
    target = Path(file)
    data = text.encode("utf-8")
    regular = not target.exists() or target.is_file()
    try:
        if not regular:
            with open(target, "wb") as fh:
                fh.write(data)
            return
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                view = memoryview(data)
                while view:
                    view = view[os.write(fh.fileno(), view):]
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        full = " (the disk is full: free some space or choose another disk)" if exc.errno == errno.ENOSPC else ""
        kept = "; the file was left as it was" if regular else ""
        raise CLIError(f"cannot write the export to {file}: {exc.strerror or exc}{full}{kept}", EXIT_IO) from None


def _confirm(question: str) -> bool:
    """Ask on a terminal; without one, refuse and say to pass --yes."""
    if not sys.stdin.isatty():
        raise UsageError(f"{question} Pass --yes to confirm (no terminal to ask on).")
    answer = input(f"{question} [y/N] ").strip().lower()
    return answer in ("y", "yes")
