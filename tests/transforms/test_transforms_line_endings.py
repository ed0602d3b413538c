"""A transform's edit keeps the file's line endings (regression: a CR-only Triton file was not transformed at
all, and text the transforms insert came back with bare ``\\n`` in CRLF and CR files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core import source
from htam_core.source.positions import line_ending, with_line_ending
from htam_core.transforms import registry

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add.py"


def test_line_ending_helpers():
    assert line_ending("a\nb\n") == "\n" and line_ending("a\r\nb\r\n") == "\r\n" and line_ending("a\rb\r") == "\r"
    assert line_ending("one line") == "\n"
    assert with_line_ending("x\ny\r\nz\n", "\r") == "x\ry\r\nz\r"
    assert with_line_ending("x\ny\n", "\r\n") == "x\r\ny\r\n"
    assert with_line_ending("x\ny\n", "\n") == "x\ny\n"


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_triton_block_size_keeps_the_files_line_endings(ending: str):
    text = EXAMPLE.read_text().replace("\n", ending)
    model = source.parse_text(text, "python", "/tmp/vector_add.py")
    cands = registry.propose("triton.block_size", model, model.kernel("add_kernel"), None)
    assert isinstance(cands, list) and cands, cands
    new = cands[0].new_text
    bare_lf = new.count("\n") - new.count("\r\n")
    bare_cr = new.count("\r") - new.count("\r\n")
    if ending == "\r":
        assert bare_lf == 0 and new.count("\r\n") == 0 and bare_cr >= text.count("\r")
    else:
        assert bare_lf == 0 and bare_cr == 0 and new.count("\r\n") >= text.count("\r\n")
