"""Errors and exit codes of the command line, and the one error boundary every command runs inside.

Every ``htam`` command runs inside :func:`error_boundary`: a known error becomes one line on stderr,
``htam: error: <what happened>. <what to do>``, and a documented exit code (:data:`EXIT_CODES`); an unexpected
exception becomes one line too, naming the file that holds its full traceback (``HTAM_DEBUG=1`` prints it);
a closed stdout (``htam suggest ... | head -1``) is handled as the Python documentation recommends for
``BrokenPipeError`` (stdout is pointed at ``os.devnull`` so the interpreter's final flush is silent) and exits
with :data:`EXIT_BROKEN_PIPE`, the shell's 128 + SIGPIPE. The exit codes follow the BSD ``sysexits.h``
convention where one fits (70 internal error, 75 temporary failure).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import stat
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable

#: Success.
EXIT_OK = 0
#: The command ran but found a problem (a candidate refused, a kernel that is wrong, a reset declined).
EXIT_PROBLEM = 1
#: Bad usage or bad input (missing file, unknown kernel, malformed htam.toml or import file).
EXIT_USAGE = 2
#: The memory store cannot be used as it is: corrupt, not a store, newer schema, or not writable.
EXIT_STORE = 3
#: A file or folder could not be read or written (permissions, read-only file system, disk full); a memory
#: store the OS fails to write (a full disk) counts here too.
EXIT_IO = 4
#: ``optimize --apply`` refused to write the file: no candidate was verified on a GPU and measured faster.
EXIT_APPLY_REFUSED = 5
#: An internal error: a bug in htam (the message names the file with the traceback).
EXIT_INTERNAL = 70
#: The memory store stayed locked by another writer for the whole lock timeout; retrying later may work.
EXIT_LOCKED = 75
#: Interrupted (Ctrl-C).
EXIT_INTERRUPTED = 130
#: stdout was closed before htam finished writing (``htam suggest ... | head -1``): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141

#: Exit code -> meaning, as printed by ``htam --help``.
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_PROBLEM: "ran, but found a problem (candidate refused or unverified, wrong start kernel, declined)",
    EXIT_USAGE: "bad usage or bad input (missing file, unknown kernel, malformed htam.toml or import file)",
    EXIT_STORE: "the memory store is unusable (corrupt, not a store, newer schema, not writable)",
    EXIT_IO: "a file or folder could not be read or written (permissions, read-only file system, disk full, "
             "the memory store's disk included)",
    EXIT_APPLY_REFUSED: "optimize --apply refused to write the file: nothing verified on a GPU and measured faster "
                        "(the file is unchanged; --apply-unverified writes anyway)",
    EXIT_INTERNAL: "internal error (a bug): the message names the file holding the traceback",
    EXIT_LOCKED: "the memory store stayed locked by another writer for the whole lock timeout: retry later",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_BROKEN_PIPE: "stdout was closed early (e.g. piped into head)",
}

#: Environment variable that makes the boundary print full tracebacks.
DEBUG_ENV = "HTAM_DEBUG"


class CLIError(Exception):
    """A known failure of a command: printed as ``htam: error: <message>`` with :attr:`exit_code`.

    Args:
        message: what happened and what to do, as one sentence or two.
        exit_code: one of :data:`EXIT_CODES`.
    """

    exit_code = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(CLIError):
    """Bad input from the user; printed as ``htam: error: ...`` with exit code 2 (:data:`EXIT_USAGE`)."""

    exit_code = EXIT_USAGE


#: What each kind of path a command takes must be, for :func:`require_path`'s message.
KERNEL_FILE = "kernel file (.cu, .cuh or .py)"


def _kind_of(p: str) -> str:
    """What an existing path that is not a regular file or folder is, in words (from ``os.stat``, which never
    opens it: opening a FIFO for reading would block)."""
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return "not a regular file"
    kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((f"{name}, not a regular file" for test, name in kinds if test(mode)), "not a regular file")


def missing_path_message(path: str | os.PathLike[str], what: str = KERNEL_FILE, *, folder: bool = False) -> str | None:
    """The one message every command gives for a path that does not exist (or is the wrong kind), or ``None``
    when ``path`` is an existing regular file (``folder=True``: an existing folder).

    ``"nope.cu does not exist (looked in /home/me/src): pass the path of an existing kernel file (.cu, .cuh or
    .py)"``; a folder where a file is expected says so, a file where a folder is expected says so, and a named
    pipe, socket or device says what it is. The path is only ``stat``-ed, never opened.

    Args:
        path: the path as the user typed it (kept in the message as typed).
        what: what the command expects there (``"kernel file (.cu, .cuh or .py)"``, ``"suite folder"``).
        folder: the command expects a folder.
    """
    p = os.fspath(path)
    if (os.path.isdir(p) if folder else os.path.isfile(p)):
        return None
    if os.path.exists(p):
        if folder:
            kind = "a file, not a folder" if os.path.isfile(p) else _kind_of(p).replace("regular file", "folder")
        else:
            kind = "a folder" if os.path.isdir(p) else _kind_of(p)
        return f"{p} is {kind}: pass the path of an existing {what}"
    where = "" if os.path.isabs(p) else f" (looked in {os.getcwd()})"
    return f"{p} does not exist{where}: pass the path of an existing {what}"


def require_path(path: str | os.PathLike[str], what: str = KERNEL_FILE, *, folder: bool = False) -> None:
    """Raise :class:`UsageError` with :func:`missing_path_message` when ``path`` is not an existing regular file
    (``folder=True``: folder). Every command checks the paths it is given through this one function."""
    msg = missing_path_message(path, what, folder=folder)
    if msg is not None:
        raise UsageError(msg)


def require_source(path: str | os.PathLike[str], what: str = KERNEL_FILE) -> None:
    """The one check of every command that reads a kernel source file: :func:`require_path`, then the file must
    be readable UTF-8 text (what nvcc and Python read by default).

    A binary or latin-1 file gets one line that says which byte could not be read, on which line, instead of a
    later "no kernel was found" (``htam verify`` said that and offered an htam.toml template).

    Raises:
        UsageError: missing, not a regular file, or not UTF-8 text.
        OSError: the file exists but cannot be read (the boundary reports it with exit 4).
    """
    require_path(path, what)
    p = os.fspath(path)
    with open(p, "rb") as fh:
        raw = fh.read()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"{p} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at line {line}: a binary file, or "
                         "text in another encoding such as latin-1), so htam cannot read it; save it as UTF-8 "
                         f"and pass it again, or pass another {what}") from None


def exit_codes_help() -> str:
    """The exit-code table as text for ``htam --help`` (an argparse epilog)."""
    return "exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES.items())


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def _store_error_in_chain(exc: BaseException) -> BaseException | None:
    """The :class:`~htam_core.memory.store.MemoryStoreError` that ``exc`` is, or was explicitly raised from."""
    # start-up cost: loads sqlite3, sympy, tomllib, tree_sitter and 36 more project modules, only when this runs
    from htam_core.memory.store import MemoryStoreError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MemoryStoreError):
            return seen
        seen = seen.__cause__
    return None


def _store_exit_code(store_exc: BaseException) -> int:
    """75 for a store locked by another writer, 4 for what the OS failed to do with it (``kind="io"``: a full
    disk among others), 3 for a store that is unusable as it is."""
    kind = getattr(store_exc, "kind", "")
    return EXIT_LOCKED if kind == "locked" else EXIT_IO if kind == "io" else EXIT_STORE


def _os_error_line(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        target = f"{exc.filename} -> {exc.filename2}" if exc.filename2 is not None else str(exc.filename)
        return (f"cannot use {target}: {what}. Check that the path exists and that you may read and write it, "
                "or choose another location")
    return f"{what}. Check the paths given and their permissions"


def _save_traceback(exc: BaseException) -> str | None:
    """Write ``exc``'s traceback to a file in the temporary folder; return its path (``None`` if impossible)."""
    text = "".join(traceback.format_exception(exc))
    try:
        fd, name = tempfile.mkstemp(prefix=f"htam-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"htam {' '.join(sys.argv[1:])}\n{text}")
        return name
    except OSError:
        return None


def _say(line: str) -> None:
    """Print one line on stderr; a closed stderr is not an error worth a traceback."""
    try:
        print(f"htam: {line}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """Point stdout at ``os.devnull`` so the interpreter's final flush cannot raise again (Python docs,
    "Note on SIGPIPE" in the :mod:`signal` module)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


_interrupted = threading.Event()


def _on_sigint(signum: int, frame: object) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


def catch_interrupts() -> None:
    """Install the command line's SIGINT handler (main thread only): it notes the interrupt, then raises
    ``KeyboardInterrupt`` as Python's default handler does. A command may catch that to keep its work (``htam
    optimize`` writes the report of the best kernel so far); :func:`error_boundary` still ends the command
    with ``htam: interrupted`` and :data:`EXIT_INTERRUPTED`, whatever the command returned."""
    if threading.current_thread() is threading.main_thread():
        _interrupted.clear()
        signal.signal(signal.SIGINT, _on_sigint)


def _note_sigint(signum: int, frame: object) -> None:
    _interrupted.set()


def quiet_interrupts() -> None:
    """After the command has ended (its exit code is decided): a Ctrl-C only is noted, not raised, so the exit
    cleanup (the ``atexit`` handlers that stop the worker processes) runs undisturbed and prints no traceback.
    Main thread only; elsewhere it does nothing."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _note_sigint)


def _interrupted_exit() -> int:
    """Say ``interrupted`` once and return :data:`EXIT_INTERRUPTED`; a further Ctrl-C while the process exits
    (its workers are stopped at exit) is ignored, so the exit code stays 130."""
    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _say("interrupted")
    return EXIT_INTERRUPTED


def exit_now(code: int) -> None:
    """End the process with ``code`` at once, after the cleanup Python's own exit would do (the ``atexit``
    handlers stop the worker processes; stdout and stderr are flushed). Used after a Ctrl-C: an interrupt that
    reached the interpreter while it was unwinding can otherwise turn the exit into death by SIGINT (-2)
    instead of 130."""
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def was_interrupted() -> bool:
    """Whether a Ctrl-C (SIGINT) reached this command since :func:`catch_interrupts`: a command that caught it
    to keep its work returns early, printing nothing more; the boundary says ``interrupted``."""
    return _interrupted.is_set()


def error_boundary(run: Callable[[], int]) -> int:
    """Run one command; turn every exception into one line on stderr and a documented exit code.

    Args:
        run: the command, returning its exit code.

    Returns:
        The command's exit code, or the code of the error it raised (see :data:`EXIT_CODES`); 130
        (:data:`EXIT_INTERRUPTED`) after a Ctrl-C seen by :func:`catch_interrupts`' handler, even one the
        command caught. ``SystemExit`` (argparse's own usage errors, ``--help``) passes through unchanged.
    """
    try:
        code = int(run() or 0)
        if not sys.stdout.closed:  # `htam serve` closes stdout when the client ends the session
            sys.stdout.flush()  # a closed pipe shows up here at the latest, inside the boundary
        if _interrupted.is_set():
            return _interrupted_exit()
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return _interrupted_exit()
    except Exception as exc:  # noqa: BLE001 - the boundary: never a raw traceback
        if _interrupted.is_set():  # a failure that the Ctrl-C caused (a worker call cut short)
            return _interrupted_exit()
        return _report(exc)


def _report(exc: Exception) -> int:
    """Print the one line for ``exc`` and return its exit code (see :func:`error_boundary`)."""
    from htam_core.memory.store import MemoryStoreError  # imported only when something failed

    if isinstance(exc, CLIError | MemoryStoreError | OSError):
        if _debug():
            traceback.print_exception(exc)
        store_exc = _store_error_in_chain(exc)
        if isinstance(exc, OSError):
            _say(f"error: {_os_error_line(exc)}")
            return EXIT_IO
        _say(f"error: {exc}")
        if store_exc is not None:
            return _store_exit_code(store_exc)
        return exc.exit_code if isinstance(exc, CLIError) else EXIT_STORE
    if _debug():
        traceback.print_exception(exc)
        where = "printed above"
    else:
        saved = _save_traceback(exc)
        where = f"in {saved}" if saved else "not saved (the temporary folder is not writable)"
    detail = str(exc).splitlines()[0] if str(exc) else ""
    _say(f"internal error: {type(exc).__name__}{': ' + detail if detail else ''}. This is a bug in htam; the "
         f"full traceback is {where} (set {DEBUG_ENV}=1 to print it). Please report it with that file")
    return EXIT_INTERNAL
