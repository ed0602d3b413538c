"""A naive matmul spelled with ``#pragma unroll`` (or ``#pragma unroll N``) before its k loop, with ``unsigned int``
or ``size_t`` indices and ``const float* __restrict__`` operands, is the same naive pattern: the shared-memory and
register tilings are offered and made; the k loop is restructured, so its pragma is dropped (the new constant-trip
inner loop gets its own). The analysis layer reads the pragma as an attribute of its loop, never as a statement."""

from __future__ import annotations

import re
import shutil

import pytest
from transform_helpers import assert_nvcc_compiles, candidates, fixture_path

from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.syntax import parse_cuda, statement_start, statements
from htam_core.transforms import registry
from htam_core.transforms._cuda import statement_list
from htam_core.transforms.base import NotApplicable

FILE = "matmul_pragma_spellings.cu"
KERNELS = ["mm_pragma", "mm_pragma_count", "mm_unsigned", "mm_size_t"]
TILINGS = ["cuda.smem_tiling_matmul", "cuda.register_tile_matmul"]



@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("tid", TILINGS)
def test_pragma_spelled_matmul_is_tiled(tid, kernel):
    res = candidates(tid, FILE, kernel)
    assert res, f"{tid} offered nothing for {kernel}"
    text = res[0].new_text
    assert "__shared__" in text.split(f"void {kernel}", 1)[1].split("void ", 1)[0]
    # the k loop was restructured: its own pragma (unroll with a count) is gone from the kernel
    body = text.split(f"void {kernel}", 1)[1].split("__global__", 1)[0]
    assert not re.search(r"#pragma unroll [48]\b", body)


def test_loop_fact_carries_its_pragma():
    model = load(str(fixture_path(FILE)))
    facts = analyze(model, model.kernel("mm_pragma_count"))
    (loop,) = facts.loops
    assert loop.pragma == "unroll 4" and loop.has_unroll_pragma
    assert loop.pragma_span is not None
    assert model.text.encode()[loop.pragma_span[0]:loop.pragma_span[1]].decode().startswith("#pragma unroll 4")
    facts = analyze(model, model.kernel("mm_size_t"))
    assert facts.loops[0].pragma == "unroll 8"


def test_statements_attach_a_pragma_to_its_loop():
    src = b"void f(float *a, int n) {\n  int i = 0;\n  // note\n#pragma unroll 2\n  // why\n  for (; i < n; ++i) a[i] = 0;\n"\
          b"#pragma once\n  a[0] = 1;\n}\n"
    tree = parse_cuda(src)
    body = tree.root_node.named_children[0].child_by_field_name("body")
    kinds = [s.type for s in statements(body)]
    assert kinds == ["declaration", "for_statement", "preproc_call", "expression_statement"]
    assert [s.type for s in statement_list(body)] == kinds
    loop = statements(body)[1]
    assert src[statement_start(loop):].startswith(b"#pragma unroll 2")


def test_restructured_loop_drops_its_pragma():
    """The float4 rewrite replaces the row loop by a block (vector loop, scalar tail): the loop's `#pragma unroll 4`
    must not be left in front of that block."""
    (c,) = candidates("cuda.vectorize_float4", FILE, "scale_rows_pragma")
    body = c.new_text.split("void scale_rows_pragma", 1)[1].split("void run_all", 1)[0]
    assert "float4" in body and "#pragma unroll 4" not in body


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("tid", TILINGS)
def test_pragma_spelled_tilings_compile(tid, tmp_path):
    """Every spelling's candidate compiles: the kernels one after another in one file."""
    text = fixture_path(FILE).read_text()
    for kernel in KERNELS:
        model = parse_text(text, "cuda")
        res = registry.propose(tid, model, model.kernel(kernel))
        assert not isinstance(res, NotApplicable), (kernel, res)
        text = res[0].new_text
    assert_nvcc_compiles(text, tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_restructured_loop_compiles(tmp_path):
    (c,) = candidates("cuda.vectorize_float4", FILE, "scale_rows_pragma")
    assert_nvcc_compiles(c.new_text, tmp_path)
