"""Steps made on kernels that read memory, index and math through function-like macros (``IDX2C(i, j, ld)``,
``X(r, c)``, ``FAST_EXP(v)``; ``tests/fixtures/macros``): the analysis reads through the macros, and every edit
keeps each macro call whole (a rewrite replaces whole statements or loops, never text inside a call)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "macros"
_CALL = re.compile(r"\b(IDX2C|X|Y|FAST_EXP)\s*\(")


def _made(tid: str, file: str, kernel: str):  # noqa: ANN202 - (model, candidates)
    model = load(str(FIXTURES / file))
    res = registry.propose(tid, model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason
    return model, res


def _calls(text: str) -> list[tuple[int, int]]:
    """The byte ranges of the macro calls of the fixtures in ``text``."""
    model = parse_text(text, "cuda")
    data = model.text.encode()
    out = []
    for m in _CALL.finditer(model.text):
        depth, i = 0, m.end() - 1
        for i in range(m.end() - 1, len(data)):
            depth += {ord("("): 1, ord(")"): -1}.get(data[i], 0)
            if depth == 0:
                break
        out.append((m.start(), i + 1))
    return out


def _edits_keep_calls_whole(model, cand) -> None:  # noqa: ANN001
    for e in cand.edits:
        for s, t in _calls(model.text):
            inside = s < e.start_byte < t or s < e.end_byte < t
            assert not inside, f"edit {e} cuts into the macro call {model.text[s:t]!r}"


def test_coalesce_through_a_column_major_index_macro(tmp_path: Path) -> None:
    model, (cand,) = _made("cuda.coalesce_remap", "scale_colmajor.cu", "scale_colmajor")
    assert cand.params == {"strided_before": 2, "strided_after": 0}
    assert "out[IDX2C(i, j, rows)] = alpha * in[IDX2C(i, j, rows)];" in cand.new_text
    assert "int i = blockIdx.x * blockDim.x + threadIdx.x;" in cand.new_text
    _edits_keep_calls_whole(model, cand)
    if shutil.which("nvcc"):
        assert_nvcc_compiles(cand.new_text, tmp_path)


def test_coalesce_refuses_a_builtin_inside_a_macro() -> None:
    text = (FIXTURES / "scale_colmajor.cu").read_text().replace(
        "#define TILE 16", "#define TILE 16\n#define COL() (blockIdx.x * blockDim.x + threadIdx.x)").replace(
        "int j = blockIdx.x * blockDim.x + threadIdx.x;", "int j = COL();")
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.coalesce_remap", model, model.kernel("scale_colmajor"))
    assert isinstance(res, NotApplicable) and "inside a macro" in res.reason and "COL" in res.reason


@pytest.mark.parametrize("tid", ["cuda.online_softmax", "cuda.warp_per_row"])
def test_softmax_steps_through_access_and_exp_macros(tid: str, tmp_path: Path) -> None:
    model, cands = _made(tid, "softmax_rows.cu", "softmax_rows")
    for cand in cands:
        _edits_keep_calls_whole(model, cand)
        assert "Y(r, c) = FAST_EXP(X(r, c) - mx) / sum;" in cand.new_text
        if shutil.which("nvcc"):
            assert_nvcc_compiles(cand.new_text, tmp_path)
    if tid == "cuda.online_softmax":
        assert "__expf(" in cands[0].new_text  # the function FAST_EXP stands for
