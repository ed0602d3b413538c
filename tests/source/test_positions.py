"""UTF-8/UTF-16/UTF-32 columns and kernel_at with non-ASCII text before the kernel."""

from __future__ import annotations

import pytest

from htam_core.source import Document, is_kernel_file, kernel_at, parse_text
from htam_core.source.positions import LineIndex, byte_col_to_units, units_to_byte_col, utf16_length

CU = (
    "// r\u00e9sum\u00e9 \U0001f680 kernels\n"
    "/* \U0001f600 */ __global__ void emoji_k(float* x) { x[0] = 1.0f; }\n"
    "__global__ void plain(float* y) { y[0] = 2.0f; }\n"
)


def test_column_conversions() -> None:
    line = "/* \U0001f600 */ k".encode()
    # the emoji is 4 UTF-8 bytes, 2 UTF-16 units, 1 UTF-32 unit
    assert units_to_byte_col(line, 5, "utf-16") == 7
    assert units_to_byte_col(line, 4, "utf-32") == 7
    assert units_to_byte_col(line, 7, "utf-8") == 7
    assert byte_col_to_units(line, 7, "utf-16") == 5
    assert byte_col_to_units(line, 7, "utf-32") == 4
    assert units_to_byte_col(line, 999, "utf-16") == len(line)
    assert utf16_length("\U0001f600a") == 3
    with pytest.raises(ValueError):
        units_to_byte_col(line, 1, "latin-1")
    idx = LineIndex(CU.encode())
    assert idx.to_position(idx.to_byte(1, 12, "utf-16"), "utf-16") == (1, 12)


def test_kernel_at_utf16_vs_utf8_after_emoji() -> None:
    m = parse_text(CU, "cuda")
    line1 = CU.splitlines()[1]
    name_col_utf16 = utf16_length(line1[: line1.index("emoji_k")])
    name_col_utf8 = len(line1[: line1.index("emoji_k")].encode())
    assert name_col_utf16 == 25 and name_col_utf8 == 27
    assert kernel_at(m, 1, name_col_utf16, "utf-16").name == "emoji_k"
    assert kernel_at(m, 1, name_col_utf8, "utf-8").name == "emoji_k"
    # 3 code units into the line is inside the comment in both encodings, before the kernel
    assert kernel_at(m, 1, 3, "utf-16") is None
    # column 10 is inside `__global__` in UTF-16 units but still the blank before it in UTF-8 bytes
    assert kernel_at(m, 1, 10, "utf-16").name == "emoji_k"
    assert kernel_at(m, 1, 10, "utf-8") is None
    # the UTF-8 column of the name read as UTF-16 would land 2 units further: still the kernel
    assert Document(CU, "cuda").kernel_at(1, name_col_utf16, "utf-16").name == "emoji_k"
    assert kernel_at(m, 2, 20, "utf-32").name == "plain"
    assert kernel_at(m, 0, 5) is None


def test_kernel_at_covers_template_line_and_decorators() -> None:
    cu = "template <int B>\n__global__ void t(float* x)\n{\n    x[0] = B;\n}\n"
    m = parse_text(cu, "cuda")
    assert kernel_at(m, 0, 2).name == "t" and kernel_at(m, 4, 0).name == "t"
    py = "import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n"
    mp = parse_text(py, "python")
    assert kernel_at(mp, 2, 1).name == "k" and kernel_at(mp, 0, 0) is None


def test_is_kernel_file() -> None:
    assert not is_kernel_file(parse_text("import torch\nx = 1\n", "python"))
    assert is_kernel_file(parse_text("import triton\n@triton.jit\ndef k(p):\n    pass\n", "python"))
    assert is_kernel_file(parse_text("int main() { return 0; }\n", "cuda"))
