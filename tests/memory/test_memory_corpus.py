"""On the corpus kernels (features from the real source loader, constructed profile states) the top
suggestions differ by bottleneck and make sense for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory import Ranker, load_knowledge, state_from_profile
from htam_core.types.profile import Bottleneck, Profile

source = pytest.importorskip("htam_core.source")
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
KB = load_knowledge()


def _kernel(file: str, name: str):
    return source.load(CORPUS / file).kernel(name)


def _suggest(file: str, name: str, cls: str, top: int = 5, **profile_kw):
    k = _kernel(file, name)
    profile = Profile(name, bottleneck=Bottleneck(cls), **profile_kw)
    return Ranker(KB, None).rank(state_from_profile(profile), [], k.features, k.language, profile, top=top,
                                 kernel=k)


def test_memory_bound_elementwise_gets_memory_access_or_launch_steps() -> None:
    for file, name in [("vector_add_small_block.py", "vadd_kernel"), ("kb_swish.py", "swish_fwd_kernel"),
                       ("broken_partial_kernels.cu", "axpby")]:
        steps = _suggest(file, name, "memory-bound", top=3)
        assert steps and all(s.direction in ("memory_access", "launch_configuration") for s in steps), (
            name, [(s.direction, s.strategy) for s in steps])
        assert not any(s.direction == "data_reuse" for s in _suggest(file, name, "memory-bound", top=40))


def test_naive_matmul_gets_data_reuse_steps() -> None:
    steps = _suggest("sgemm_naive.cu", "sgemm_naive", "memory-bound")
    assert steps[0].direction == "data_reuse"
    # register tiling first: on the naive kernel its transform writes shared tiles plus the register tile, and it
    # does not compose after shared-memory tiling (tests/transforms: test_register_tile_after_smem_tiling_refuses)
    assert steps[0].strategy == "register_blocking" and steps[0].transform == "cuda.register_tile_matmul"
    assert "smem_tiling" in [s.strategy for s in steps]


def test_transpose_tile_only_for_a_transpose() -> None:
    top = [s.strategy for s in _suggest("transpose_naive.cu", "transpose_naive", "memory-bound", top=3)]
    assert "transpose_smem_tile" in top
    everything = [s.strategy for s in _suggest("transpose_naive.cu", "copy_rowmajor", "memory-bound", top=50)]
    assert "transpose_smem_tile" not in everything


def test_languages_never_mix() -> None:
    for file, name in [("sgemm_naive.cu", "sgemm_naive"), ("reduce_sum_smem.cu", "block_sum_interleaved"),
                       ("kb_rowsum.py", "sum_over_dim_kernel")]:
        for s in _suggest(file, name, "unknown", top=50):
            assert "cuda" in KB.strategy(s.strategy).languages
            assert not s.strategy.startswith("triton_") and "tl.dot" not in s.title
    for file, name in [("matmul_autotune.py", "mm_kernel"), ("softmax_rows.py", "row_softmax_kernel")]:
        for s in _suggest(file, name, "unknown", top=50):
            assert "triton" in KB.strategy(s.strategy).languages


def test_no_tiling_without_reuse_and_no_dot_advice_when_dot_is_used() -> None:
    for file, name in [("vector_add_small_block.py", "vadd_kernel"), ("transpose_naive.cu", "transpose_naive"),
                       ("kb_swish.py", "swish_fwd_kernel")]:
        ids = {s.strategy for s in _suggest(file, name, "memory-bound", top=50)}
        assert not ids & {"smem_tiling", "register_blocking", "triton_dot_tiles", "tensor_cores_mma"}
    mm = {s.strategy for s in _suggest("matmul_autotune.py", "mm_kernel", "compute-bound", top=50)}
    assert "triton_dot_tiles" not in mm and "triton_autotune" not in mm  # already tl.dot, already autotuned
    assert "triton_tf32_dot" in mm


def test_bottlenecks_give_different_top_suggestions() -> None:
    cases = {
        "memory-bound": ("vector_add_small_block.py", "vadd_kernel"),
        "latency-bound": ("softmax_row_per_thread.cu", "softmax_row_per_thread"),
        "compute-bound": ("matmul_autotune.py", "mm_kernel"),
        "register-spill": ("bias_gelu_templates.cu", "bias_gelu_fwd"),
    }
    tops = {cls: _suggest(f, k, cls, top=1)[0] for cls, (f, k) in cases.items()}
    assert len({t.strategy for t in tops.values()}) == len(cases)
    assert tops["latency-bound"].direction == "parallel_mapping"
    assert tops["latency-bound"].strategy == "warp_per_row"
    assert tops["compute-bound"].direction == "instruction_throughput"
    # the same kernel under different states moves the launch configuration up or down; its interleaved tree
    # (an analysis fact) keeps sequential addressing, the first textbook step, on top under both
    def launch_rank(cls: str) -> int:
        steps = _suggest("reduce_sum_smem.cu", "block_sum_interleaved", cls, top=20)
        assert steps[0].strategy == "sequential_addressing", [s.strategy for s in steps]
        return next(i for i, s in enumerate(steps) if s.direction == "launch_configuration")

    assert launch_rank("occupancy-limited") < launch_rank("latency-bound")


def test_profile_signals_shift_the_ranking() -> None:
    plain = _suggest("transpose_naive.cu", "transpose_naive", "memory-bound", top=50)
    rules = [{"rule": "UncoalescedGlobalAccess", "message": "", "estimated_speedup_pct": 40}]
    fired = _suggest("transpose_naive.cu", "transpose_naive", "memory-bound", top=50, ncu_rules=rules)
    p = {s.strategy: s.score for s in plain}
    f = {s.strategy: s.score for s in fired}
    assert f["coalesce_thread_mapping"] > p["coalesce_thread_mapping"]
    spilled = _suggest("bias_gelu_templates.cu", "bias_gelu_fwd", "register-spill", top=2, spill_bytes=64)
    assert spilled[0].direction == "launch_configuration"


def test_an_uncoalesced_row_loop_ranks_its_remap_first() -> None:
    """A thread-per-row kernel whose row loop the analysis finds uncoalesced gets the coalescing remap first
    (before a profile, class unknown): one thread per element when the loop carries nothing, one warp per row
    when it reduces; a column walk (already coalesced) gets neither remap."""
    own = CORPUS.parent / "transforms" / "row_flatten_variants.cu"
    k = source.load(own).kernel("embed_rows")
    profile = Profile("embed_rows", bottleneck=Bottleneck("unknown"))
    steps = Ranker(KB, None).rank(state_from_profile(profile), [], k.features, k.language, profile, top=5, kernel=k)
    assert steps[0].strategy == "thread_per_element" and steps[0].transform == "cuda.thread_per_element"
    assert _suggest("softmax_row_per_thread.cu", "softmax_row_per_thread", "unknown")[0].strategy == "warp_per_row"
    col = source.load(own).kernel("col_scale")
    steps = Ranker(KB, None).rank(state_from_profile(profile), [], col.features, col.language, profile, top=40,
                                  kernel=col)
    assert "thread_per_element" not in [s.strategy for s in steps]
