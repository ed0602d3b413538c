"""Pool the memories of a team: merge stores (and exports) into one store, idempotently, keyed by record uid.

``htam memory merge A.sqlite3 B.sqlite3 ... --into TEAM.sqlite3`` and the suite's end-of-run merge of its
per-task stores both call :func:`merge_files`. Sources are read without being modified (any schema version;
:func:`htam_core.memory.store.read_records`), or are JSON exports (``htam memory export``). Every record is
keyed by its uid: a new uid is added, a uid already present with the same content is skipped, and a uid present
with other content is a conflict, reported and not applied (the target's record is kept). The statistics are
rebuilt from the records (:meth:`htam_core.memory.store.Store.merge_records`), so merging is idempotent, and
the sources of one call may come in any order (a conflict between two sources keeps the earlier record in
(time, source, content) order). Separate calls commute only without conflicts: a later call finds the record
of an earlier one stored, and the stored record wins (docs/MEMORY.md, "Merge"). Like TVM meta_schedule's JSON tuning databases,
records are the unit of exchange and statistics are derived.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from htam_core.memory.knowledge import KnowledgeBase, load_knowledge
from htam_core.memory.records import Record
from htam_core.memory.store import EXPORT_FORMAT, SCHEMA_VERSION, is_sqlite_file, open_store, read_records

__all__ = ["MergeReport", "merge_files", "read_source"]


@dataclass
class MergeReport:
    """What a merge did.

    Every record read falls in exactly one class, so that ``added + identical + len(conflicts) == read``:

    Attributes:
        into: the target store.
        added: records new to the target (*new*).
        same: records already in the target with the same content; duplicates: records identical to one read
            from an earlier source (sources that overlap). Both are *identical duplicates* (:attr:`identical`).
        conflicts: ``(source, uid)`` of every *conflicting duplicate*: a record whose uid the target, or another
            source, holds with other content (not merged; the kept one is the target's, or the earliest).
        per_source: source -> number of records it holds.
    """

    into: str
    added: int = 0
    same: int = 0
    duplicates: int = 0
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    per_source: dict[str, int] = field(default_factory=dict)

    @property
    def read(self) -> int:
        """Records read from every source together."""
        return sum(self.per_source.values())

    @property
    def identical(self) -> int:
        """Identical duplicates: records already in the target or in an earlier source, with the same content."""
        return self.same + self.duplicates

    def summary(self) -> str:
        """One line whose counts add up to the records read: ``read 6 records from 2 sources into T: 3 new,
        2 identical duplicates (1 already in T, 1 in more than one source), 1 conflicting duplicate (not
        merged)``."""
        def n(k: int, word: str) -> str:
            return f"{k} {word}{'' if k == 1 else 's'}"

        srcs = len(self.per_source)
        return (f"read {n(self.read, 'record')} from {n(srcs, 'source')} into {self.into}: {self.added} new, "
                f"{n(self.identical, 'identical duplicate')} ({self.same} already in {Path(self.into).name}, "
                f"{self.duplicates} in more than one source), {n(len(self.conflicts), 'conflicting duplicate')}"
                + (" (not merged)" if self.conflicts else ""))


def _checked_store_records(p: Path, kb: KnowledgeBase | None) -> list[Record]:
    """The records of the store ``p``, each validated as an imported record is (sizes, UTF-8 text, names of the
    knowledge base): a store is a file from elsewhere too, and is checked like an export.

    Raises:
        ExportFileError: the first invalid record, named by its position and uid; nothing is merged then.
    """
    from htam_core.memory.export_file import ExportFileError

    kb = kb or load_knowledge()
    recs = read_records(p)
    for i, rec in enumerate(recs, 1):
        try:
            Record.from_json(rec.to_json()).check_names(kb)
        except ValueError as exc:
            raise ExportFileError(f"{p}: record {i} (uid {rec.uid[:40]!r}) cannot be merged: {exc}; nothing was "
                                  "merged") from None
    return recs


def read_source(path: str | Path, kb: KnowledgeBase | None = None) -> list[Record]:
    """The records of a store file or of a JSON export, validated (:meth:`Record.from_json` and
    :meth:`Record.check_names` against ``kb``, default :func:`load_knowledge`).

    Raises:
        MemoryStoreError: an unusable store file; ExportFileError: an unusable export, or an invalid record in
            either (the message says why and which).
    """
    from htam_core.memory.export_file import ExportFileError, read_export

    p = Path(path)
    if is_sqlite_file(p) or not p.is_file():
        return _checked_store_records(p, kb)
    what = ("pass a memory store (.sqlite3, as `htam optimize` or the editor writes) or an export (.json, from "
            "`htam memory export`)")
    head = p.read_bytes()[:64].lstrip()
    if not head:
        raise ExportFileError(f"{p} is empty: it is neither an SQLite memory store nor an export; {what}")
    if not head.startswith(b"{"):  # an export is one JSON object; a store starts with the SQLite header
        raise ExportFileError(f"{p} is neither an SQLite memory store (no SQLite header) nor an export (not a "
                              f"JSON object); {what}")
    export = read_export(p, export_format=EXPORT_FORMAT, schema=SCHEMA_VERSION, kb=kb)
    if export.errors:
        line, msg = export.errors[0]
        raise ExportFileError(f"{p}: {len(export.errors)} invalid record(s), e.g. {p}:{line}: {msg}; nothing "
                              "was merged")
    return [r for _, r in export.records]


def _distinct(sources: list[str | Path]) -> list[str | Path]:
    """``sources`` without repeats of one file (``A A`` or ``A ./A``: the file is read once), in order."""
    seen: set[Path] = set()
    out: list[str | Path] = []
    for src in sources:
        real = Path(src).resolve()
        if real not in seen:
            seen.add(real)
            out.append(src)
    return out


def merge_files(sources: list[str | Path], into: str | Path, kb: KnowledgeBase | None = None) -> MergeReport:
    """Merge every source into the store ``into`` (created when missing, in an existing folder), in one
    transaction. Sources are read completely first, so an unreadable one merges nothing.

    A file given twice (``A A``, ``A ./A``) is read once. Conflicts between two sources (same uid, other
    content) are reported as well: the first source in
    (time, uid) order wins, which does not depend on the order the sources are given in.

    Raises:
        MemoryStoreError, ExportFileError: a source or the target cannot be used; nothing is written then.
    """
    report = MergeReport(str(into))
    recs: dict[str, tuple[str, Record]] = {}
    clashes: list[tuple[str, Record]] = []
    for src in _distinct(sources):
        got = read_source(src, kb)
        report.per_source[str(src)] = len(got)
        for r in got:
            seen = recs.get(r.uid)
            if seen is None:
                recs[r.uid] = (str(src), r)
            elif seen[1].to_json() == r.to_json():
                report.duplicates += 1
            else:
                keep, drop = sorted([seen, (str(src), r)], key=lambda sr: (sr[1].time, sr[0], repr(sr[1].to_json())))
                recs[r.uid] = keep
                clashes.append(drop)
    store = open_store(into, kb=kb)
    try:
        counts = store.merge_records([r for _, r in recs.values()])
    except BaseException:
        store.discard_if_new()  # a failed merge never leaves behind an empty store it created
        raise
    store.close()
    by_uid = {uid: src for uid, (src, _) in recs.items()}
    report.added, report.same = counts.added, counts.same
    report.conflicts = sorted([(by_uid[u], u) for u in counts.conflicts] + [(s, r.uid) for s, r in clashes])
    return report
