"""A @triton.heuristics kernel that sets num_warps: never compiled or reported with num_warps=0."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.profile.api import profile_kernel
from htam_core.runtime.cache import CompileCache

pytest.importorskip("triton")

SRC = Path(__file__).resolve().parents[1] / "fixtures" / "honest" / "softmax_heuristics.py"


def test_a_heuristic_that_needs_runtime_sizes_falls_back_to_tritons_default(tmp_path: Path) -> None:
    p = profile_kernel(SRC, "softmax_kernel", static=True, cache=CompileCache(tmp_path / "c"))
    assert p.extra["num_warps"] == 4 and p.block_size == 128  # BLOCK_N fell back to 1024 -> 4 warps
    assert p.extra["block_size_source"] == "num_warps=4 x 32 (heuristic)"
    assert not any("num_warps=0" in w for w in p.warnings), p.warnings
    assert any("BLOCK_N" in w and "heuristic" in w for w in p.warnings)


def _profile_variant(tmp_path: Path, old: str, new: str):
    """Static profile of the fixture with ``old`` replaced by ``new``."""
    text = SRC.read_text()
    assert old in text
    f = tmp_path / "softmax_variant.py"
    f.write_text(text.replace(old, new))
    return profile_kernel(f, "softmax_kernel", static=True, cache=CompileCache(tmp_path / "c"))


def test_launch_site_values_feed_the_heuristics(tmp_path: Path) -> None:
    p = _profile_variant(tmp_path, "softmax_kernel[(n_rows,)](y, x, x.stride(0), n_cols)",
                         "softmax_kernel[(n_rows,)](y, x, x.stride(0), 4096)")
    assert p.extra["constexprs"]["BLOCK_N"] == {"value": 4096, "source": "heuristic"}
    assert p.extra["num_warps"] == 8 and p.block_size == 256
    assert not any("assumed" in w for w in p.warnings), p.warnings


def test_a_heuristic_without_enough_values_says_which_value_was_used(tmp_path: Path) -> None:
    p = _profile_variant(tmp_path, '"num_warps": lambda args: 4 if args["BLOCK_N"] <= 2048 else 8',
                         '"num_warps": lambda args: 4 if args["n_cols"] <= 2048 else 8')
    assert p.extra["num_warps"] == 4 and p.block_size == 128
    w = next(w for w in p.warnings if w.startswith("num_warps"))
    assert "needs runtime arguments" in w and "num_warps=4 (Triton's default)" in w, w
