"""Shared-memory and register tiling of batched (``blockIdx.z``) and NT-layout matmuls.

The operands are recognized from the analysis layer's affine indices (stride 1 in k and nonzero in the row
thread for A; stride 1 in the column thread or, NT, stride 1 in k for B; any batch term free of the thread and
k), so inline offsets (``b * M * K + row * K + k``), pointer aliases (``qb = q + bh * T * D``) and an extra batch
bound in the check all match. The structural tests read the facts of the result: B's tile load in the NT form is
coalesced along ``threadIdx.x``, the grid keeps its z component, the blocks become the tile shape. The ``gpu``
tests build the file with nvcc and compare against the original on random ragged sizes.
"""

from __future__ import annotations

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path
from transform_helpers import global_reads as _global_reads

FILE = "matmul_batched_variants.cu"
SMEM, REG = "cuda.smem_tiling_matmul", "cuda.register_tile_matmul"


def test_batched_nn_smem_tiles_keep_the_batch_offset_and_z_grid(cand):
    cs = cand(SMEM, FILE, "bmm_nn")
    assert [c.params["tile"] for c in cs] == [16, 32] and all(c.params["batched"] for c in cs)
    f = _facts(cs[0].new_text, "bmm_nn")
    (a,) = _global_reads(f, "A")
    (b,) = _global_reads(f, "B")
    for acc in (a, b):
        assert acc.coalesced("x") is True  # both tile loads walk memory along threadIdx.x
        assert acc.stride("blockIdx.z") != 0  # the batch offset is kept
    launch = next(la for la in f.launches if la.host == "run_bmm_nn")
    assert launch.block_shape == (16, 16, 1) and launch.grid[2].text == "batch"
    assert {s.space for s in f.accesses} == {"global", "shared"}


def test_nt_attention_scores_load_k_coalesced_through_a_padded_tile(cand):
    original = _facts(fixture_path(FILE).read_text(), "attn_scores")
    (kread,) = _global_reads(original, "k")
    assert kread.coalesced("x") is False  # k[j * D + d]: consecutive j are D apart
    cs = cand(SMEM, FILE, "attn_scores")
    assert [c.params["tile"] for c in cs] == [16, 32] and cs[1].params["layout"] == "NT"
    text = cs[1].new_text  # the launch's own 32x32 block
    assert "__shared__ float htam_Bs[32][32 + 1];" in text
    (kread,) = _global_reads(_facts(text, "attn_scores"), "k")
    assert kread.coalesced("x") is True and kread.stride("threadIdx.y") != 0
    assert "const float *kb = k + (size_t)bh * T * D;" in text  # the alias moves out of the bounds check


def test_extra_batch_bound_guards_the_tile_loads(cand):
    # dim3(16, 16, 1) is a 2-D block (z = 1 does not count), so the 32 tile retunes it too, batch kept
    c, c32 = cand(SMEM, FILE, "bmm_guarded")
    assert "dim3((N + 31) / 32, (M + 31) / 32, batch), dim3(32, 32, 1)" in c32.new_text
    assert c.new_text.count("z < batch") == 3  # A and B tile loads, and the original check
    f = _facts(c.new_text, "bmm_guarded")
    assert next(iter(f.launches)).block_shape == (16, 16, 1)


def test_register_tiles_on_batched_and_nt(cand):
    big, _small = cand(REG, FILE, "attn_scores")
    assert big.params["layout"] == "NT" and big.params["batched"]
    f = _facts(big.new_text, "attn_scores")
    launch = f.launches[0]
    assert launch.block_shape == (256, 1, 1) and len(launch.grid) == 3 and launch.grid[2].text == "BH"
    (kread,) = _global_reads(f, "k")
    assert kread.stride("blockIdx.z") != 0


def test_a_rectangular_block_is_retuned_to_the_tile(cand):
    cs = cand(SMEM, FILE, "mm_rect")
    assert [c.params["tile"] for c in cs] == [16, 32] and not cs[0].params["batched"]
    for c, t in zip(cs, (16, 32), strict=True):
        la = next(la for la in _facts(c.new_text, "mm_rect").launches if la.host == "run_mm_rect")
        assert la.block_shape == (t, t, 1)
        assert [d.text for d in la.grid] == [f"(N + {t - 1}) / {t}", f"(M + {t - 1}) / {t}"]  # the grid follows


@pytest.mark.parametrize("tid", [SMEM, REG])
def test_a_load_before_the_k_loop_is_refused(refuse, tid):
    assert "cannot move out of the bounds check" in refuse(tid, FILE, "bmm_bias")


@pytest.mark.gpu
@pytest.mark.parametrize("tid", [SMEM, REG])
@pytest.mark.parametrize(("kernel", "call"), [
    ("bmm_nn", "run_bmm_nn(A, B, C, batch, M, N, K)"),
    ("bmm_guarded", "run_bmm_guarded(A, B, C, batch, M, N, K)"),
    ("attn_scores", "run_attn_scores(A, B, C, batch, M, K, 0.125f)"),
    ("mm_rect", "run_mm_rect(A, B, C, batch, M, N, K)"),
])
def test_equivalence_on_gpu(tid, kernel, call, tmp_path, cand):
    torch = torch_cuda()
    sig = "const float *A, const float *B, float *C, int batch, int M, int N, int K"
    batch, M, N, K = 1 if kernel == "mm_rect" else 3, 77, 77 if kernel == "attn_scores" else 45, 53
    g = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(batch, M, K, device="cuda", generator=g)
    B = torch.randn(batch, N if kernel == "attn_scores" else K, K if kernel == "attn_scores" else N,
                    device="cuda", generator=g)
    outs = []
    for i, text in enumerate([fixture_path(FILE).read_text(), cand(tid, FILE, kernel)[-1].new_text]):
        C = torch.full((batch, M, N), float("nan"), device="cuda")
        call_host(text, sig, call, [A, B, C, batch, M, N, K], tmp_path, f"v{i}")
        outs.append(C)
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-4, atol=1e-4)
