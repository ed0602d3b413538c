"""The static profile reads the block size of a launch through the CUDA runtime API (``cudaLaunchKernel``,
``cudaLaunchCooperativeKernel``, ``cudaLaunchKernelEx``) for the occupancy. Programs written for these tests
(tests/support/api_launches.py)."""

from __future__ import annotations

import json

import pytest

from htam_core.cli.main import main
from tests.support.api_launches import SPELLINGS, program


@pytest.mark.parametrize("name", ["variables", "cooperative", "ex config", "reinterpret_cast"])
def test_the_block_size_is_the_launch_s(tmp_path, capsys, name: str) -> None:
    src = tmp_path / "api.cu"
    src.write_text(program(name))
    assert main(["profile", str(src), "--kernel", "scale", "--static", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["block_size"] == SPELLINGS[name][2]
    assert out["theoretical_occupancy"] is not None
