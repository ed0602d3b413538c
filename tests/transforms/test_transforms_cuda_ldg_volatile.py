"""``cuda.ldg`` leaves ``volatile`` data alone: a flag a kernel spins on (another thread, kernel or the host sets
it) must be read from memory each time, and ``__ldg`` has no overload for a volatile pointer, so wrapping such a
read neither compiles nor keeps the meaning. The analysis layer says which pointees are volatile
(``PointerFacts.volatile``) in the spellings a developer writes; a ``volatile`` pointer variable (``int *volatile``)
points to ordinary data and keeps its step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

WAIT = """
#define VOL volatile
__global__ void wait_then_copy(FLAG_DECL, const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    while (flag[0] == 0) { }
    if (i < n) out[i] = in[i] + (float)flag[1];
}
"""

VOLATILE_SPELLINGS = ["volatile int* flag", "int volatile *flag", "const volatile int *flag", "VOL int *flag",
                      "volatile unsigned int *flag"]


def _facts(text: str) -> dict[str, object]:
    model = parse_text(text, "cuda")
    return {p.name: p for p in analyze(model, model.kernel("wait_then_copy")).pointers}


@pytest.mark.parametrize("decl", VOLATILE_SPELLINGS)
def test_a_volatile_pointee_is_a_fact_and_gets_no_ldg(decl: str) -> None:
    text = WAIT.replace("FLAG_DECL", decl)
    facts = _facts(text)
    assert facts["flag"].volatile and not facts["in"].volatile and not facts["out"].volatile
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.ldg", model, model.kernel("wait_then_copy"))
    assert not isinstance(res, NotApplicable), res.reason  # in is still a read-only input
    (cand,) = res
    assert "__ldg(&in[i])" in cand.new_text
    assert "__ldg(&flag" not in cand.new_text
    assert cand.params["params"] == ["in"]


def test_a_kernel_whose_only_input_is_volatile_is_refused_in_one_line() -> None:
    text = """
__global__ void spin(volatile unsigned int *latch) {
    while (latch[0] < 1) { }
}
"""
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.ldg", model, model.kernel("spin"))
    assert isinstance(res, NotApplicable)
    assert "latch points to volatile data" in res.reason


def test_a_volatile_pointer_variable_points_to_ordinary_data() -> None:
    text = WAIT.replace("FLAG_DECL", "int *volatile flag")
    assert not _facts(text)["flag"].volatile
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.ldg", model, model.kernel("wait_then_copy"))
    assert not isinstance(res, NotApplicable), res.reason
    assert "__ldg(&flag[0])" in res[0].new_text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("decl", ["volatile int* flag", "VOL int *flag", "int *volatile flag"])
def test_the_step_compiles_next_to_a_volatile_flag(decl: str, tmp_path: Path) -> None:
    text = WAIT.replace("FLAG_DECL", decl)
    model = parse_text(text, "cuda")
    (cand,) = registry.propose("cuda.ldg", model, model.kernel("wait_then_copy"))  # type: ignore[misc]
    assert_compiles(cand.new_text, tmp=tmp_path, name="wait.cu")
