"""Read a memory export file (``htam memory export``) and validate every record, with its line number.

The file must be UTF-8 JSON: ``{"format": "htam-memory", "schema": N, "records": [...], ...}``. Each record
is checked by :meth:`~htam_core.memory.records.Record.from_json` (required fields, types, finite numbers,
sizes, text that is UTF-8) and :meth:`~htam_core.memory.records.Record.check_names` (its step, direction and
prefix are ids of the knowledge base); a bad record is reported with the line its object starts on, so the
user can find it in the file. The records' line numbers come from walking the top-level object with
:class:`json.JSONDecoder`'s own scanner (``scan_once``), so positions are exact and the values are decoded by
the standard library; newlines are counted once, from one record to the next, so reading is linear in the
size of the file (100,000 records in a few seconds: ``bench/bench_memory_import.py``). A value nested deeper
than the scanner can follow (Python's recursion limit) refuses the file with the line it starts on.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_core.memory.knowledge import KnowledgeBase, load_knowledge
from htam_core.memory.records import Record

__all__ = ["ExportFile", "ExportFileError", "read_export"]


class ExportFileError(ValueError):
    """The file cannot be imported at all (unreadable, not UTF-8, not JSON, not an export). The message says
    what happened and what to do."""


@dataclass
class ExportFile:
    """A parsed export.

    Attributes:
        records: ``(line, record)`` for every valid record, in file order (lines are 1-based).
        errors: ``(line, message)`` for every invalid record.
    """

    records: list[tuple[int, Record]] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


class _TooDeep(Exception):
    """A value of the export, starting at offset :attr:`pos`, is nested deeper than the JSON scanner can follow."""

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.pos = pos


def _records_with_lines(text: str) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """Decode the top-level object of ``text``; return it and ``(line, value)`` of each ``records`` item.

    Raises:
        json.JSONDecodeError: not JSON, or the top level is not an object.
        _TooDeep: a value nested deeper than the scanner can follow (Python's recursion limit).
    """
    scan_once = json.JSONDecoder().scan_once

    def scan(i: int, what: str) -> tuple[Any, int]:
        try:
            return scan_once(text, i)
        except StopIteration:
            raise json.JSONDecodeError(f"expected {what}", text, i) from None
        except RecursionError:
            raise _TooDeep(i) from None

    i = _skip_ws(text, 0)
    if not text.startswith("{", i):
        raise json.JSONDecodeError("expected a JSON object", text, i)
    top: dict[str, Any] = {}
    items: list[tuple[int, Any]] = []
    i = _skip_ws(text, i + 1)
    while not text.startswith("}", i):
        if not text.startswith('"', i):
            raise json.JSONDecodeError("expected a key in double quotes", text, i)
        key, i = scan(i, "a key")
        i = _skip_ws(text, i)
        if not text.startswith(":", i):
            raise json.JSONDecodeError("expected ':'", text, i)
        i = _skip_ws(text, i + 1)
        if key == "records" and text.startswith("[", i):
            items = []
            line, counted = 1, 0  # newlines are counted once, from the previous record on (linear in the file)
            i = _skip_ws(text, i + 1)
            while not text.startswith("]", i):
                value, end = scan(i, "a value")
                line += text.count("\n", counted, i)
                counted = i
                items.append((line, value))
                i = _skip_ws(text, end)
                if text.startswith(",", i):
                    i = _skip_ws(text, i + 1)
                elif not text.startswith("]", i):
                    raise json.JSONDecodeError("expected ',' or ']'", text, i)
            top[key] = [v for _, v in items]
            i += 1
        else:
            top[key], i = scan(i, "a value")
        i = _skip_ws(text, i)
        if text.startswith(",", i):
            i = _skip_ws(text, i + 1)
        elif not text.startswith("}", i):
            raise json.JSONDecodeError("expected ',' or '}'", text, i)
    if _skip_ws(text, i + 1) != len(text):
        raise json.JSONDecodeError("extra data after the export object", text, _skip_ws(text, i + 1))
    return top, items


def _depth_error(p: Path, text: str, pos: int) -> ExportFileError:
    """The error for a value nested too deeply, naming ``p:line`` of the record (or top-level value) at ``pos``."""
    line = text.count("\n", 0, pos) + 1
    return ExportFileError(f"{p}:{line}: this value is nested too deeply to read (deeper than about "
                           f"{sys.getrecursionlimit()} levels); expected a file written by `htam memory export`")


def read_export(path: str | Path, *, export_format: str, schema: int,
                kb: KnowledgeBase | None = None) -> ExportFile:
    """Read and validate the export file ``path``.

    Args:
        path: the file.
        export_format: the expected ``format`` value (``"htam-memory"``).
        schema: the newest export schema this htam reads.
        kb: the knowledge base the records' names must come from (default
            :func:`~htam_core.memory.knowledge.load_knowledge`).

    Returns:
        The valid records and the errors of the invalid ones, each with its line number.

    Raises:
        ExportFileError: unreadable file, not UTF-8, not JSON (with line and column), a value nested too deeply
            (with its line), not an HTAM export, a newer schema, or no ``records`` list.
    """
    p = Path(path)
    hint = "expected a file written by `htam memory export`"
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ExportFileError(f"cannot read {p}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ExportFileError(f"{p} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at line {line}, offset "
                              f"{exc.start}: a binary file?); {hint}") from None
    try:
        top, items = _records_with_lines(text)
    except _TooDeep as exc:
        raise _depth_error(p, text, exc.pos) from None
    except json.JSONDecodeError as exc:
        raise ExportFileError(f"{p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                              f"{hint}") from None
    if top.get("format") != export_format:
        raise ExportFileError(f"{p} is not an HTAM memory export (no \"format\": \"{export_format}\"); {hint}")
    got = top.get("schema")
    if not isinstance(got, int) or isinstance(got, bool) or got > schema:
        raise ExportFileError(f"{p} has export schema {got!r}, which this htam does not read (<= {schema}); "
                              "upgrade htam or export again with this version")
    if not isinstance(top.get("records"), list):
        raise ExportFileError(f"{p} has no \"records\" list; {hint}")
    kb = kb or load_knowledge()
    out = ExportFile()
    for line, value in items:
        try:
            rec = Record.from_json(value)
            rec.check_names(kb)
        except ValueError as exc:
            out.errors.append((line, str(exc)))
        else:
            out.records.append((line, rec))
    return out
