"""The element types of Triton pointer parameters that the kernel's code shows (integer index pointers).

Each kernel below is written for these tests; the spellings are the ones a kernel developer writes for an index
(gather, cross entropy's labels, CSR row pointers, a hashed bucket, an ignore index, a cast index, an index copied
into an int pointer). Float data pointers, also those used with a float comparison or a quantizing cast, stay
unknown."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

HEAD = "import triton\nimport triton.language as tl\n\n@triton.jit\n"


def _types(body: str, params: str) -> dict[str, str]:
    model = parse_text(f"{HEAD}def k({params}):\n{body}", "python", "k.py")
    kernel = model.kernels[0]
    tf = analyze(model, kernel).triton
    assert tf is not None
    return {t.name: t.dtype for t in tf.pointer_types}


CASES = [
    ("inline index in an address",
     "    r = tl.program_id(0)\n    tl.store(o_ptr + r, tl.load(x_ptr + r * s + tl.load(i_ptr + r)))\n",
     "x_ptr, i_ptr, o_ptr, s", {"i_ptr": "int64"}),
    ("index through a local and a base pointer",
     "    r = tl.program_id(0)\n    lab = tl.load(lab_ptr + r)\n    base = x_ptr + r * s\n"
     "    t = tl.load(base + lab)\n    tl.store(o_ptr + r, t)\n",
     "x_ptr, lab_ptr, o_ptr, s", {"lab_ptr": "int64"}),
    ("broadcast index in a 2-D tile",
     "    r = tl.program_id(0) * 16 + tl.arange(0, 16)\n    c = tl.arange(0, 32)\n"
     "    j = tl.load(idx + r)\n    v = tl.load(table + j[:, None] * 32 + c[None, :])\n"
     "    tl.store(out + r[:, None] * 32 + c[None, :], v)\n",
     "idx, table, out", {"idx": "int64"}),
    ("CSR row pointers as loop bounds",
     "    r = tl.program_id(0)\n    start = tl.load(rowptr + r)\n    end = tl.load(rowptr + r + 1)\n"
     "    acc = 0.0\n    for k in range(start, end):\n        acc += tl.load(val + k) * tl.load(x + tl.load(col + k))\n"
     "    tl.store(y + r, acc)\n",
     "rowptr, col, val, x, y", {"rowptr": "int64", "col": "int64"}),
    ("bitwise hash",
     "    o = tl.arange(0, 64)\n    h = tl.load(key_ptr + o)\n    b = (h ^ (h >> 7)) & 1023\n"
     "    tl.atomic_add(cnt_ptr + b, 1)\n",
     "key_ptr, cnt_ptr", {"key_ptr": "int64"}),
    ("ignore index compared with an integer literal",
     "    r = tl.program_id(0)\n    lab = tl.load(lab_ptr + r)\n    x = tl.load(x_ptr + r)\n"
     "    tl.store(o_ptr + r, tl.where(lab != -100, x, 0.0))\n",
     "x_ptr, lab_ptr, o_ptr", {"lab_ptr": "int64"}),
    ("cast to an integer type",
     "    r = tl.program_id(0)\n    t = tl.load(t_ptr + r).to(tl.int32)\n    tl.store(o_ptr + r, t * 2.0)\n",
     "t_ptr, o_ptr", {"t_ptr": "int64"}),
    ("index copied into an int pointer",
     "    r = tl.program_id(0)\n    j = tl.load(src + r)\n    tl.store(dst + r, j)\n    v = tl.load(x_ptr + tl.load(dst + r))\n"
     "    tl.store(o_ptr + r, v)\n",
     "src, dst, x_ptr, o_ptr", {"src": "int64", "dst": "int64"}),
    ("keyword pointer and tl.where index",
     "    r = tl.program_id(0)\n    j = tl.load(pointer=i_ptr + r)\n    jj = tl.where(j < 0, j + n, j)\n"
     "    tl.store(o_ptr + r, tl.load(pointer=x_ptr + jj))\n",
     "x_ptr, i_ptr, o_ptr, n", {"i_ptr": "int64"}),
]


@pytest.mark.parametrize(("why", "body", "params", "expected"), CASES, ids=[c[0] for c in CASES])
def test_integer_uses_type_the_pointer(why: str, body: str, params: str, expected: dict[str, str]) -> None:
    assert _types(body, params) == expected, why


FLOAT_ONLY = [
    ("elementwise with a float comparison",
     "    o = tl.program_id(0) * 128 + tl.arange(0, 128)\n    x = tl.load(x_ptr + o, mask=o < n)\n"
     "    tl.store(y_ptr + o, tl.where(x > 0, x, 0.01 * x), mask=o < n)\n", "x_ptr, y_ptr, n"),
    ("quantizing cast of scaled values",
     "    o = tl.arange(0, 128)\n    x = tl.load(x_ptr + o)\n    q = (x / s).to(tl.int8)\n    tl.store(q_ptr + o, q)\n",
     "x_ptr, q_ptr, s"),
    ("argmax of float values used as an index",
     "    r = tl.program_id(0)\n    c = tl.arange(0, 64)\n    x = tl.load(x_ptr + r * 64 + c)\n"
     "    j = tl.argmax(x, axis=0)\n    tl.store(o_ptr + r * 64 + j, 1.0)\n", "x_ptr, o_ptr"),
    ("true division of a loaded value",
     "    r = tl.program_id(0)\n    d = tl.load(d_ptr + r)\n    tl.store(o_ptr + r, d / 3)\n", "d_ptr, o_ptr"),
]


@pytest.mark.parametrize(("why", "body", "params"), FLOAT_ONLY, ids=[c[0] for c in FLOAT_ONLY])
def test_float_uses_say_nothing(why: str, body: str, params: str) -> None:
    assert _types(body, params) == {}, why
