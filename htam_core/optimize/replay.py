"""Replay: the optimize loop with every measurement a lookup in a measured-space table.

The table (built by :mod:`htam_core.bench.space`) holds, per kernel, the evaluation of every candidate of the
engine's tree, keyed by the SHA-256 of the candidate's text. :class:`TableEvaluator` stands in for
:class:`htam_core.optimize.evaluate.Evaluator`: the loop generates its candidates as always (the same rules
engine, the same requests), and "measuring" one is reading its row. A candidate that is not in the table (the
build's depth or candidate budget cut it) comes back as :data:`NOT_IN_TABLE`: reported as such, never
guessed, never recorded in the memory.

The comparison of a parent and a candidate (:meth:`TableEvaluator.compare`) is made from their stored
per-input-set medians and timer spreads (the relative IQR of each timer run, :mod:`htam_core.measure.timer`):
per set the ratio of medians with the spread ``sqrt(s_p^2 + s_c^2)``, the headline over the sets that are not
launch-bound (:func:`htam_core.measure.stats.headline_geomean`), its spread the largest counted set's, and the
win rule of :func:`htam_core.measure.stats.classify_gain` (never under its 2 % floor). It is not an interleaved
timing: the separate timings of one table, which the report says.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, NamedTuple

from htam_core.measure.compare import Comparison, SetComparison
from htam_core.measure.stats import classify_gain, headline_geomean, launch_bound
from htam_core.memory.records import NOT_IN_TABLE
from htam_core.optimize.evaluate import Evaluation
from htam_core.source import language_for_path, parse_text
from htam_core.types.files import data_path, read_data_text

__all__ = ["NOT_IN_TABLE", "Table", "TableError", "TableEvaluator", "TableFile", "load_table", "read_table",
           "skipped_note", "table_comparison", "text_key"]

_TABLES: dict[tuple[str, float], Table] = {}


class TableError(Exception):
    """The table cannot be read or does not hold the kernel; the message says how to fix it."""


def text_key(text: str) -> str:
    """SHA-256 hex digest of a candidate's full text: the table's key within one kernel."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TableFile(NamedTuple):
    """The lines of a table file, parsed (:func:`read_table`).

    Attributes:
        header: the first header line, or ``None``.
        rows: every other table line (nodes, ``kernel_done`` marks), in file order.
        skipped: the 1-based numbers of the lines that are not table lines (not JSON, not an object, or a node
            or mark without its kernel id and key): a line torn by a crash, or an edit.
    """

    header: dict[str, Any] | None
    rows: list[dict[str, Any]]
    skipped: list[int]


def _table_line(d: Any) -> bool:
    """Whether a parsed line is a table line: an object, and a node or ``kernel_done`` mark carries its kernel
    id (and a node its text key) as strings."""
    if not isinstance(d, dict):
        return False
    kind = d.get("type")
    if kind == "node":
        return isinstance(d.get("kernel"), str) and isinstance(d.get("key"), str)
    if kind == "kernel_done":
        return isinstance(d.get("kernel"), str)
    return kind == "header"


def read_table(path: str | Path) -> TableFile:
    """The header and every other line of a table file (``.jsonl`` or gzip-compressed ``.jsonl.gz``, read
    transparently: :func:`~htam_core.types.files.read_data_text`); a line that is not a table line is skipped and its
    number kept in :attr:`TableFile.skipped`, for the caller to name (:func:`skipped_note`).

    Raises:
        TableError: the file cannot be read, or is not text.
    """
    try:
        lines = read_data_text(path).splitlines()
    except OSError as exc:
        raise TableError(f"cannot read the table {path}: {exc}") from exc
    except UnicodeDecodeError:
        raise TableError(f"{path} is not a table: it is not UTF-8 text (give the JSONL file of "
                         "`htam bench space`)") from None
    header, rows, skipped = None, [], []
    for i, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        try:
            d = json.loads(ln)
        except ValueError:
            d = None
        if not _table_line(d):
            skipped.append(i)
        elif d.get("type") == "header":
            header = header or d
        else:
            rows.append(d)
    return TableFile(header, rows, skipped)


def skipped_note(path: str | Path, skipped: list[int]) -> str | None:
    """One line naming the lines of table ``path`` that :func:`read_table` skipped, or ``None`` when none was."""
    if not skipped:
        return None
    shown = ", ".join(str(i) for i in skipped[:5]) + (", ..." if len(skipped) > 5 else "")
    return (f"warning: {path}: {len(skipped)} line(s) are not table lines and were skipped (line {shown}): torn "
            "by a crash or edited; the candidates on them count as not in the table (a kernel without its "
            "kernel_done line is measured again by `htam bench space` on the same --out; a finished kernel's, by "
            "`htam bench misses` and `htam bench space --fill`)")


def _set_spreads(ev: dict[str, Any]) -> list[float | None]:
    """The timer's relative spread of every input set of a stored evaluation (``None`` where not stored)."""
    prof = ev.get("profile") or {}
    sets = ((prof.get("extra") or {}).get("timing") or {}).get("per_set") or []
    return [s.get("spread") if isinstance(s.get("spread"), (int, float)) else None for s in sets]


def table_comparison(parent: dict[str, Any], cand: dict[str, Any]) -> Comparison | None:
    """Parent against candidate from two stored evaluations (``Evaluation.to_json``), or ``None`` when either
    has no per-set times (see the module docstring for the rule)."""
    pm, cm = parent.get("per_set_ms") or [], cand.get("per_set_ms") or []
    if not pm or not cm or len(pm) != len(cm):
        return None
    ps, cs = _set_spreads(parent), _set_spreads(cand)
    sets = []
    for i, (p, c) in enumerate(zip(pm, cm, strict=True)):
        sp = ps[i] if i < len(ps) and ps[i] is not None else 0.0
        sc = cs[i] if i < len(cs) and cs[i] is not None else 0.0
        sets.append(SetComparison(p, c, p / c if c else math.inf, math.hypot(sp, sc),
                                  launch_bound(p) and launch_bound(c)))
    head = headline_geomean(pm, cm)
    if head.speedup is None:
        return None
    spread = max((sets[i].spread for i in head.counted), default=0.0)
    return Comparison(head.speedup, spread, classify_gain(head.speedup, spread), sets, head.counted,
                      head.launch_bound, head.note, methods=["table", "table"])


class Table:
    """A measured-space table in memory: ``rows[(kernel id, text key)]``.

    Args:
        path: the table file.

    Attributes:
        measured: the table was built on a GPU (its times are real); header: its header line.

    Raises:
        TableError: the file cannot be read or has no header.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        header, rows, self.skipped = read_table(self.path)
        if header is None:
            raise TableError(f"{self.path} has no header line: it is not a measured-space table "
                             "(build one with `htam bench space`)")
        self.header = header
        self.measured = bool(header.get("measured"))
        self.rows = {(r["kernel"], r["key"]): r for r in rows if r.get("type") == "node"}
        self.done = {r["kernel"]: r for r in rows if r.get("type") == "kernel_done"}  # the last pass per kernel
        #: the start node of each kernel: the last one written, when the kernel's file changed and was measured
        #: again (the table keeps both starts, and a replay starts from the file as it is now)
        self.starts = {r["kernel"]: r for r in rows if r.get("type") == "node" and r.get("parent") is None}

    def kernel_rows(self, kernel_id: str) -> list[dict[str, Any]]:
        """Every node of one kernel's tree from its current start (:attr:`starts`), start first."""
        start = self.starts.get(kernel_id)
        if start is None:
            return []
        children: dict[str, list[dict[str, Any]]] = {}
        for (k, _), r in self.rows.items():
            if k == kernel_id and r.get("parent") is not None:
                children.setdefault(r["parent"], []).append(r)
        out, todo, seen = [], [start], set()
        while todo:
            r = todo.pop(0)
            if r["key"] in seen:
                continue
            seen.add(r["key"])
            out.append(r)
            todo.extend(children.get(r["key"], []))
        return out

    def best_speedup(self, kernel_id: str) -> float | None:
        """The exhaustive best: the largest speedup over the start of a correct candidate, or ``None``."""
        sps = [r.get("speedup_vs_start") for r in self.kernel_rows(kernel_id)
               if r.get("evaluation", {}).get("correct") is not False]
        vals = [s for s in sps if isinstance(s, (int, float)) and s > 0]
        return max(vals) if vals else None


class TableEvaluator:
    """The :class:`~htam_core.optimize.evaluate.Evaluator` of a replay: lookups in a :class:`Table`.

    Args:
        table: the table; kernel_id: the kernel's id in it; path: the kernel's file (for the language);
        kernel_name: its name; workdir: where candidate files are written (the report links them).

    Attributes:
        reused: always 0 (nothing is measured, nothing reused); missing: lookups that found no row.
    """

    def __init__(self, table: Table, kernel_id: str, path: str | Path, kernel_name: str, workdir: Path) -> None:
        self.table = table
        self.kernel_id = kernel_id
        self.kernel_name = kernel_name
        self.path = Path(path)
        self.language = language_for_path(self.path)
        self.workdir = workdir
        self.reused = 0
        self.missing = 0
        self._by_path: dict[str, str] = {}

    def _row(self, text: str) -> dict[str, Any] | None:
        return self.table.rows.get((self.kernel_id, text_key(text)))

    def write(self, text: str, label: str) -> Path:
        """Write ``text`` as ``<workdir>/<label>/<file name>`` (the report links it) and return the path."""
        d = self.workdir / label
        d.mkdir(parents=True, exist_ok=True)
        p = d / self.path.name
        p.write_text(text, encoding="utf-8")
        self._by_path[str(p)] = text
        return p

    def evaluate(self, text: str, label: str, *, use_ncu: bool = False,
                 reuse: bool = True, fp32_tol: float | None = None) -> tuple[Evaluation, Path]:
        """The stored verdict of ``text`` (with a fresh source model), or a :data:`NOT_IN_TABLE` verdict
        (``fp32_tol``: ignored, the table holds the verdict)."""
        p = self.write(text, label)
        model = parse_text(text, self.language, str(p))
        row = self._row(text)
        if row is None:
            self.missing += 1
            return Evaluation(False, None, "none", NOT_IN_TABLE, model=model,
                              messages=[f"not in the measured table {self.table.path.name}: the build's depth or "
                                        "candidate budget left it out; not guessed"]), p
        ev = Evaluation.from_json(row["evaluation"], model=model)
        ev.messages = [*ev.messages, f"replayed from {self.table.path.name}"]
        return ev, p

    def compare(self, parent_text: str, cand_path: Path, *, fresh: bool = False) -> tuple[Comparison | None, str]:
        """The table's comparison of the parent and the candidate (see the module docstring). ``fresh`` (a
        re-timing in a new process) changes nothing: the table holds one measurement per candidate, so a
        replay's re-timing of the best is that same comparison and never contradicts it."""
        parent = self._row(parent_text)
        text = self._by_path.get(str(cand_path))
        cand = self._row(text) if text is not None else None
        if parent is None or cand is None:
            return None, "the table holds no times for this pair"
        comp = table_comparison(parent["evaluation"], cand["evaluation"])
        return (comp, "") if comp is not None else (None, "the table holds no per-set times for this pair")


def load_table(path: str | Path) -> Table:
    """The :class:`Table` of ``path``, parsed once per file version (a replay runs hundreds of loops on it).

    Raises:
        TableError: see :class:`Table`.
    """
    p = data_path(path).resolve()
    try:
        key = (str(p), p.stat().st_mtime)
    except OSError as exc:
        raise TableError(f"cannot read the table {path}: {exc}") from exc
    if key not in _TABLES:
        _TABLES.clear()
        _TABLES[key] = Table(p)
    return _TABLES[key]
