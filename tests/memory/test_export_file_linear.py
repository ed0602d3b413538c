"""Reading an export is linear in its size.

Regression: ``export_file`` counted the newlines from the start of the file for every record, so 5,000 records
took 4.8 s, 20,000 took 68 s and 100,000 did not finish in 40 minutes. The characters that ``str.count`` scans
are now counted through a ``str`` subclass: reading must scan each character at most once.
"""

from __future__ import annotations

import json
import uuid

from htam_core.memory import Outcome, Record
from htam_core.memory.export_file import _records_with_lines


class _CountingText(str):
    """A ``str`` that adds up how many characters its ``count`` calls scan."""

    scanned = 0

    def count(self, sub: str, start: int | None = None, end: int | None = None) -> int:  # type: ignore[override]
        lo = 0 if start is None else start
        hi = len(self) if end is None else end
        _CountingText.scanned += max(0, hi - lo)
        return str.count(self, sub, lo, hi)


def _export_text(n: int) -> str:
    recs = [Record((), {"class=memory-bound": 1.0}, "vectorize_loads", "memory_access",
                   Outcome(1.1, True, True, "win"), f"k{i}", "H200", 5.0 + i, uuid.uuid4().hex).to_json()
            for i in range(n)]
    return json.dumps({"format": "htam-memory", "schema": 4, "records": recs}, indent=1)


def test_line_numbers_cost_one_pass_over_the_file() -> None:
    text = _CountingText(_export_text(2000))
    _CountingText.scanned = 0
    _, items = _records_with_lines(text)
    assert len(items) == 2000
    assert _CountingText.scanned <= len(text)  # the quadratic version scanned about 1,000 times the file


def test_line_numbers_are_still_exact() -> None:
    text = _export_text(50)
    _, items = _records_with_lines(text)
    lines = text.split("\n")
    for line, value in items:
        assert lines[line - 1].strip() == "{"  # indent=1 puts each record's opening brace on its own line
        assert f'"uid": "{value["uid"]}"' in "\n".join(lines[line - 1:line + 40])
