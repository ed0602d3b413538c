"""Where a half-typed file does not parse: the first ERROR/MISSING node, as line:column, everywhere.

Regression (a new user's trial): "syntax error" on a half-typed file pointed at line 1 (the ERROR node
tree-sitter wraps around the whole unfinished construct) when the cut was on line 4. Files are cut at
several places, CUDA and Triton; the model's problems, the kernel's ``parse_problem`` and the one line of
``incomplete_reason`` must name the cut's line.
"""

from __future__ import annotations

import pytest

from htam_core.source import incomplete_reason
from htam_core.source.api import parse_text
from htam_core.source.parse_problems import first_problem, problem_message

CUDA = """#include <cuda_runtime.h>
#define N_MAX 4096

__global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = a * x[i] + y[i];
        y[i] = fminf(v, (float)N_MAX);
    }
}
"""

TRITON = """import triton
import triton.language as tl


@triton.jit
def saxpy(x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, a * x + y, mask=mask)
"""


def _cuts(text: str, first_body_line: int) -> list[tuple[int, str]]:
    """``(1-based line, text)`` for each body line cut just after its first ``(`` or ``[`` (or ``=``)."""
    lines = text.splitlines(keepends=True)
    out = []
    for k in range(first_body_line - 1, len(lines)):
        line = lines[k]
        at = min((line.index(c) for c in "([" if c in line), default=line.find("="))
        if at > 0:
            out.append((k + 1, "".join(lines[:k]) + line[: at + 1]))
    return out


@pytest.mark.parametrize(("text", "lang", "body"), [(CUDA, "cuda", 5), (TRITON, "python", 7)])
def test_a_cut_is_reported_on_its_line(text, lang, body):
    cuts = _cuts(text, body)
    assert len(cuts) >= 4
    for line, cut in cuts:
        model = parse_text(cut, lang, f"k.{'cu' if lang == 'cuda' else 'py'}")
        kernel = model.kernel("saxpy")
        assert kernel.incomplete, (line, cut)
        p = kernel.parse_problem
        assert p is not None and p.line == line, (line, str(p), cut)
        assert model.errors[0].startswith(f"{line}:"), (line, model.errors)
        why = incomplete_reason(kernel, "it is profiled")
        assert f"it does not parse at line {line}, column {p.column}: " in why


def test_the_column_is_where_the_text_breaks():
    cut = CUDA[: CUDA.index("if (i < n)") + len("if (i < n")]  # cut inside the condition on line 6
    p = first_problem(cut, "cuda")
    assert (p.line, p.column) == (6, 8) and "`(` is never closed" in p.what and "the text stops after `if (i < n`" \
        in p.what
    assert problem_message("k.cu", p, "run it again").startswith("k.cu:6:8: syntax error: `(` is never closed")


def test_a_problem_inside_a_complete_file_is_at_the_bad_token():
    bad = CUDA.replace("float v = a * x[i] + y[i];", "float v = a * ;")
    p = first_problem(bad, "cuda")
    assert p is not None and p.line == 7
    bad_py = TRITON.replace("mask = offs < n", "mask = offs < n n")
    p = first_problem(bad_py, "python")
    assert p is not None and p.line == 9


def test_a_missing_bracket_points_at_the_bracket_left_open():
    """tree-sitter puts a MISSING ``)`` where it gave up (lines later, in the next kernel); the ``(`` it
    would close is where to look."""
    text = CUDA.replace("__global__ void saxpy(const float* x, float* y, float a, int n) {",
                        "__global__ void half(float* y,\n\n__global__ void saxpy(const float* x, float* y, float a, int n) {")
    model = parse_text(text, "cuda")
    half = model.kernel("half")
    assert half.incomplete and (half.parse_problem.line, half.parse_problem.column) == (4, 21)
    assert not model.kernel("saxpy").incomplete


def test_a_clean_file_has_no_problem():
    assert first_problem(CUDA, "cuda") is None and first_problem(TRITON, "python") is None
    assert parse_text(CUDA, "cuda").errors == [] and parse_text(TRITON, "python").errors == []
