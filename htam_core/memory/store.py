"""The durable HTAM memory: records plus node and edge statistics in SQLite.

* One SQLite file per store, in WAL mode, ``synchronous=NORMAL`` (a killed process loses at most its
  uncommitted transaction and never corrupts the file; see the SQLite WAL documentation).
* Versioned schema: ``PRAGMA user_version`` holds the schema version and ``PRAGMA application_id`` marks
  the file as ours; :data:`MIGRATIONS` upgrades older files in one transaction.
* Every write is one ``BEGIN IMMEDIATE`` transaction with a 30 s busy timeout, so two processes (two
  editor servers) writing the same store serialize and lose nothing.
* A file that is not an HTAM memory, is corrupt, or was written by a newer schema raises
  :class:`MemoryStoreError` and is never modified; ``on_corrupt="move-aside"`` renames a corrupt file to
  ``<name>.corrupt-<time>`` and starts an empty one.
* An optional workspace store overlays the user store: reads merge both, writes go to the workspace.

Records are (prefix, state, step, outcome, fingerprint, device, time); see
:mod:`htam_core.memory.records`. Modelled on TVM meta_schedule's JSON database of tuning records.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time as _time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from htam_core.memory.features import bottleneck_of_state
from htam_core.memory.knowledge import KnowledgeBase, load_knowledge
from htam_core.memory.records import Outcome, Record, Stats, outcome_value

__all__ = ["SCHEMA_VERSION", "APPLICATION_ID", "EXPORT_FORMAT", "MemoryStoreError", "Store", "open_store",
           "default_store_path", "START"]

#: Current schema version (``PRAGMA user_version``).
SCHEMA_VERSION = 2
#: ``PRAGMA application_id`` of HTAM memory files ("HTAM" in ASCII).
APPLICATION_ID = 0x4854414D
#: ``format`` field of export files.
EXPORT_FORMAT = "htam-memory"
#: Source node of edges from an empty prefix.
START = "<start>"
#: Busy timeout for concurrent writers, in seconds.
BUSY_TIMEOUT_S = 30.0

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
]
assert len(MIGRATIONS) == SCHEMA_VERSION


class MemoryStoreError(Exception):
    """The memory store cannot be used as it is. The message says what happened and what to do.

    Attributes:
        path: the file concerned.
        kind: ``"corrupt"``, ``"newer"``, ``"foreign"`` or ``"io"``.
    """

    def __init__(self, message: str, path: str | Path, kind: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.kind = kind


def default_store_path() -> Path:
    """``$HTAM_MEMORY`` if set, else ``<platformdirs user data dir>/htam/memory.sqlite3``."""
    env = os.environ.get("HTAM_MEMORY")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("htam", appauthor=False)) / "memory.sqlite3"


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    return conn


def _corrupt(path: Path, detail: str) -> MemoryStoreError:
    return MemoryStoreError(
        f"the memory store {path} is corrupt or not a database ({detail}). It was left untouched. "
        f"Move it aside with `htam memory reset --move-aside --memory {path}` (it is renamed to "
        f"{path.name}.corrupt-<time> and an empty store is created), or point --memory/HTAM_MEMORY elsewhere.",
        path, "corrupt")


class _Db:
    """One SQLite memory file, opened, checked and migrated."""

    def __init__(self, path: Path, on_corrupt: str) -> None:
        self.path = path
        self.moved_aside: Path | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryStoreError(f"cannot create the folder of the memory store {path}: {exc.strerror}",
                                   path, "io") from None
        try:
            self.conn = self._open_checked()
        except MemoryStoreError as exc:
            if exc.kind != "corrupt" or on_corrupt != "move-aside":
                raise
            self.moved_aside = move_aside(path)
            self.conn = self._open_checked()

    def _open_checked(self) -> sqlite3.Connection:
        path = self.path
        try:
            conn = _connect(path)
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"cannot open the memory store {path}: {exc}", path, "io") from None
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables > 0):
                conn.close()
                raise MemoryStoreError(
                    f"{path} is an SQLite database but not an HTAM memory store; it was left untouched. "
                    "Point --memory/HTAM_MEMORY at another file.", path, "foreign")
            if version > SCHEMA_VERSION:
                conn.close()
                raise MemoryStoreError(
                    f"the memory store {path} has schema version {version}, newer than this htam supports "
                    f"({SCHEMA_VERSION}); it was left untouched. Upgrade htam, or point --memory/HTAM_MEMORY "
                    "at another file.", path, "newer")
            if tables > 0:
                check = conn.execute("PRAGMA quick_check").fetchall()
                if check != [("ok",)]:
                    conn.close()
                    raise _corrupt(path, "integrity check: " + "; ".join(str(r[0]) for r in check[:3]))
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.close()
                raise MemoryStoreError(f"cannot switch {path} to WAL mode (got {mode}); use a local file "
                                       "system for the memory store", path, "io")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _corrupt(path, str(exc)) from None
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
    def write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; commits on success, rolls back on any exception."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def move_aside(path: Path) -> Path:
    """Rename ``path`` (and its ``-wal``/``-shm`` files) to ``<path>.corrupt-<YYYYmmdd-HHMMSS>``; return it."""
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


def _row_to_record(row: Sequence[Any]) -> Record:
    (_id, uid, t, prefix, state, step, direction, speedup, correct, measured, status, note, fp, device,
     spread) = row
    return Record(tuple(json.loads(prefix)), json.loads(state), step, direction,
                  Outcome(speedup, bool(correct), bool(measured), status, note, spread), fp, device, t, uid)


_RECORD_COLS = ("id, uid, time, prefix, state, step, direction, speedup, correct, measured, status, note, "
                "fingerprint, device, spread")


def _stats_from_row(row: Sequence[Any]) -> Stats:
    return Stats(*row)


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

    # ---- paths and lifecycle -------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The file that receives writes."""
        return self.dbs[0].path

    @property
    def paths(self) -> list[Path]:
        """Every file, the write target first."""
        return [db.path for db in self.dbs]

    def close(self) -> None:
        """Close every connection."""
        for db in self.dbs:
            db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writes --------------------------------------------------------------------------------
    def record(self, prefix: list[str], state: dict[str, float], step: str, outcome: Outcome, fingerprint: str,
               device: str, *, time: float | None = None) -> Record:
        """Add one record and update node and edge statistics on both levels, in one transaction.

        Args:
            prefix: the last k strategy ids applied before ``step``, oldest first.
            state: the state vector before the step (:func:`~htam_core.memory.features.state_from_profile`).
            step: the strategy id applied (must exist in the knowledge base).
            outcome: what happened; ``incorrect``/``failed`` count as failures with a penalty value.
            fingerprint: kernel fingerprint; device: device name.
            time: epoch seconds (default now).

        Returns:
            the stored :class:`Record`.

        Raises:
            ValueError: unknown step, or malformed prefix/state.
            MemoryStoreError: the file cannot be written.
        """
        if not self.kb.has_strategy(step):
            raise ValueError(f"unknown step {step!r}: not a strategy of the knowledge base (see `htam suggest`)")
        if not all(isinstance(p, str) for p in prefix):
            raise ValueError("prefix must be a list of strategy ids")
        rec = Record(tuple(prefix), {str(k): float(v) for k, v in state.items()}, step,
                     self.kb.strategy(step).direction, outcome, str(fingerprint), str(device),
                     _time.time() if time is None else float(time))
        try:
            with self.dbs[0].write() as conn:
                self._insert(conn, rec)
        except sqlite3.DatabaseError as exc:
            raise MemoryStoreError(f"cannot write the memory store {self.path}: {exc}", self.path, "io") from None
        return rec

    def _direction_of(self, strategy_id: str) -> str:
        return self.kb.strategy(strategy_id).direction if self.kb.has_strategy(strategy_id) else "?"

    def _insert(self, conn: sqlite3.Connection, rec: Record) -> None:
        o = rec.outcome
        conn.execute(
            f"INSERT INTO records ({_RECORD_COLS}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rec.uid, rec.time, json.dumps(list(rec.prefix)), json.dumps(rec.state, sort_keys=True), rec.step,
             rec.direction, o.speedup, int(o.correct), int(o.measured), o.status, o.note, rec.fingerprint,
             rec.device, o.spread))
        value = outcome_value(o)
        when = bottleneck_of_state(rec.state)
        last = rec.prefix[-1] if rec.prefix else START
        last_dir = self._direction_of(last) if rec.prefix else START
        targets = [("nodes", ("direction", rec.direction)), ("nodes", ("strategy", rec.step)),
                   ("edges", ("direction", last_dir, rec.direction)), ("edges", ("strategy", last, rec.step))]
        for table, key in targets:
            where = "level = ? AND id = ?" if table == "nodes" else "level = ? AND src = ? AND dst = ?"
            row = conn.execute(f"SELECT {_STATS_COLS} FROM {table} WHERE {where}", key).fetchone()
            stats = _stats_from_row(row) if row else Stats()
            stats.update(o, value, rec.time, when)
            keys = "level, id" if table == "nodes" else "level, src, dst"
            marks = ", ".join("?" * (len(key) + 10))
            conn.execute(f"INSERT OR REPLACE INTO {table} ({keys}, {_STATS_COLS}) VALUES ({marks})",
                         (*key, stats.count, stats.wins, stats.failures, stats.n_values, stats.mean, stats.m2,
                          stats.last_seen, stats.note_when, stats.note_why, stats.note_risk))

    def reset(self) -> int:
        """Delete every record and statistic of the write file. Returns the number of records deleted."""
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
            for row in db.conn.execute(f"SELECT {_RECORD_COLS} FROM records WHERE id > ? ORDER BY id", (lo,)):
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

        Each tuple is ``(uid, prefix_json, step, direction, speedup, correct, measured, status, fingerprint,
        *state)`` with the state unpacked in ``state_keys`` order by SQLite's ``json_extract`` (missing keys
        are 0.0), which avoids decoding every state in Python.

        Returns:
            ``(rows, new_after)`` as in :meth:`records_after`.
        """
        after = tuple(after) if after is not None else (0,) * len(self.dbs)
        state_cols = "".join(
            ", coalesce(json_extract(state, '$.\"{}\"'), 0.0)".format(k.replace('"', "")) for k in state_keys)
        sql = (f"SELECT id, uid, prefix, step, direction, speedup, correct, measured, status, fingerprint{state_cols}"
               " FROM records WHERE id > ? ORDER BY id")
        out: list[tuple[Any, ...]] = []
        marks: list[int] = []
        seen: set[str] = set()
        for db, lo in zip(self.dbs, after, strict=True):
            hi = lo
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
            ValueError: not an HTAM memory export, a newer export schema, or a malformed record (the
                message gives its index). Nothing is written then.
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
                recs.append(Record.from_json(r))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"record {i} of the export is malformed: {exc}") from None
        result = ImportResult()
        with self.dbs[0].write() as conn:
            for rec in recs:
                if conn.execute("SELECT 1 FROM records WHERE uid = ?", (rec.uid,)).fetchone():
                    result.skipped += 1
                    continue
                self._insert(conn, rec)
                result.added += 1
        return result


def open_store(
    path: str | Path | None = None,
    workspace: str | Path | None = None,
    *,
    on_corrupt: Literal["error", "move-aside"] = "error",
    kb: KnowledgeBase | None = None,
) -> Store:
    """Open (creating if needed) the memory store.

    Args:
        path: the user store file; default :func:`default_store_path` (``$HTAM_MEMORY`` or the platformdirs
            user data dir).
        workspace: an optional workspace store that overlays the user store: a ``.sqlite3`` file, or a
            folder (the store is then ``<folder>/.htam/memory.sqlite3``). Writes go to it.
        on_corrupt: ``"error"`` raises :class:`MemoryStoreError`; ``"move-aside"`` renames a corrupt file
            to ``<name>.corrupt-<time>``, starts an empty one and adds a warning to ``Store.warnings``.
        kb: knowledge base (default :func:`~htam_core.memory.knowledge.load_knowledge`).

    Raises:
        MemoryStoreError: corrupt (with ``on_corrupt="error"``), newer schema, not an HTAM store, or
            not writable. Such files are never modified.
    """
    if on_corrupt not in ("error", "move-aside"):
        raise ValueError("on_corrupt must be 'error' or 'move-aside'")
    user = Path(path).expanduser() if path is not None else default_store_path()
    files: list[Path] = []
    if workspace is not None:
        ws = Path(workspace).expanduser()
        files.append(ws / ".htam" / "memory.sqlite3" if ws.is_dir() else ws)
    files.append(user)
    dbs: list[_Db] = []
    warnings: list[str] = []
    try:
        for f in files:
            if any(f.resolve() == d.path.resolve() for d in dbs):
                continue
            db = _Db(f, on_corrupt)
            if db.moved_aside is not None:
                warnings.append(f"the memory store {f} was corrupt; it was moved to {db.moved_aside} and an "
                                "empty store was created")
            dbs.append(db)
    except BaseException:
        for d in dbs:
            d.close()
        raise
    return Store(dbs, kb or load_knowledge(), warnings)
