"""Triton transforms: each applies where it should, refuses with a reason where it should not, and its
result parses (validated by the registry, re-checked in ``transform_helpers.candidates``)."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text

VADD = "vector_add_small_block.py"


def test_block_size_updates_local_feeding_grid(cand):
    cs = cand("triton.block_size", VADD, "vadd_kernel")
    # nearest to the tutorial's 1024 first (the loop takes a strategy's first new candidate)
    assert [c.params["BLOCK_SIZE"] for c in cs] == [1024, 2048, 512, 4096, 256, 128]
    assert "    BLOCK_SIZE = 1024\n    grid = (triton.cdiv(numel, BLOCK_SIZE),)" in cs[0].new_text


def test_block_size_literal_grid_and_meta_grid(cand):
    cs = cand("triton.block_size", "tri_scale.py", "scale_shift")
    c = next(c for c in cs if c.params["BLOCK"] == 1024)
    assert "scale_shift[(triton.cdiv(n, 1024),)](x, y, n, alpha, beta, BLOCK=1024)" in c.new_text
    cs = cand("triton.block_size", "bias_gelu_fused.py", "bias_gelu_residual_kernel")
    assert any("BLOCK_SIZE=2048," in c.new_text for c in cs)


def test_block_size_several_params_one_at_a_time(cand):
    cs = cand("triton.block_size", "tri_matmul.py", "matmul_2d")
    assert all(len([k for k in c.params if k.startswith("BLOCK")]) == 1 for c in cs)
    assert any(c.params.get("BLOCK_K") == 32 for c in cs)


@pytest.mark.parametrize(
    "file,kernel,needle",
    [("tri_scale.py", "copy_exact", "unmasked"), ("softmax_rows.py", "row_softmax_kernel", "computed"),
     ("matmul_autotune.py", "mm_kernel", "autotune"), ("tri_matmul.py", "matmul_1d", "could belong")],
)
def test_block_size_refusals(refuse, file, kernel, needle):
    assert needle in refuse("triton.block_size", file, kernel)


def test_warps_stages(cand, refuse):
    cs = cand("triton.warps_stages", "softmax_rows.py", "row_softmax_kernel")
    assert {c.params.get("num_warps") for c in cs} == {2, 4, 8, 16}
    cs = cand("triton.warps_stages", "tri_matmul.py", "matmul_1d")
    assert any("num_stages=4)" in c.new_text for c in cs)  # added: the kernel loops
    assert "autotuned" in refuse("triton.warps_stages", "matmul_autotune.py", "mm_kernel")


def test_autotune_wraps_and_rewrites_grid(cand):
    (c,) = cand("triton.autotune", VADD, "vadd_kernel")
    t = c.new_text
    assert ('@triton.autotune(configs=_HTAM_VADD_KERNEL_CONFIGS, key=["numel"],\n'
            '                 prune_configs_by={"early_config_prune": _htam_prune_vadd_kernel})\n@triton.jit') in t
    # the prune function compares BLOCK_SIZE with numel, the bound its mask uses (idx < numel)
    assert "for b, n in (('BLOCK_SIZE', 'numel'),)" in t
    # the grid variable only the launch read becomes the lambda; BLOCK_SIZE = 64 (now unread) is removed
    assert '    grid = lambda meta: (triton.cdiv(numel, meta["BLOCK_SIZE"]),)\n    vadd_kernel[grid](a, b, c, numel)\n' in t
    assert "BLOCK_SIZE = 64" not in t
    assert c.params["configs"][0] == {"kwargs": {"BLOCK_SIZE": 64}, "num_warps": 4}
    assert t.startswith('"""') and "import os\n" in t
    model = parse_text(t, "python")
    assert model.kernel("vadd_kernel").attributes.get("autotune")


def test_autotune_warps_only_when_block_is_computed(cand):
    (c,) = cand("triton.autotune", "softmax_rows.py", "row_softmax_kernel")
    assert all(cfg["kwargs"] == {} for cfg in c.params["configs"])
    assert "BLOCK_SIZE=BLOCK_SIZE," in c.new_text and "num_warps=1" not in c.new_text.split("def softmax")[1]


def test_autotune_refusals(refuse):
    why = refuse("triton.autotune", "matmul_autotune.py", "mm_kernel")
    assert "already under @triton.autotune" in why and "_tile_configs()" in why
    assert "size argument" in refuse("triton.autotune", "tri_scale.py", "copy_exact")


def test_grouped_ordering_2d_and_1d(cand, refuse):
    cs = cand("triton.grouped_ordering", "matmul_autotune.py", "mm_kernel")
    assert {c.params["group_m"] for c in cs} == {8, 4}
    assert "pid_m = htam_first_m + ((htam_pid % htam_group) % htam_group_m)" in cs[0].new_text
    cs = cand("triton.grouped_ordering", "tri_matmul.py", "matmul_1d")
    assert "htam_group_m = tl.minimum(num_pid_m - htam_first_m, 8)" in cs[0].new_text
    assert "not a 2-D tiled kernel" in refuse("triton.grouped_ordering", VADD, "vadd_kernel")


def test_cache_hints_only_streaming_loads(cand, refuse):
    cs = cand("triton.cache_hints", "bias_gelu_fused.py", "bias_gelu_residual_kernel")
    t = cs[0].new_text
    assert 'tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first")' in t
    assert "tl.load(bias_ptr + col, mask=mask, other=0.0)" in t  # bias is shared across rows: no hint
    assert '.cg"' in cs[1].new_text
    assert "no streaming load" in refuse("triton.cache_hints", "matmul_autotune.py", "mm_kernel")


def test_divisibility_hints(cand, refuse):
    (c,) = cand("triton.divisibility_hints", "tri_scale.py", "scale_shift")
    assert "    offsets = tl.max_contiguous(tl.multiple_of(offsets, BLOCK), BLOCK)\n" in c.new_text
    (c,) = cand("triton.divisibility_hints", "tri_matmul.py", "matmul_2d")
    assert c.params["offsets"] == ["offs_m", "offs_n"]
    assert "provable" in refuse("triton.divisibility_hints", "softmax_rows.py", "row_softmax_kernel")


def test_warps_proposed_nearest_to_the_tutorial_choice(cand):
    from htam_core.transforms.triton_launch import preferred_warps

    assert [preferred_warps(b) for b in (None, 64, 1024, 2048, 4096, 16384)] == [4, 4, 4, 8, 16, 16]
    cs = cand("triton.warps_stages", VADD, "vadd_kernel")  # BLOCK_SIZE 64: 4 warps preferred, 4 is current;
    # more than 64 threads would replicate the 64-element tile: 8 and 16 warps are not proposed
    assert [c.params["num_warps"] for c in cs if "num_warps" in c.params] == [2, 1]


_TWO_AXES = '''import triton
import triton.language as tl


@triton.jit
def up_proj(x_ptr, w_ptr, y_ptr, N, K: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(axis=1)
    k = tl.arange(0, K)
    n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + pid_m * K + k)
    w = tl.load(w_ptr + n[:, None] * K + k[None, :])
    y = tl.sum(w * x[None, :], axis=1)
    tl.store(y_ptr + pid_m * N + n, y)
'''


def test_cache_hints_skip_a_load_other_programs_read_again():
    # a load indexed by pid_m only, in a grid that also has pid_n, is read by every N-tile program: evicting it
    # first would throw away what the next program reads; w is indexed by pid_n only, read again along pid_m
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    m = parse_text(_TWO_AXES, "python", "up.py")
    res = registry.propose("triton.cache_hints", m, m.kernel("up_proj"))
    assert isinstance(res, NotApplicable) and "some program axes only" in res.reason, res


def test_cache_hints_take_a_load_every_program_axis_indexes():
    from htam_core.transforms import registry

    text = _TWO_AXES.replace("x = tl.load(x_ptr + pid_m * K + k)", "x = tl.load(x_ptr + (pid_m * N + n) * K)")
    text = text.replace("w = tl.load(w_ptr + n[:, None] * K + k[None, :])",
                        "w = tl.load(w_ptr + n[:, None] * K + k[None, :] + pid_m)")
    m = parse_text(text, "python", "up.py")
    cs = registry.propose("triton.cache_hints", m, m.kernel("up_proj"))
    assert isinstance(cs, list) and len(cs) == 2, cs
    assert all(c.new_text.count("evict_first") + c.new_text.count('".cg"') == 2 for c in cs)


_BATCH_AXES = '''import triton
import triton.language as tl


@triton.jit
def scores(q_ptr, k_ptr, o_ptr, L, D: tl.constexpr, BLOCK: tl.constexpr):
    pid_bh = tl.program_id(0)
    pid_m = tl.program_id(1)
    rows = pid_m * BLOCK + tl.arange(0, BLOCK)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + pid_bh * L * D + rows[:, None] * D + d[None, :])
    k = tl.load(k_ptr + pid_bh * L * D + d[:, None] + rows[None, :] * D)
    s = tl.dot(q, k)
    tl.store(o_ptr + pid_bh * L * L + rows[:, None] * L + rows[None, :], s)
'''


def test_grouped_ordering_refused_when_every_load_shares_the_batch_axis():
    # axis 0 is batch x head: programs of different heads share no operand, so grouping them brings no L2 reuse
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    m = parse_text(_BATCH_AXES, "python", "att.py")
    res = registry.propose("triton.grouped_ordering", m, m.kernel("scores"))
    assert isinstance(res, NotApplicable) and "no operand is shared" in res.reason, res


def test_grouped_ordering_takes_the_tile_axes_of_a_3d_grid_not_the_batch_axis(cand):
    """Regression (read on a public attention kernel): on a grid (batch x head, row tiles, column tiles) the step
    grouped the batch axis with the row tiles, because a mask tile indexed by rows alone made them look like two
    operands; only the dot's operands count, so the row and column tile axes (1, 2) are grouped."""
    cs = cand("triton.grouped_ordering", "tri_heads_qk.py", "heads_qk")
    t = cs[0].new_text
    assert "htam_pid = tl.program_id(2) * tl.num_programs(1) + tl.program_id(1)" in t
    assert "bh = tl.program_id(0)" in t and "tm = htam_first_m +" in t and "tn = (htam_pid %" in t
