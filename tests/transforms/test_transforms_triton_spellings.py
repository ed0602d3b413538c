"""What the Triton steps make on the spellings of ``tests/fixtures/spellings/triton_*`` (without running them; the
spelling matrix runs them under the interpreter): the parameter each step changes, whatever the spelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "spellings"


def _make(step: str, file: str, kernel: str, tid: str):
    model = load(str(ROOT / step / file))
    res = registry.propose(tid, model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason
    return res


@pytest.mark.parametrize(("file", "kernel", "param"), [
    ("tutorial.py", "add_kernel", "BLOCK_SIZE"),
    ("alias_language.py", "axpy", "BLOCK"),
    ("from_import.py", "relu_kernel", "XBLOCK"),
    ("constexpr_default.py", "square_kernel", "BLOCK"),
    ("heuristics.py", "scale_kernel", "BLOCK_N"),
])
def test_block_size_changes_the_tile_parameter(file, kernel, param):
    cands = _make("triton_block_size", file, kernel, "triton.block_size")
    assert param in cands[0].params and cands[0].params[param] == 1024


def test_block_size_left_to_its_default_is_passed_at_the_launch():
    (c, *_) = _make("triton_block_size", "constexpr_default.py", "square_kernel", "triton.block_size")
    assert "square_kernel[grid](x, out, numel, BLOCK=1024)" in c.new_text
    assert "BLOCK: tl.constexpr = 64" in c.new_text  # the default stays the user's


def test_block_size_through_a_module_constant_edits_the_constant():
    (c, *_) = _make("triton_block_size", "heuristics.py", "scale_kernel", "triton.block_size")
    assert "BLOCK_N = 1024\n" in c.new_text


@pytest.mark.parametrize(("file", "kernel", "param"), [
    ("from_import.py", "leaky_relu_kernel", "XBLOCK"),  # masks passed by position
    ("constexpr_default.py", "clamp_kernel", "BLOCK"),  # a default the launch never passes
    ("alias_language.py", "gelu_kernel", "BLOCK"),
])
def test_autotune_tunes_the_tile_parameter(file, kernel, param):
    (c,) = _make("triton_autotune", file, kernel, "triton.autotune")
    assert all(param in cfg["kwargs"] for cfg in c.params["configs"])


def test_multi_row_writes_new_code_in_the_files_alias():
    (c, *_) = _make("triton_multi_row", "from_import.py", "center_rows", "triton.multi_row")
    assert "tl2.arange(0, ROWS)[:, None]" in c.new_text and "ROWS: constexpr" in c.new_text
    assert "tl.arange" not in c.new_text


def test_multi_row_follows_a_grid_local():
    (c, *_) = _make("triton_multi_row", "alias_language.py", "rms_scale", "triton.multi_row")
    assert "grid = (triton.cdiv(n_rows, htam_rows),)" in c.new_text
    assert c.new_text.index("htam_rows = ") < c.new_text.index("grid = (")


def test_the_memory_reads_a_kernel_under_its_files_alias():
    from htam_core.memory.facts import compute_facts

    model = load(str(ROOT / "triton_online_softmax" / "alias_language.py"))
    k = model.kernel("softmax_rows")
    facts = compute_facts(k.features, k.language, None, k, model)
    assert facts["uses_exp"] and facts["reduction_like"]


def test_online_softmax_fuses_static_range_loops():
    (c,) = _make("triton_online_softmax", "static_range.py", "softmax_static", "triton.online_softmax")
    assert c.new_text.count("tl.static_range(") == 2  # the max and sum passes are one loop now


def test_online_softmax_writes_the_files_alias():
    (c,) = _make("triton_online_softmax", "from_import.py", "lse_kernel", "triton.online_softmax")
    assert "tl2.where(" in c.new_text and "tl2.exp(htam_m_prev" in c.new_text


def test_multi_row_with_a_block_from_heuristics_chooses_rows_there_too():
    cands = _make("triton_multi_row", "heuristics.py", "absmax_scale_kernel", "triton.multi_row")
    c = cands[0]
    assert '"ROWS": lambda args: max(1, min(64, 2048 // args["BLOCK_N"]))' in c.new_text
    assert 'return (triton.cdiv(n_rows, meta["ROWS"]),)' in c.new_text
    assert "htam_n_rows=n_rows)" in c.new_text and len(cands) == 2
