"""A data file reads the same whether stored plain or gzip-compressed (``htam_core.types.files``)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from htam_core.types.files import data_path, read_data_text


def test_plain_and_gz_read_the_same(tmp_path: Path) -> None:
    text = '{"type": "header"}\n{"type": "node", "x": "é"}\n'
    plain = tmp_path / "t.jsonl"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / "p.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    assert read_data_text(plain) == text
    assert read_data_text(packed) == text
    # the name without .gz finds the compressed file
    assert data_path(tmp_path / "p.jsonl") == packed
    assert read_data_text(tmp_path / "p.jsonl") == text


def test_plain_file_wins_over_gz(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text("plain", encoding="utf-8")
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(b"packed"))
    assert read_data_text(tmp_path / "t.json") == "plain"


def test_missing_and_broken_files_raise_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        read_data_text(tmp_path / "none.jsonl")
    assert data_path(tmp_path / "none.jsonl") == tmp_path / "none.jsonl"
    (tmp_path / "bad.jsonl.gz").write_bytes(b"not gzip at all")
    with pytest.raises(OSError):
        read_data_text(tmp_path / "bad.jsonl.gz")
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(b"x" * 1000)[:20])
    with pytest.raises(OSError):
        read_data_text(tmp_path / "cut.jsonl.gz")
