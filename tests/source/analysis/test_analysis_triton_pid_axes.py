"""Which names of a Triton kernel depend on which ``tl.program_id`` axis (``htam_core.source.analysis.triton``:
:func:`pid_axes`, :func:`program_axes_of`, :func:`program_axis`, :func:`read_program_axes`): through ``+ - *``
and ``tl.arange`` only, per axis, in any spelling of ``triton.language`` and of the axis argument."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.triton import pid_axes, program_axes_of, program_axis, read_program_axes
from htam_core.source.analysis.unit import PythonSource, python_source
from htam_core.source.api import parse_text

TILED = """import triton
import triton.language as tl

@triton.jit
def k(a_ptr, out_ptr, n, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(axis=1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    offs = rows[:, None] * n + cols[None, :]
    wrapped = (pid_m * BM) % n
    half = pid_n // 2
    other = n * 4
    x = tl.load(a_ptr + offs)
    tl.store(out_ptr + offs, x)
"""

ALIASED = """import triton
from triton import language as language

@triton.jit
def k(a_ptr, out_ptr, n, BLOCK: language.constexpr):
    start = language.program_id(axis=0) * BLOCK
    idx = start + language.arange(0, BLOCK)
    x = language.load(a_ptr + idx, mask=idx < n)
    language.store(out_ptr + idx, x, mask=idx < n)
"""


def _source(text: str) -> PythonSource:
    model = parse_text(text, "python")
    src = python_source(model, model.kernel("k"))
    assert isinstance(src, PythonSource)
    return src


def test_names_get_the_axes_they_depend_on() -> None:
    src = _source(TILED)
    got = pid_axes(src.body, src.src, src.names)
    # a value loaded at program-dependent offsets depends on them too (`x`)
    assert got == {"pid_m": {"0"}, "pid_n": {"1"}, "rows": {"0"}, "cols": {"1"}, "offs": {"0", "1"}, "x": {"0", "1"}}
    # `%` and `//` wrap a program's slice around: no axis; a name free of program ids is absent
    assert not {"wrapped", "half", "other"} & set(got)


def test_an_expression_and_the_axes_read() -> None:
    src = _source(TILED)
    axes = pid_axes(src.body, src.src, src.names)
    loads = [c for c in syn.py_calls(src.body) if src.callee(c) == "tl.load"]
    (arg,) = [a for a in loads[0].child_by_field_name("arguments").named_children]
    assert program_axes_of(arg, src.src, src.names, axes) == {"0", "1"}
    assert read_program_axes(src.body, src.src, src.names) == {"0", "1"}


def test_another_spelling_of_triton_language() -> None:
    src = _source(ALIASED)
    assert pid_axes(src.body, src.src, src.names) == {"start": {"0"}, "idx": {"0"}, "x": {"0"}}
    assert read_program_axes(src.body, src.src, src.names) == {"0"}


@pytest.mark.parametrize(("call", "axis"), [("tl.program_id(0)", "0"), ("tl.program_id(axis=2)", "2"),
                                             ("tl.program_id( 1 )", "1"), ("tl.program_id(AX)", "AX")])
def test_the_axis_a_call_names(call: str, axis: str) -> None:
    src = _source(TILED.replace("tl.program_id(0)", call))
    first = next(c for c in syn.py_calls(src.body) if src.callee(c) == "tl.program_id")
    assert program_axis(first, src.src) == axis
