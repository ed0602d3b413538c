"""The harness inferred from ``main()`` reads a launch through the CUDA runtime API like a ``<<<...>>>`` one: the
grid and block from its slots (or the ``cudaLaunchKernelEx`` config's fields), the kernel's arguments from the
``void* args[]`` array or the trailing arguments. Programs written for these tests (tests/support/api_launches.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.infer_cuda import HarnessError, infer_cuda_harness
from tests.support.api_launches import SPELLINGS, program


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_grid_block_and_arguments_are_read(tmp_path: Path, name: str) -> None:
    src = tmp_path / "api.cu"
    src.write_text(program(name))
    h = infer_cuda_harness(src, "scale")
    _, grid, block, _ = SPELLINGS[name]
    assert (h.grid, h.block) == (f"({grid}, 1, 1)", f"({block}, 1, 1)")
    assert h.args == ["x", "f", "n"]
    assert {i.name: i.shape for i in h.inputs}["x"] == [1 << 14] and h.outputs == ["x"]


def test_an_arguments_array_that_is_not_read_is_refused_in_one_line(tmp_path: Path) -> None:
    src = tmp_path / "api.cu"
    src.write_text(program("dim3 temporaries").replace("void* args[] = {&x, &f, &n};",
                                                       "void* args[3];\n    args[0] = &x; args[1] = &f; args[2] = &n;"))
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(src, "scale")
    assert "the arguments of scale are not read" in e.value.message and "\n" not in e.value.message
