"""A measurement cache shared by the optimizations of one benchmark run.

In the naive-kernel suite (:mod:`htam_core.bench.suite`) different policies very often evaluate
byte-identical candidates of the same kernel (the same transform applied to the same parent). Each GPU
evaluation (compile, correctness over seeds, timing) costs seconds, so the suite lets every task of one run
share this cache: the first policy that reaches a candidate measures it, the others reuse that measurement.

The key is a SHA-256 over everything the measurement is a function of: the candidate text, the kernel name,
the language, the harness without its ``path`` field (the candidate's folder differs between runs), the
timed trials, the GPU flag and the compile target. The device index is *not* part of the key: the suite's
GPUs are of one model. Only outcomes that are functions of the code are stored: the caller leaves out
``failure == "failed"`` (a timeout, an out-of-memory error or a worker crash may be transient).

Storage is one SQLite file (stdlib :mod:`sqlite3`, WAL journal, busy timeout), safe for several processes
(the suite runs one worker process per GPU). Each operation opens its own short connection, so the object
can be shared across ``fork``. A corrupt file is moved aside and recreated; when that fails too the cache
turns itself off (every lookup misses) and says so in :attr:`MeasureCache.warnings`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from htam_core.harness import Harness
from htam_core.optimize.evaluate import Evaluation

#: Bumped when the key's inputs or the stored JSON change meaning, so old entries never match.
CACHE_VERSION = 1
#: Seconds a writer waits for another process's lock.
BUSY_TIMEOUT_S = 30.0

_SCHEMA = ("CREATE TABLE IF NOT EXISTS measurements (key TEXT PRIMARY KEY, kernel TEXT NOT NULL, "
           "evaluation TEXT NOT NULL, created REAL NOT NULL)")


def harness_fingerprint(harness: Harness | None) -> str:
    """The harness as canonical JSON without its ``path`` and ``inference`` fields (``"null"`` for no
    harness): how the harness was obtained (recorded now, or read from the recording cache) is not part of it.
    ``fp32_tol`` counts only when set (a reordered-sum check), so the keys of every default check stay those of
    the tables and caches written before the field existed."""
    if harness is None:
        return "null"
    d = harness.to_json()
    d.pop("path", None)
    d.pop("inference", None)
    if d.get("fp32_tol") is None:
        d.pop("fp32_tol", None)
    return json.dumps(d, sort_keys=True, default=str)


def measure_key(text: str, kernel: str, language: str, harness: Harness | None, trials: int, gpu: bool,
                target: str = "sm_90", headers: str = "") -> str:
    """SHA-256 hex key of one measurement.

    Args:
        text: the candidate file's full text.
        kernel: the kernel's name; language: ``"triton"`` or ``"cuda"``.
        harness: the harness the candidate is verified and timed with (its ``path`` is ignored).
        trials: timed trials per candidate; gpu: measured on a GPU; target: the compile target (``sm_90``).
        headers: the digest of the local headers the candidate includes
            (:func:`htam_core.source.analysis.includes.headers_digest`; ``""`` for none), so that a header
            edited next to the kernel measures again.
    """
    parts = [f"htam-measure-v{CACHE_VERSION}", kernel, language, harness_fingerprint(harness),
             str(int(trials)), "gpu" if gpu else "static", target, text, headers]
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))  # length-prefixed: no two part lists hash alike
        h.update(b)
    return h.hexdigest()


class MeasureCache:
    """Measured :class:`~htam_core.optimize.evaluate.Evaluation` records keyed by :func:`measure_key`.

    Args:
        path: the SQLite file (created with its folder when missing).

    Attributes:
        path: the file; enabled: ``False`` after the file could neither be opened nor recreated;
        warnings: what went wrong with the file, for the run's notes.

    Never raises for a bad or busy file: a lookup that cannot be answered is a miss, a write that cannot be
    made is skipped.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.enabled = True
        self.warnings: list[str] = []
        try:
            self._init()
        except (sqlite3.Error, OSError) as exc:
            moved = self._move_aside()
            try:
                self._init()
                self.warnings.append(f"the measurement cache {self.path} was unusable ({exc}); "
                                     + (f"moved it to {moved.name} and " if moved else "")
                                     + "started an empty one")
            except (sqlite3.Error, OSError) as exc2:
                self.enabled = False
                self.warnings.append(f"the measurement cache {self.path} cannot be used ({exc2}); every "
                                     "candidate is measured afresh")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return conn

    def _init(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            conn.execute("SELECT count(*) FROM measurements").fetchone()

    def _move_aside(self) -> Path | None:
        if not self.path.exists():
            return None
        dest = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        try:
            self.path.replace(dest)
        except OSError:
            return None
        for suffix in ("-wal", "-shm"):
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        return dest

    @staticmethod
    def key(text: str, kernel: str, language: str, harness: Harness | None, trials: int, gpu: bool,
            target: str = "sm_90", headers: str = "") -> str:
        """The key of one measurement in this cache: :func:`measure_key` (the evaluator asks the cache it
        holds, so ``evaluate`` needs no import of this module, which imports ``evaluate``)."""
        return measure_key(text, kernel, language, harness, trials, gpu, target, headers)

    def get(self, key: str) -> Evaluation | None:
        """The stored evaluation for ``key`` (its ``model`` is ``None``: the caller parses the text), or
        ``None`` on a miss, an unreadable row or an unusable file."""
        if not self.enabled:
            return None
        try:
            with closing(self._connect()) as conn:
                row = conn.execute("SELECT evaluation FROM measurements WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        if row is None:
            return None
        try:
            return Evaluation.from_json(json.loads(row[0]))
        except (ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, kernel: str, ev: Evaluation) -> bool:
        """Store ``ev`` under ``key`` unless an entry is already there (the first measurement stands).

        Returns ``True`` when a row was written. An evaluation that does not serialize to plain JSON, or a
        file that cannot be written, is skipped (``False``).
        """
        if not self.enabled:
            return False
        try:
            blob = json.dumps(ev.to_json(), allow_nan=True)
        except (TypeError, ValueError):
            return False
        try:
            with closing(self._connect()) as conn:
                cur = conn.execute("INSERT OR IGNORE INTO measurements (key, kernel, evaluation, created) "
                                   "VALUES (?, ?, ?, ?)", (key, kernel, blob, time.time()))
                return cur.rowcount == 1
        except sqlite3.Error:
            return False

    def __len__(self) -> int:
        """Number of stored measurements (0 when the file is unusable)."""
        if not self.enabled:
            return 0
        try:
            with closing(self._connect()) as conn:
                return int(conn.execute("SELECT count(*) FROM measurements").fetchone()[0])
        except sqlite3.Error:
            return 0


def remove_cache_files(path: str | Path) -> None:
    """Delete a cache file with its WAL and shared-memory files (a fresh run must not reuse old numbers)."""
    p = Path(path)
    for q in (p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm")):
        q.unlink(missing_ok=True)

