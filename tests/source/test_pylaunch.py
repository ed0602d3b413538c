"""cupy launches read as CUDA (``htam_core.source.pylaunch``): which calls are read, how their components map onto
the Python file byte for byte, which names are declared with their values (and editable), and how a step's C text
is written back as Python."""

from __future__ import annotations

import pytest

from htam_core.source.pylaunch import cupy_launches, python_text
from tests.support.workspace_fixtures import CUPY_TRANSPOSE_PY, CUPY_VADD_PY

VADD_PARAMS = [("a", "const float *"), ("b", "const float *"), ("c", "float *"), ("n", "int")]


def _joined(launch) -> str:
    return "".join(p.text for p in launch.pieces)


def test_a_raw_kernel_call_is_a_host_launch():
    (la,) = cupy_launches(CUPY_VADD_PY, "vadd", VADD_PARAMS)
    data = CUPY_VADD_PY.encode()
    assert data[la.span[0]:la.span[1]].decode().startswith("kern(((n + BLOCK")
    assert la.line == 17 and la.grid == "((n + BLOCK - 1) // BLOCK,)" and la.block == "(BLOCK,)"
    c = _joined(la)
    assert "const int BLOCK = 256;" in c
    assert "vadd<<<(n + BLOCK - 1) /  BLOCK, BLOCK>>>(a, b, c, n);" in c
    assert "(int n, const float * a, const float * b, float * c)" in c  # the kernel's types; n passed as cp.int32
    assert "htam_cupy_17_4" in c


def test_mapped_pieces_stand_for_their_bytes():
    (la,) = cupy_launches(CUPY_VADD_PY, "vadd", VADD_PARAMS)
    data = CUPY_VADD_PY.encode()
    mapped = [p for p in la.pieces if p.span is not None]
    assert [data[s:e].decode() for s, e in (p.span for p in mapped)] == [
        "256", "(n + BLOCK - 1) // BLOCK", "BLOCK"]
    for p in mapped:  # equal length: a byte of the C text is a byte of the file
        assert len(p.text.encode()) == p.span[1] - p.span[0]
    assert la.pieces[la.launch_piece].text == "(n + BLOCK - 1) /  BLOCK"


def test_a_get_function_handle_with_a_2d_launch():
    params = [("in", "const float *"), ("out", "float *"), ("rows", "int"), ("cols", "int")]
    (la,) = cupy_launches(CUPY_TRANSPOSE_PY, "transpose", params)
    c = _joined(la)
    assert "transpose<<<dim3((cols + 15) /  16, (rows + 15) /  16), dim3(16, 16)>>>(a, out, rows, cols);" in c
    assert "int rows" in c and "int cols" in c


def test_a_value_read_elsewhere_is_declared_but_fixed():
    text = CUPY_VADD_PY.replace("    return c\n", "    print(BLOCK)\n    return c\n")
    (la,) = cupy_launches(text, "vadd", VADD_PARAMS)
    decl = next(i for i, p in enumerate(la.pieces) if p.text == "    const int BLOCK = ")
    assert la.pieces[decl + 1].text == "256" and la.pieces[decl + 1].fixed.startswith("BLOCK is read elsewhere")
    (alone,) = cupy_launches(CUPY_VADD_PY, "vadd", VADD_PARAMS)
    assert not any(p.fixed for p in alone.pieces)


def test_a_local_computed_once_is_declared():
    text = CUPY_VADD_PY.replace("kern(((n + BLOCK - 1) // BLOCK,)", "blocks = (n + BLOCK - 1) // BLOCK\n"
                                "    kern((blocks,)")
    (la,) = cupy_launches(text, "vadd", VADD_PARAMS)
    c = _joined(la)
    assert c.index("const int BLOCK = 256;") < c.index("const int blocks = (n + BLOCK - 1) /  BLOCK;")
    assert "vadd<<<blocks, BLOCK>>>" in c
    assert "int n" in c  # n = a.size is not an integer expression: an unknown parameter


TUPLES = CUPY_TRANSPOSE_PY.replace(
    "    tr(((cols + 15) // 16, (rows + 15) // 16), (16, 16),",
    "    threads = (16, 16)\n    blocks = ((cols + 15) // 16, (rows + 15) // 16)\n    tr(blocks, threads,")
T_PARAMS = [("in", "const float *"), ("out", "float *"), ("rows", "int"), ("cols", "int")]


def test_names_holding_the_grid_and_block_tuples_are_read_through():
    (la,) = cupy_launches(TUPLES, "transpose", T_PARAMS)
    assert la.grid == "blocks" and la.block == "threads"
    assert "transpose<<<dim3((cols + 15) /  16, (rows + 15) /  16), dim3(16, 16)>>>" in _joined(la)
    data = TUPLES.encode()
    mapped = [data[p.span[0]:p.span[1]].decode() for p in la.pieces if p.span is not None]
    assert mapped == ["(cols + 15) // 16", "(rows + 15) // 16", "16", "16"]  # the tuples' items where assigned
    assert not any(p.fixed for p in la.pieces)


def test_a_tuple_read_elsewhere_is_fixed():
    text = TUPLES.replace("    return out\n", "    print(threads)\n    return out\n")
    (la,) = cupy_launches(text, "transpose", T_PARAMS)
    fixed = {p.text for p in la.pieces if p.fixed}
    assert fixed == {"16"} and all(p.fixed.startswith("threads is read elsewhere") for p in la.pieces if p.fixed)


@pytest.mark.parametrize("grid", ["(math.ceil(n / 256),)", "(-(-n // 256),)", "(n / 256,)", "(a.size // 256,)",
                                  "((n + 255) // 256 if n else 1,)", "(n and 4,)"])
def test_a_component_python_reads_otherwise_is_not_read(grid):
    text = CUPY_VADD_PY.replace("((n + BLOCK - 1) // BLOCK,)", grid)
    assert cupy_launches(text, "vadd", VADD_PARAMS) == []


def test_other_kernels_and_broken_files():
    assert cupy_launches(CUPY_VADD_PY, "other", VADD_PARAMS) == []
    assert cupy_launches(CUPY_VADD_PY + "\ndef broken(:\n", "vadd", VADD_PARAMS) == []


@pytest.mark.parametrize(("c_text", "py"), [
    ("128", "128"), ("(n + 127) /  128", "(n + 127) // 128"), ("(((n + 255) / 256) + 3) / 4", "(((n + 255) // 256) + 3) // 4"),
    ("256u", "256"), ("n << 2", "n << 2"),
])
def test_c_text_written_as_python(c_text, py):
    assert python_text(c_text) == py


@pytest.mark.parametrize("c_text", ["htam_sm_grid(n, 8)", "dim3(32, 8)", "n > 0 ? n : 1", "(int)n", "1.5f",
                                    "sizeof(float)"])
def test_c_text_python_would_read_otherwise_is_refused(c_text):
    assert python_text(c_text) is None
