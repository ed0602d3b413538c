"""The durable HTAM memory: records plus node and edge statistics in SQLite.

* One SQLite file per store, in WAL mode, ``synchronous=NORMAL`` (a killed process loses at most its
  uncommitted transaction and never corrupts the file; see the SQLite WAL documentation).
* Versioned schema: ``PRAGMA user_version`` holds the schema version and ``PRAGMA application_id`` marks
  the file as ours; :data:`MIGRATIONS` upgrades older files in one transaction.
* Every write is one ``BEGIN IMMEDIATE`` transaction, so two processes (two editor servers) writing the same
  store serialize and lose nothing. A store locked by another writer is retried with exponential backoff
  (25 ms doubling to 1 s between attempts) for up to :data:`LOCK_TIMEOUT_S` seconds in total
  (``$HTAM_MEMORY_LOCK_TIMEOUT`` overrides it), then :class:`MemoryStoreError` with ``kind="locked"``.
* The failure modes are told apart (:attr:`MemoryStoreError.kind`): ``"corrupt"`` (not an SQLite file, or the
  integrity check fails), ``"foreign"`` (an SQLite database of something else), ``"newer"`` (a newer schema),
  ``"locked"`` (another writer), ``"readonly"`` (permissions or a read-only file system), ``"not-a-store"``
  (a folder, or a path whose folder does not exist), ``"io"`` (anything else the OS reports). Such files are
  never modified. ``on_corrupt="move-aside"`` renames a corrupt SQLite file to ``<name>.corrupt-<time>`` and
  starts an empty one; :func:`move_aside` refuses anything that does not start with the SQLite header.
* A store that cannot be written (read-only folder or file) is opened read-only: reads work,
  :attr:`Store.read_only` is set and a warning says so.
* A record that cannot be written (locked past the timeout, or read-only) is never dropped: it is appended to
  a pending file (:func:`pending_paths`) and :class:`MemoryStoreError` says where; the next time the store is
  opened for writing, or a later record succeeds, the pending records are added (deduplicated by uid).
* An explicit store path must lie in an existing folder (a mistyped ``--memory`` is refused, not silently
  created); a new store file is announced in :attr:`Store.warnings`. Only the default location and a
  workspace's ``.htam`` folder are created.
* An optional workspace store overlays the user store: reads merge both, writes go to the workspace.

Records are (prefix, state, step, outcome, fingerprint, device, time); see
:mod:`htam_core.memory.records`. Modelled on TVM meta_schedule's JSON database of tuning records.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sqlite3
import time as _time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from htam_core.memory.features import bottleneck_of_state
from htam_core.memory.fingerprint import TRIED_MARK
from htam_core.memory.knowledge import KnowledgeBase, load_knowledge
from htam_core.memory.records import Outcome, Record, Stats, outcome_value

__all__ = ["TAG_ENV", "gpu_model", "remove_store_files", "SCHEMA_VERSION", "APPLICATION_ID", "EXPORT_FORMAT", "LOCK_TIMEOUT_S", "LOCK_TIMEOUT_ENV", "SQLITE_MAGIC",
           "MemoryStoreError", "MergeCounts", "Store", "read_records", "open_store", "default_store_path", "lock_timeout_s", "check_movable", "move_aside",
           "pending_paths", "START"]

#: Current schema version (``PRAGMA user_version``).
SCHEMA_VERSION = 4
#: Environment variable whose value is stored as each new record's user tag (e.g. who ran it).
TAG_ENV = "HTAM_MEMORY_TAG"
#: ``PRAGMA application_id`` of HTAM memory files ("HTAM" in ASCII).
APPLICATION_ID = 0x4854414D
#: ``format`` field of export files.
EXPORT_FORMAT = "htam-memory"
#: Source node of edges from an empty prefix.
START = "<start>"
#: Default total wait for a store locked by another writer, in seconds.
LOCK_TIMEOUT_S = 60.0
#: Environment variable overriding :data:`LOCK_TIMEOUT_S` (seconds, a non-negative number).
LOCK_TIMEOUT_ENV = "HTAM_MEMORY_LOCK_TIMEOUT"
#: The first 16 bytes of every SQLite 3 database file (the SQLite file format, section 1.3).
SQLITE_MAGIC = b"SQLite format 3\x00"
#: First and largest wait between two attempts on a locked store, in seconds (doubling in between).
_BACKOFF_FIRST_S, _BACKOFF_MAX_S = 0.025, 1.0

_STATS_COLS = "count, wins, failures, n_values, mean, m2, last_seen, note_when, note_why, note_risk"

#: ``MIGRATIONS[v]`` upgrades a file from schema version ``v`` to ``v + 1``.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE records (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        uid TEXT NOT NULL UNIQUE,
        time REAL NOT NULL,
        prefix TEXT NOT NULL,
        state TEXT NOT NULL,
        step TEXT NOT NULL,
        direction TEXT NOT NULL,
        speedup REAL,
        correct INTEGER NOT NULL,
        measured INTEGER NOT NULL,
        status TEXT NOT NULL,
        note TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        device TEXT NOT NULL
    );
    CREATE INDEX records_step ON records (step);
    CREATE TABLE nodes (
        level TEXT NOT NULL, id TEXT NOT NULL,
        count INTEGER NOT NULL, wins INTEGER NOT NULL, failures INTEGER NOT NULL, n_values INTEGER NOT NULL,
        mean REAL NOT NULL, m2 REAL NOT NULL, last_seen REAL,
        note_when TEXT NOT NULL, note_why TEXT NOT NULL, note_risk TEXT NOT NULL,
        PRIMARY KEY (level, id)
    );
    CREATE TABLE edges (
        level TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL,
        count INTEGER NOT NULL, wins INTEGER NOT NULL, failures INTEGER NOT NULL, n_values INTEGER NOT NULL,
        mean REAL NOT NULL, m2 REAL NOT NULL, last_seen REAL,
        note_when TEXT NOT NULL, note_why TEXT NOT NULL, note_risk TEXT NOT NULL,
        PRIMARY KEY (level, src, dst)
    );
    """,
    # v2: the measured spread of each outcome's speedup (NULL in records written before it)
    """
    ALTER TABLE records ADD COLUMN spread REAL;
    """,
    # v3: where each record came from: host, GPU model and user tag (NULL in records written before it)
    """
    ALTER TABLE records ADD COLUMN host TEXT;
    ALTER TABLE records ADD COLUMN gpu TEXT;
    ALTER TABLE records ADD COLUMN tag TEXT;
    """,
    # v4: which variant of the step (the candidate's parameters, as a variant key; NULL before it)
    """
    ALTER TABLE records ADD COLUMN variant TEXT;
    """,
]
assert len(MIGRATIONS) == SCHEMA_VERSION


class MemoryStoreError(Exception):
    """The memory store cannot be used as it is. The message says what happened and what to do.

    Attributes:
        path: the file concerned.
        kind: ``"corrupt"``, ``"foreign"``, ``"newer"``, ``"locked"``, ``"readonly"``, ``"not-a-store"``,
            ``"config"`` (a bad ``$HTAM_MEMORY_LOCK_TIMEOUT``) or ``"io"``.
        pending: the pending file a record that could not be written was kept in, or ``None``.
    """

    def __init__(self, message: str, path: str | Path, kind: str, pending: Path | None = None) -> None:
        super().__init__(message)
        self.path = str(path)
        self.kind = kind
        self.pending = pending

    def for_option(self, option: str) -> MemoryStoreError:
        """The same error with its advice naming ``option`` (``"--into"``) instead of ``--memory`` and
        ``$HTAM_MEMORY``, for a command whose store path comes from another option (``htam memory merge
        ... --into TEAM``). A suggested ``htam memory reset --move-aside --memory PATH`` command is kept."""
        keep = "--move-aside --memory"
        text = str(self).replace(keep, "\0")
        for name in ("--memory/HTAM_MEMORY", "--memory or HTAM_MEMORY", "--memory"):
            text = text.replace(name, option)
        return MemoryStoreError(text.replace("\0", keep), self.path, self.kind, self.pending)


def lock_timeout_s() -> float:
    """The total wait for a locked store: ``$HTAM_MEMORY_LOCK_TIMEOUT`` seconds, else :data:`LOCK_TIMEOUT_S`.

    Raises:
        MemoryStoreError: (``kind="config"``) the variable is not a non-negative number.
    """
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        raise MemoryStoreError(f"{LOCK_TIMEOUT_ENV}={raw!r} is not a number of seconds; set it to e.g. 60 or unset "
                               "it", raw, "config")
    return value


def _errname(exc: sqlite3.Error) -> str:
    """The SQLite primary result code name of ``exc`` (``SQLITE_BUSY`` ...), or ``""``."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return "_".join(name.split("_")[:2])


def _is_locked(exc: sqlite3.Error) -> bool:
    return _errname(exc) in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in str(exc)


def _is_readonly(exc: sqlite3.Error) -> bool:
    return _errname(exc) in ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")


def _is_corrupt(exc: sqlite3.Error) -> bool:
    return _errname(exc) in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or not _errname(exc) and isinstance(
        exc, sqlite3.DatabaseError) and ("not a database" in str(exc) or "malformed" in str(exc))


def _locked_error(path: Path, waited: float) -> MemoryStoreError:
    return MemoryStoreError(
        f"the memory store {path} is locked by another writer (waited {waited:g} s). Close the other htam "
        f"process or editor that is writing it, or raise {LOCK_TIMEOUT_ENV} (seconds, default "
        f"{LOCK_TIMEOUT_S:.0f}), then retry", path, "locked")


def _with_lock_retry(path: Path, fn: Any, timeout_s: float | None = None) -> Any:
    """Call ``fn()``; while SQLite reports the store busy or locked, retry with exponential backoff.

    Waits 25 ms, 50 ms, ... up to 1 s between attempts, for at most ``timeout_s`` seconds in total
    (default :func:`lock_timeout_s`).

    Raises:
        MemoryStoreError: (``kind="locked"``) still locked when the time is up.
    """
    total = lock_timeout_s() if timeout_s is None else timeout_s
    start = _time.monotonic()
    wait = _BACKOFF_FIRST_S
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _is_locked(exc):
                raise
            left = total - (_time.monotonic() - start)
            if left <= 0:
                raise _locked_error(path, total) from None
            _time.sleep(min(wait, left))
            wait = min(wait * 2, _BACKOFF_MAX_S)


def default_store_path() -> Path:
    """``$HTAM_MEMORY`` if set, else ``<platformdirs user data dir>/htam/memory.sqlite3``."""
    env = os.environ.get("HTAM_MEMORY")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("htam", appauthor=False)) / "memory.sqlite3"


def _connect(path: Path, mode: Literal["rw", "ro", "immutable"] = "rw") -> sqlite3.Connection:
    """Open ``path``: read-write (created if missing), read-only, or read-only and immutable (for a WAL file in
    a read-only folder, where SQLite cannot create the ``-shm`` file; see "immutable" in SQLite's URI docs).
    SQLite's own busy wait is kept short (100 ms): :func:`_with_lock_retry` does the backoff."""
    if mode == "rw":
        target, uri = str(path), False
    else:
        target, uri = path.resolve().as_uri() + ("?mode=ro" if mode == "ro" else "?mode=ro&immutable=1"), True
    conn = sqlite3.connect(target, timeout=0.1, isolation_level=None, check_same_thread=False, uri=uri)
    conn.execute("PRAGMA busy_timeout = 100")
    return conn


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` is a regular file that starts with :data:`SQLITE_MAGIC`."""
    if not path.is_file():  # checked first: opening a named pipe for reading would block
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _writable(path: Path) -> bool:
    """Whether SQLite can write ``path`` in WAL mode: the file (when it exists) and its folder (``-wal``,
    ``-shm``) must be writable. ``os.access`` also reports a read-only file system."""
    folder_ok = os.access(path.parent, os.W_OK | os.X_OK)
    return folder_ok and (not path.exists() or os.access(path, os.W_OK))


def _corrupt(path: Path, detail: str) -> MemoryStoreError:
    if not is_sqlite_file(path):
        return MemoryStoreError(
            f"{path} is not an SQLite database ({detail}), so it is not an HTAM memory store; it was left "
            "untouched. Point --memory/HTAM_MEMORY at the store file (or a new file), or move this file away "
            "yourself if it really is a damaged store", path, "corrupt")
    return MemoryStoreError(
        f"the memory store {path} is corrupt ({detail}). It was left untouched. "
        f"Move it aside with `htam memory reset --move-aside --memory {path}` (it is renamed to "
        f"{path.name}.corrupt-<time> and an empty store is created), or point --memory/HTAM_MEMORY elsewhere",
        path, "corrupt")


def _io_error(path: Path, what: str, exc: BaseException) -> MemoryStoreError:
    detail = getattr(exc, "strerror", None) or str(exc)
    if isinstance(exc, sqlite3.Error) and _is_readonly(exc) or isinstance(exc, PermissionError) or \
            getattr(exc, "errno", None) == 30:  # EROFS
        return MemoryStoreError(
            f"cannot {what} the memory store {path}: it is not writable ({detail}). Fix the permissions of the "
            "file and its folder, or point --memory/HTAM_MEMORY at a writable file", path, "readonly")
    if isinstance(exc, sqlite3.Error) and _errname(exc) == "SQLITE_FULL" or getattr(exc, "errno", None) == 28:
        return MemoryStoreError(f"cannot {what} the memory store {path}: the disk is full ({detail}). Free some "
                                "space on it, or point --memory/HTAM_MEMORY at a store on another disk", path, "io")
    return MemoryStoreError(f"cannot {what} the memory store {path}: {detail}. Check the disk and the path",
                            path, "io")


class _Db:
    """One SQLite memory file, opened, checked and migrated; read-only when it cannot be written.

    Args:
        path: the file.
        on_corrupt: ``"error"`` or ``"move-aside"`` (see :func:`open_store`).
        make_parents: create a missing folder (the default location, a workspace's ``.htam``); otherwise a
            missing folder is refused as a mistyped path.

    Attributes:
        read_only: the file is opened read-only (permissions or a read-only file system); writes raise.
        created: the file did not exist and was created (empty) now.
        moved_aside: where a corrupt file was moved, or ``None``.
    """

    def __init__(self, path: Path, on_corrupt: str, make_parents: bool = True) -> None:
        self.path = path
        self.moved_aside: Path | None = None
        self.read_only = False
        self.columns = _RECORD_COLS  # the record columns to select (older read-only files: NULL for missing ones)
        if path.is_dir():
            raise MemoryStoreError(
                f"{path} is a folder, not a memory store file; it was left untouched. Pass the path of a store "
                f"file, e.g. --memory {path / 'memory.sqlite3'}", path, "not-a-store")
        if path.exists() and not path.is_file():  # a named pipe or a device: SQLite would block or fail on it
            raise MemoryStoreError(
                f"{path} is not a regular file (a named pipe, socket or device), so it is not a memory store; it "
                "was left untouched. Point --memory/HTAM_MEMORY at a store file", path, "not-a-store")
        if not path.parent.is_dir():
            if not make_parents:
                raise MemoryStoreError(
                    f"no memory store at {path}: its folder {path.parent} does not exist (a mistyped --memory or "
                    "HTAM_MEMORY?). Check the path, or create the folder first to start a new store there",
                    path, "not-a-store")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _io_error(path, "create the folder of", exc) from None
        self.created = not path.exists()
        try:
            self.conn = self._open_checked()
        except MemoryStoreError as exc:
            if self.created:
                _remove_if_empty(path)
            if exc.kind != "corrupt" or on_corrupt != "move-aside":
                raise
            self.moved_aside = move_aside(path)
            self.created = True
            self.conn = self._open_checked()

    def _open_checked(self) -> sqlite3.Connection:
        path = self.path
        if path.exists() and path.stat().st_size > 0 and not is_sqlite_file(path):
            raise _corrupt(path, "it does not start with the SQLite header")
        if _writable(path):
            try:
                return _with_lock_retry(path, lambda: self._setup(_connect(path)))
            except sqlite3.Error as exc:
                if not (_is_readonly(exc) and path.exists()):
                    raise self._classify(exc) from None
        elif not path.exists():
            raise _io_error(path, "create", PermissionError(13, "its folder is not writable"))
        self.read_only = True
        for mode in ("ro", "immutable"):  # immutable: a WAL file in a read-only folder (no -shm can be made)
            try:
                return _with_lock_retry(path, lambda m=mode: self._setup(_connect(path, m), read_only=True))
            except sqlite3.Error as exc:
                if mode == "immutable" or not _is_readonly(exc):
                    raise self._classify(exc) from None
        raise AssertionError("unreachable")

    def _classify(self, exc: sqlite3.Error) -> MemoryStoreError:
        if _is_locked(exc):
            return _locked_error(self.path, 0.0)
        if _is_corrupt(exc):
            return _corrupt(self.path, str(exc))
        return _io_error(self.path, "use", exc)

    def _setup(self, conn: sqlite3.Connection, read_only: bool = False) -> sqlite3.Connection:
        """Check the identity, schema and integrity of an open file; switch it to WAL and migrate it."""
        path = self.path
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables > 0):
                raise MemoryStoreError(
                    f"{path} is an SQLite database but not an HTAM memory store; it was left untouched. "
                    "Point --memory/HTAM_MEMORY at another file", path, "foreign")
            if version > SCHEMA_VERSION:
                raise MemoryStoreError(
                    f"the memory store {path} has schema version {version}, newer than this htam supports "
                    f"({SCHEMA_VERSION}); it was left untouched. Upgrade htam, or point --memory/HTAM_MEMORY "
                    "at another file", path, "newer")
            if tables > 0:
                check = conn.execute("PRAGMA quick_check").fetchall()
                if check != [("ok",)]:
                    raise _corrupt(path, "integrity check: " + "; ".join(str(r[0]) for r in check[:3]))
            if read_only:
                if version < 1 or tables == 0:
                    raise MemoryStoreError(
                        f"the memory store {path} is empty and not writable, so it cannot be set up. Fix the "
                        "permissions of the file and its folder, or point --memory/HTAM_MEMORY at a writable file",
                        path, "readonly")
                # an older schema is read as it is (columns it lacks read as NULL), never migrated
                self.columns = _columns_of(conn, version)
                return conn
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise MemoryStoreError(f"cannot switch {path} to WAL mode (got {mode}); use a local file "
                                       "system for the memory store", path, "io")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate(conn)
            self.columns = _RECORD_COLS
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # re-read under the lock
            for v in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[v].split(";"):
                    if statement.strip():
                        conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('created', ?)", (repr(_time.time()),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @contextmanager
    def write(self, timeout_s: float | None = None) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; commits on success, rolls back on any exception.

        Args:
            timeout_s: total wait for a lock held by another writer (default :func:`lock_timeout_s`).

        Raises:
            MemoryStoreError: ``kind="readonly"`` (opened read-only, or the OS refused the write),
                ``"locked"`` (still locked after the timeout), ``"corrupt"`` or ``"io"``; nothing is written.
        """
        if self.read_only:
            raise _io_error(self.path, "write", PermissionError(13, "it was opened read-only"))
        try:
            _with_lock_retry(self.path, lambda: self.conn.execute("BEGIN IMMEDIATE"), timeout_s)
        except sqlite3.Error as exc:
            raise self._classify(exc) from None
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError):
                raise self._classify(exc) from None
            raise

    def close(self) -> None:
        self.conn.close()


def _remove_if_empty(path: Path) -> None:
    """Delete a store file that a failed open created and left empty, with its side files.

    Empty: 0 bytes, or an SQLite header and no table (the state after ``PRAGMA journal_mode = WAL`` on a new
    file), with no write-ahead log content. A file holding anything else is kept: another process may have
    set it up meanwhile.
    """
    wal = path.with_name(path.name + "-wal")
    try:
        if wal.exists() and wal.stat().st_size > 0:
            return
        if path.stat().st_size > 0:
            if not is_sqlite_file(path):
                return
            conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
            try:
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    return
            finally:
                conn.close()
        remove_store_files(path)
    except (OSError, sqlite3.Error):
        pass


def remove_store_files(path: str | Path) -> None:
    """Delete a store file with its ``-wal`` and ``-shm`` files (a task that starts its own store afresh)."""
    p = Path(path)
    for q in (p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm")):
        q.unlink(missing_ok=True)


def gpu_model(device: str) -> str | None:
    """The GPU model of a record's ``device``: the device name itself, or ``None`` for a static target
    (``"sm_90 (static)"``) or an empty name."""
    return None if not device or device.endswith("(static)") else device


def check_movable(path: Path) -> None:
    """Raise unless ``path`` is a regular file starting with :data:`SQLITE_MAGIC` (see :func:`move_aside`).

    Raises:
        MemoryStoreError: (``kind="not-a-store"``) a folder, a missing file, or a file of another format.
    """
    if not is_sqlite_file(path):
        what = "a folder" if path.is_dir() else "missing" if not path.exists() else "not an SQLite file"
        raise MemoryStoreError(
            f"refusing to move {path} aside: it is {what}, not an HTAM memory store (it does not start with the "
            "SQLite header). Check --memory/HTAM_MEMORY; htam only renames SQLite store files", path, "not-a-store")


def move_aside(path: Path) -> Path:
    """Rename ``path`` (and its ``-wal``/``-shm`` files) to ``<path>.corrupt-<YYYYmmdd-HHMMSS>``; return it.

    Raises:
        MemoryStoreError: (``kind="not-a-store"``) ``path`` is not a regular file starting with
            :data:`SQLITE_MAGIC` (a folder, a text file, a missing file): htam renames only SQLite files.
    """
    check_movable(path)
    stamp = _time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists():
            os.replace(side, Path(str(target) + suffix))
    return target


def pending_paths(store_path: Path) -> list[Path]:
    """Where records that could not be written to ``store_path`` are kept, in order of preference.

    ``<store>.pending.jsonl`` next to the store, then (for a read-only folder)
    ``<platformdirs user state dir>/htam/pending/<store name>-<hash of its path>.pending.jsonl``.
    Each line is one :meth:`Record.to_json` object.
    """
    import platformdirs

    digest = hashlib.sha1(str(store_path.resolve()).encode()).hexdigest()[:12]
    state = Path(platformdirs.user_state_dir("htam", appauthor=False)) / "pending"
    return [store_path.with_name(store_path.name + ".pending.jsonl"),
            state / f"{store_path.name}-{digest}.pending.jsonl"]


def _keep_pending(store_path: Path, rec: Record) -> Path | None:
    """Append ``rec`` to the first writable pending file of ``store_path``; ``None`` when none is writable."""
    line = json.dumps(rec.to_json(), sort_keys=True) + "\n"
    for target in pending_paths(store_path):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(line)
            return target
        except OSError:
            continue
    return None


def _row_to_record(row: Sequence[Any]) -> Record:
    (_id, uid, t, prefix, state, step, direction, speedup, correct, measured, status, note, fp, device,
     spread, host, gpu, tag, variant) = row
    return Record(tuple(json.loads(prefix)), json.loads(state), step, direction,
                  Outcome(speedup, bool(correct), bool(measured), status, note, spread), fp, device, t, uid,
                  host, gpu, tag, variant)


_RECORD_COLS = ("id, uid, time, prefix, state, step, direction, speedup, correct, measured, status, note, "
                "fingerprint, device, spread, host, gpu, tag, variant")
#: The placeholders of one row of :data:`_RECORD_COLS` (the id is assigned by SQLite).
_RECORD_MARKS = "NULL, " + ", ".join("?" * (len(_RECORD_COLS.split(", ")) - 1))
#: Uids looked up per statement on import (well under SQLite's default limit of 32,766 parameters).
_UID_CHUNK = 500


def _record_row(rec: Record) -> tuple[Any, ...]:
    """The values of ``rec`` for :data:`_RECORD_MARKS`."""
    o = rec.outcome
    return (rec.uid, rec.time, json.dumps(list(rec.prefix)), json.dumps(rec.state, sort_keys=True), rec.step,
            rec.direction, o.speedup, int(o.correct), int(o.measured), o.status, o.note, rec.fingerprint,
            rec.device, o.spread, rec.host, rec.gpu, rec.tag, rec.variant)


def _columns_of(conn: sqlite3.Connection, version: int) -> str:
    """:data:`_RECORD_COLS` for a file of schema ``version``: the columns it lacks selected as ``NULL``."""
    if version >= SCHEMA_VERSION:
        return _RECORD_COLS
    have = {r[1] for r in conn.execute("PRAGMA table_info(records)")}
    return ", ".join(c if c in have else f"NULL AS {c}" for c in _RECORD_COLS.split(", "))


#: The statistics one transaction touches: ``("nodes", (level, id))`` or ``("edges", (level, src, dst))`` -> stats.
_StatsCache = dict[tuple[str, tuple[str, ...]], Stats]


def _stats_from_row(row: Sequence[Any]) -> Stats:
    return Stats(*row)


@dataclass
class MergeCounts:
    """What :meth:`Store.merge_records` did: records added, already present with the same content, and the uids
    present with other content (conflicts; the stored record was kept)."""

    added: int = 0
    same: int = 0
    conflicts: list[str] = field(default_factory=list)


def read_records(path: str | Path) -> list[Record]:
    """Every record of the memory store ``path``, read without modifying the file (read-only, any schema from 1
    to :data:`SCHEMA_VERSION`: columns an older schema lacks read as ``None``).

    Raises:
        MemoryStoreError: no such file, not an SQLite file, not an HTAM store, a newer schema, or unreadable.
    """
    p = Path(path)
    if not is_sqlite_file(p):
        raise MemoryStoreError(f"{p} is not a memory store file (missing, or not an SQLite database); check the "
                               "path", p, "not-a-store")
    try:
        conn = _connect(p, "ro")
    except sqlite3.Error as exc:
        raise _io_error(p, "read", exc) from None
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise MemoryStoreError(f"{p} is an SQLite database but not an HTAM memory store", p, "foreign")
        if version > SCHEMA_VERSION:
            raise MemoryStoreError(f"{p} has schema version {version}, newer than this htam supports "
                                   f"({SCHEMA_VERSION}); upgrade htam", p, "newer")
        cols = _columns_of(conn, version)
        return [_row_to_record(r) for r in conn.execute(f"SELECT {cols} FROM records ORDER BY id")]
    except sqlite3.Error as exc:
        raise _corrupt(p, str(exc)) if _is_corrupt(exc) else _io_error(p, "read", exc) from None
    finally:
        conn.close()


@dataclass
class ImportResult:
    """What an import did: records added, and records skipped because their uid was already there."""

    added: int = 0
    skipped: int = 0


@dataclass
class Store:
    """A memory store: one SQLite file, or a workspace file overlaying the user file.

    Use :func:`open_store` to get one. ``dbs[0]`` receives writes; reads merge every file.

    Attributes:
        kb: the knowledge base used to map steps to directions.
        warnings: things the user should know (a corrupt file moved aside ...).
    """

    dbs: list[_Db]
    kb: KnowledgeBase
    warnings: list[str] = field(default_factory=list)
    _lock_gave_up: bool = field(default=False, repr=False)

    # ---- paths and lifecycle -------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The file that receives writes."""
        return self.dbs[0].path

    @property
    def paths(self) -> list[Path]:
        """Every file, the write target first."""
        return [db.path for db in self.dbs]

    @property
    def read_only(self) -> bool:
        """The write file was opened read-only: reads work, writes raise (records go to a pending file)."""
        return self.dbs[0].read_only

    def close(self) -> None:
        """Close every connection."""
        for db in self.dbs:
            db.close()

    def discard_if_new(self) -> bool:
        """Close the store; delete its write file when this open created it and it still holds no record.

        A command whose write failed (a full disk during an import) calls it, so that a failure never leaves an
        empty store file that was not there before. Returns whether the file was deleted.
        """
        db = self.dbs[0]
        try:
            empty = db.created and db.conn.execute("SELECT count(*) FROM records").fetchone()[0] == 0
        except sqlite3.Error:
            empty = False
        self.close()
        if empty:
            remove_store_files(db.path)
        return empty

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writes --------------------------------------------------------------------------------
    def record(self, prefix: list[str], state: dict[str, float], step: str, outcome: Outcome, fingerprint: str,
               device: str, *, time: float | None = None, variant: str | None = None) -> Record:
        """Add one record and update node and edge statistics on both levels, in one transaction.

        Args:
            prefix: the last k strategy ids applied before ``step``, oldest first.
            state: the state vector before the step (:func:`~htam_core.memory.features.state_from_profile`).
            step: the strategy id applied (must exist in the knowledge base).
            outcome: what happened; ``incorrect``/``failed`` count as failures with a penalty value.
            fingerprint: kernel fingerprint; device: device name.
            time: epoch seconds (default now).
            variant: which candidate of the step it was (:func:`htam_core.memory.variants.variant_key`), or
                ``None``.

        Returns:
            the stored :class:`Record`.

        Raises:
            ValueError: unknown step, malformed prefix/state, or a state value or time that is not finite.
            MemoryStoreError: the file cannot be written now (``kind`` says why: ``"locked"`` after the lock
                timeout, ``"readonly"``, ...). The record is not lost: it is kept in a pending file
                (:attr:`MemoryStoreError.pending`, named in the message) and added on the next writable open.
                After one lock timeout, later records of this store try once without waiting (and are kept).
        """
        if not self.kb.has_strategy(step):
            raise ValueError(f"unknown step {step!r}: not a strategy of the knowledge base (see `htam suggest`)")
        if not all(isinstance(p, str) for p in prefix):
            raise ValueError("prefix must be a list of strategy ids")
        values = {str(k): float(v) for k, v in state.items()}
        t = _time.time() if time is None else float(time)
        bad = [k for k, v in values.items() if not math.isfinite(v)] + ([] if math.isfinite(t) else ["time"])
        if bad:
            raise ValueError(f"not finite: {', '.join(bad)}; state values and time must be finite numbers")
        rec = Record(tuple(prefix), values, step, self.kb.strategy(step).direction, outcome, str(fingerprint),
                     str(device), t, host=platform.node() or None, gpu=gpu_model(str(device)),
                     tag=os.environ.get(TAG_ENV) or None, variant=variant)
        try:
            with self.dbs[0].write(timeout_s=0.0 if self._lock_gave_up else None) as conn:
                self._insert(conn, rec)
        except MemoryStoreError as exc:
            self._lock_gave_up = self._lock_gave_up or exc.kind == "locked"
            kept = _keep_pending(self.path, rec)
            where = (f"The record was kept in {kept} and is added to the store the next time htam opens it for "
                     "writing" if kept else "The record could not be kept anywhere either (no writable pending "
                     f"file: {', '.join(map(str, pending_paths(self.path)))}); it is lost")
            raise MemoryStoreError(f"{exc}. {where}", self.path, exc.kind, kept) from None
        self._lock_gave_up = False
        self.flush_pending()
        return rec

    def flush_pending(self) -> int:
        """Add the records kept in the pending files of the write file (see :func:`pending_paths`), skipping
        uids already present, in one transaction; remove the files. Returns the number of records added.

        A pending file that cannot be read, or a store that cannot be written now, is left for next time and
        noted in :attr:`warnings`; malformed lines are left in the file.
        """
        if self.read_only:
            return 0
        added = 0
        for f in pending_paths(self.path):
            if not f.is_file():
                continue
            try:
                lines = f.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                self.warnings.append(f"cannot read the pending records in {f}: {exc}; they were not added")
                continue
            recs, bad = [], []
            for line in lines:
                try:
                    recs.append(Record.from_json(json.loads(line)))
                except (ValueError, KeyError, TypeError):
                    bad.append(line)
            try:
                result = self.import_records(recs, timeout_s=0.0)
            except MemoryStoreError as exc:
                self.warnings.append(f"{len(recs)} pending record(s) in {f} are not added yet: {exc}")
                continue
            added += result.added
            try:
                if bad:
                    f.write_text("\n".join(bad) + "\n", encoding="utf-8")
                    self.warnings.append(f"{len(bad)} malformed line(s) left in {f}")
                else:
                    f.unlink()
            except OSError:
                pass  # added already; importing again skips them by uid
            if result.added:
                self.warnings.append(f"added {result.added} pending record(s) from {f} to {self.path}")
        return added

    def _direction_of(self, strategy_id: str) -> str:
        return self.kb.strategy(strategy_id).direction if self.kb.has_strategy(strategy_id) else "?"

    def adopt(self, uids: Sequence[str]) -> int:
        """Make the records ``uids`` (candidates ``htam optimize`` recorded under a kernel's tried id,
        :func:`~htam_core.memory.fingerprint.tried_fingerprint`) steps of the kernel's file: their id loses the
        tried mark, so the file's history (the hover's "Last steps", the prefix of its ranking) holds them, as
        after ``htam optimize --apply`` wrote them into the file. The statistics do not change (the records were
        learned from already). Returns how many records changed; a uid not in this store's file is skipped.

        Raises:
            MemoryStoreError: the file cannot be written now (see :meth:`record`).
        """
        if not uids:
            return 0
        n = len(TRIED_MARK)
        with self.dbs[0].write() as conn:
            cur = conn.execute(
                f"UPDATE records SET fingerprint = substr(fingerprint, 1, length(fingerprint) - {n}) "
                f"WHERE fingerprint LIKE ? AND uid IN ({', '.join('?' * len(uids))})",
                ("%" + TRIED_MARK, *uids))
            return cur.rowcount

    def _insert(self, conn: sqlite3.Connection, rec: Record, cache: _StatsCache | None = None) -> None:
        """Insert ``rec`` and add it to the statistics (inside the caller's transaction; ``cache``: see
        :meth:`_update_stats`)."""
        conn.execute(f"INSERT INTO records ({_RECORD_COLS}) VALUES ({_RECORD_MARKS})", _record_row(rec))
        self._update_stats(conn, rec, cache)

    def _update_stats(self, conn: sqlite3.Connection, rec: Record, cache: _StatsCache | None = None) -> None:
        """Add one record to the node and edge statistics of both levels (inside the caller's transaction).

        With ``cache``, the statistics touched are read from the file once, updated in memory and written by
        :meth:`_write_stats` at the end of the transaction (an import of 100,000 records then costs one
        statement per record, not nine); without it they are written now.
        """
        own = cache is None
        cache = {} if cache is None else cache
        o = rec.outcome
        value = outcome_value(o)
        when = bottleneck_of_state(rec.state)
        last = rec.prefix[-1] if rec.prefix else START
        last_dir = self._direction_of(last) if rec.prefix else START
        targets = [("nodes", ("direction", rec.direction)), ("nodes", ("strategy", rec.step)),
                   ("edges", ("direction", last_dir, rec.direction)), ("edges", ("strategy", last, rec.step))]
        for table, key in targets:
            stats = cache.get((table, key))
            if stats is None:
                where = "level = ? AND id = ?" if table == "nodes" else "level = ? AND src = ? AND dst = ?"
                row = conn.execute(f"SELECT {_STATS_COLS} FROM {table} WHERE {where}", key).fetchone()
                stats = cache[(table, key)] = _stats_from_row(row) if row else Stats()
            stats.update(o, value, rec.time, when)
        if own:
            self._write_stats(conn, cache)

    @staticmethod
    def _write_stats(conn: sqlite3.Connection, cache: _StatsCache) -> None:
        """Write every statistic of ``cache`` (inside the caller's transaction)."""
        for table, keys in (("nodes", "level, id"), ("edges", "level, src, dst")):
            rows = [(*key, s.count, s.wins, s.failures, s.n_values, s.mean, s.m2, s.last_seen, s.note_when,
                     s.note_why, s.note_risk) for (t, key), s in cache.items() if t == table]
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                conn.executemany(f"INSERT OR REPLACE INTO {table} ({keys}, {_STATS_COLS}) VALUES ({marks})", rows)

    def merge_records(self, recs: Sequence[Record]) -> MergeCounts:
        """Merge records into the write file idempotently and in one transaction, keyed by uid.

        A record whose uid is absent is added; one whose uid is present with the same content (every field,
        provenance included) is counted as ``same``; one whose uid is present with other content is a
        conflict: the stored record is kept and the uid listed. The node and edge statistics are then rebuilt
        from every record in (time, uid) order, so the result depends only on the set of records: merging
        twice changes nothing, and merging A then B equals merging B then A.

        Raises:
            MemoryStoreError: not writable or locked past the timeout; nothing is written then.
        """
        counts = MergeCounts()
        with self.dbs[0].write() as conn:
            for rec in sorted(recs, key=lambda r: (r.time, r.uid)):
                row = conn.execute(f"SELECT {_RECORD_COLS} FROM records WHERE uid = ?", (rec.uid,)).fetchone()
                if row is None:
                    self._insert(conn, rec)
                    counts.added += 1
                elif _row_to_record(row).to_json() == rec.to_json():
                    counts.same += 1
                else:
                    counts.conflicts.append(rec.uid)
            if counts.added:
                for table in ("nodes", "edges"):
                    conn.execute(f"DELETE FROM {table}")
                cache: _StatsCache = {}
                for r in conn.execute(f"SELECT {_RECORD_COLS} FROM records ORDER BY time, uid").fetchall():
                    self._update_stats(conn, _row_to_record(r), cache)
                self._write_stats(conn, cache)
        return counts

    def reset(self) -> int:
        """Delete every record and statistic of the write file. Returns the number of records deleted.

        Raises:
            MemoryStoreError: not writable, locked past the timeout; nothing is deleted then.
        """
        with self.dbs[0].write() as conn:
            n = conn.execute("SELECT count(*) FROM records").fetchone()[0]
            for table in ("records", "nodes", "edges"):
                conn.execute(f"DELETE FROM {table}")
        return int(n)

    # ---- reads ---------------------------------------------------------------------------------
    def count(self) -> int:
        """Number of distinct records over every file."""
        if len(self.dbs) == 1:
            return int(self.dbs[0].conn.execute("SELECT count(*) FROM records").fetchone()[0])
        return sum(1 for _ in self.records())

    def high_water(self) -> tuple[int, ...]:
        """The largest record id of each file (a cheap "has anything changed" check)."""
        return tuple(int(db.conn.execute("SELECT coalesce(max(id), 0) FROM records").fetchone()[0])
                     for db in self.dbs)

    def records_after(self, after: Sequence[int] | None = None) -> tuple[list[Record], tuple[int, ...]]:
        """Records with ids above ``after`` (one id per file), in id order, deduplicated by uid.

        Returns:
            ``(records, new_after)`` where ``new_after`` is the high-water mark to pass next time.
        """
        after = tuple(after) if after is not None else (0,) * len(self.dbs)
        out: list[Record] = []
        marks: list[int] = []
        seen: set[str] = set()
        for db, lo in zip(self.dbs, after, strict=True):
            hi = lo
            for row in db.conn.execute(f"SELECT {db.columns} FROM records WHERE id > ? ORDER BY id", (lo,)):
                hi = row[0]
                rec = _row_to_record(row)
                if rec.uid not in seen:
                    seen.add(rec.uid)
                    out.append(rec)
            marks.append(hi)
        return out, tuple(marks)

    def ranking_rows_after(self, after: Sequence[int] | None, state_keys: Sequence[str]
                           ) -> tuple[list[tuple[Any, ...]], tuple[int, ...]]:
        """Fast read path for the ranker: records above ``after`` as raw tuples, deduplicated by uid.

        Each tuple is ``(uid, prefix_json, step, direction, speedup, correct, measured, status, fingerprint, gpu,
        variant, *state)`` (``gpu`` and ``variant`` are ``None`` in records of a schema without them) with the state unpacked in ``state_keys`` order by SQLite's ``json_extract`` (missing keys
        are 0.0), which avoids decoding every state in Python.

        Returns:
            ``(rows, new_after)`` as in :meth:`records_after`.
        """
        after = tuple(after) if after is not None else (0,) * len(self.dbs)
        state_cols = "".join(
            ", coalesce(json_extract(state, '$.\"{}\"'), 0.0)".format(k.replace('"', "")) for k in state_keys)
        out: list[tuple[Any, ...]] = []
        marks: list[int] = []
        seen: set[str] = set()
        for db, lo in zip(self.dbs, after, strict=True):
            hi = lo
            extra = ", ".join("NULL" if f"NULL AS {c}" in db.columns else c for c in ("gpu", "variant"))
            sql = ("SELECT id, uid, prefix, step, direction, speedup, correct, measured, status, fingerprint, "
                   f"{extra}{state_cols} FROM records WHERE id > ? ORDER BY id")
            for row in db.conn.execute(sql, (lo,)):
                hi = row[0]
                if row[1] not in seen:
                    seen.add(row[1])
                    out.append(row[1:])
            marks.append(hi)
        return out, tuple(marks)

    def records(self) -> Iterator[Record]:
        """Every record, write file first, each file in id order, deduplicated by uid."""
        recs, _ = self.records_after()
        yield from recs

    def node_stats(self, level: str) -> dict[str, Stats]:
        """Statistics of the nodes of one level (``"direction"`` or ``"strategy"``), merged over files."""
        out: dict[str, Stats] = {}
        for db in self.dbs:
            for row in db.conn.execute(f"SELECT id, {_STATS_COLS} FROM nodes WHERE level = ?", (level,)):
                s = _stats_from_row(row[1:])
                out[row[0]] = out[row[0]].merged(s) if row[0] in out else s
        return out

    def edge_stats(self, level: str) -> dict[tuple[str, str], Stats]:
        """Statistics of the edges of one level, ``(src, dst) -> Stats``, merged over files."""
        out: dict[tuple[str, str], Stats] = {}
        for db in self.dbs:
            for row in db.conn.execute(f"SELECT src, dst, {_STATS_COLS} FROM edges WHERE level = ?", (level,)):
                key = (row[0], row[1])
                s = _stats_from_row(row[2:])
                out[key] = out[key].merged(s) if key in out else s
        return out

    # ---- export / import -----------------------------------------------------------------------
    def export(self) -> dict[str, Any]:
        """The whole memory as plain JSON: ``{"format", "schema", "kb_version", "records", "nodes", "edges"}``.

        Records are in storage order; statistics are sorted by key. Importing the result into an empty
        store and exporting again gives an equal object.
        """
        nodes = [{"level": lvl, "id": k, **s.to_json()} for lvl in ("direction", "strategy")
                 for k, s in sorted(self.node_stats(lvl).items())]
        edges = [{"level": lvl, "src": k[0], "dst": k[1], **s.to_json()} for lvl in ("direction", "strategy")
                 for k, s in sorted(self.edge_stats(lvl).items())]
        return {"format": EXPORT_FORMAT, "schema": SCHEMA_VERSION, "kb_version": self.kb.version,
                "records": [r.to_json() for r in self.records()], "nodes": nodes, "edges": edges}

    def import_json(self, data: Any) -> ImportResult:
        """Merge an export into the write file, in one transaction.

        Records whose uid is already present are skipped; every new record updates the statistics exactly
        as :meth:`record` would, so statistics merge (and importing the same file twice changes nothing).

        Raises:
            ValueError: not an HTAM memory export, a newer export schema, or a malformed record (too large, not
                text, or naming a step or direction this knowledge base does not have; the message gives its
                index). Nothing is written then.
        """
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise ValueError(f"not an HTAM memory export (expected \"format\": \"{EXPORT_FORMAT}\")")
        schema = data.get("schema")
        if not isinstance(schema, int) or schema > SCHEMA_VERSION:
            raise ValueError(f"export schema {schema!r} is not supported by this htam (<= {SCHEMA_VERSION})")
        raw = data.get("records")
        if not isinstance(raw, list):
            raise ValueError("export has no \"records\" list")
        recs = []
        for i, r in enumerate(raw):
            try:
                rec = Record.from_json(r)
                rec.check_names(self.kb)
                recs.append(rec)
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"record {i} of the export is malformed: {exc}") from None
        return self.import_records(recs)

    def import_records(self, recs: Sequence[Record], *, timeout_s: float | None = None) -> ImportResult:
        """Add records to the write file in one transaction, skipping uids already present.

        Args:
            recs: validated records (:meth:`Record.from_json` checks them).
            timeout_s: total wait for a lock (default :func:`lock_timeout_s`).

        Raises:
            MemoryStoreError: not writable or locked past the timeout; nothing is written then.
        """
        result = ImportResult()
        with self.dbs[0].write(timeout_s) as conn:
            new: dict[str, Record] = {}
            for rec in recs:  # the first of a uid given twice wins, as if they were added one by one
                new.setdefault(rec.uid, rec)
            uids = list(new)
            for i in range(0, len(uids), _UID_CHUNK):
                chunk = uids[i:i + _UID_CHUNK]
                marks = ", ".join("?" * len(chunk))
                for (uid,) in conn.execute(f"SELECT uid FROM records WHERE uid IN ({marks})", chunk):
                    del new[uid]
            conn.executemany(f"INSERT INTO records ({_RECORD_COLS}) VALUES ({_RECORD_MARKS})",
                             (_record_row(rec) for rec in new.values()))
            cache: _StatsCache = {}
            for rec in new.values():
                self._update_stats(conn, rec, cache)
            self._write_stats(conn, cache)
            result.added, result.skipped = len(new), len(recs) - len(new)
        return result


def open_store(
    path: str | Path | None = None,
    workspace: str | Path | None = None,
    *,
    on_corrupt: Literal["error", "move-aside"] = "error",
    kb: KnowledgeBase | None = None,
) -> Store:
    """Open (creating the file if needed, which :attr:`Store.warnings` says) the memory store.

    Args:
        path: the user store file; default :func:`default_store_path` (``$HTAM_MEMORY`` or the platformdirs
            user data dir).
        workspace: an optional workspace store that overlays the user store: a ``.sqlite3`` file, or a
            folder (the store is then ``<folder>/.htam/memory.sqlite3``). Writes go to it.
        on_corrupt: ``"error"`` raises :class:`MemoryStoreError`; ``"move-aside"`` renames a corrupt file
            to ``<name>.corrupt-<time>``, starts an empty one and adds a warning to ``Store.warnings``.
        kb: knowledge base (default :func:`~htam_core.memory.knowledge.load_knowledge`).

    Raises:
        MemoryStoreError: corrupt (with ``on_corrupt="error"``), newer schema, not an HTAM store, a folder,
            an explicit path whose folder does not exist (``path`` or ``$HTAM_MEMORY``: a mistyped path is
            refused rather than silently created; the default location's folder is created), locked past the
            timeout while being set up, or not writable and not yet set up. Such files are never modified.
            A healthy store that is not writable opens read-only (:attr:`Store.read_only`, with a warning).
    """
    if on_corrupt not in ("error", "move-aside"):
        raise ValueError("on_corrupt must be 'error' or 'move-aside'")
    explicit = path is not None or bool(os.environ.get("HTAM_MEMORY"))
    user = Path(path).expanduser() if path is not None else default_store_path()
    files: list[tuple[Path, bool]] = []  # (file, may create its folder)
    if workspace is not None:
        ws = Path(workspace).expanduser()
        files.append((ws / ".htam" / "memory.sqlite3", True) if ws.is_dir() else (ws, False))
    files.append((user, not explicit))
    dbs: list[_Db] = []
    warnings: list[str] = []
    try:
        for f, make_parents in files:
            if any(f.resolve() == d.path.resolve() for d in dbs):
                continue
            db = _Db(f, on_corrupt, make_parents)
            if db.moved_aside is not None:
                warnings.append(f"the memory store {f} was corrupt; it was moved to {db.moved_aside} and an "
                                "empty store was created")
            elif db.created:
                warnings.append(f"created a new, empty memory store at {f}")
            if db.read_only:
                warnings.append(f"the memory store {f} is not writable (permissions or a read-only file system): "
                                "it was opened read-only, so reads work but new records are kept in a pending "
                                "file until it is writable again")
            dbs.append(db)
    except BaseException:
        for d in dbs:
            d.close()
        raise
    store = Store(dbs, kb or load_knowledge(), warnings)
    store.flush_pending()
    return store
