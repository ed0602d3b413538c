"""Read a memory export file (``htam memory export``) and validate every record, with its line number.

The file must be UTF-8 JSON: ``{"format": "htam-memory", "schema": N, "records": [...], ...}``. Each record
is checked by :meth:`~htam_core.memory.records.Record.from_json` (required fields, types, finite numbers);
a bad record is reported with the line its object starts on, so the user can find it in the file. The
records' line numbers come from walking the top-level object with :class:`json.JSONDecoder`'s own scanner
(``scan_once``), so positions are exact and the values are decoded by the standard library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def _records_with_lines(text: str) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """Decode the top-level object of ``text``; return it and ``(line, value)`` of each ``records`` item.

    Raises:
        json.JSONDecodeError: not JSON, or the top level is not an object.
    """
    scan = json.JSONDecoder().scan_once
    i = _skip_ws(text, 0)
    if not text.startswith("{", i):
        raise json.JSONDecodeError("expected a JSON object", text, i)
    top: dict[str, Any] = {}
    items: list[tuple[int, Any]] = []
    i = _skip_ws(text, i + 1)
    while not text.startswith("}", i):
        if not text.startswith('"', i):
            raise json.JSONDecodeError("expected a key in double quotes", text, i)
        try:
            key, i = scan(text, i)
        except StopIteration:
            raise json.JSONDecodeError("expected a key", text, i) from None
        i = _skip_ws(text, i)
        if not text.startswith(":", i):
            raise json.JSONDecodeError("expected ':'", text, i)
        i = _skip_ws(text, i + 1)
        if key == "records" and text.startswith("[", i):
            items = []
            i = _skip_ws(text, i + 1)
            while not text.startswith("]", i):
                try:
                    value, end = scan(text, i)
                except StopIteration:
                    raise json.JSONDecodeError("expected a value", text, i) from None
                items.append((text.count("\n", 0, i) + 1, value))
                i = _skip_ws(text, end)
                if text.startswith(",", i):
                    i = _skip_ws(text, i + 1)
                elif not text.startswith("]", i):
                    raise json.JSONDecodeError("expected ',' or ']'", text, i)
            top[key] = [v for _, v in items]
            i += 1
        else:
            try:
                top[key], i = scan(text, i)
            except StopIteration:
                raise json.JSONDecodeError("expected a value", text, i) from None
        i = _skip_ws(text, i)
        if text.startswith(",", i):
            i = _skip_ws(text, i + 1)
        elif not text.startswith("}", i):
            raise json.JSONDecodeError("expected ',' or '}'", text, i)
    if _skip_ws(text, i + 1) != len(text):
        raise json.JSONDecodeError("extra data after the export object", text, _skip_ws(text, i + 1))
    return top, items


def read_export(path: str | Path, *, export_format: str, schema: int) -> ExportFile:
    """Read and validate the export file ``path``.

    Args:
        path: the file.
        export_format: the expected ``format`` value (``"htam-memory"``).
        schema: the newest export schema this htam reads.

    Returns:
        The valid records and the errors of the invalid ones, each with its line number.

    Raises:
        ExportFileError: unreadable file, not UTF-8, not JSON (with line and column), not an HTAM export,
            a newer schema, or no ``records`` list.
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
    out = ExportFile()
    for line, value in items:
        try:
            out.records.append((line, Record.from_json(value)))
        except ValueError as exc:
            out.errors.append((line, str(exc)))
    return out
