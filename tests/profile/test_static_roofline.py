"""Static classification of kernels with loops: trip counts from the source, FLOPs and bytes,
an arithmetic intensity, and a bottleneck class marked as a static estimate; an unknown trip count is
named, never a bare "unknown"."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.profile.classify import RIDGE_FLOP_PER_BYTE, classify
from htam_core.profile.static_roofline import estimate_work, harness_sizes
from htam_core.source import load, parse_text
from htam_core.types.profile import Profile

HONEST = Path(__file__).resolve().parents[1] / "fixtures" / "honest"
SUITE = Path(__file__).resolve().parents[2] / "bench" / "suite"


def _static(est: dict | None, **kw) -> Profile:
    p = Profile("k", mode="static", device="sm_90 (static)", registers=32, theoretical_occupancy=1.0, **kw)
    if est is not None:
        p.extra["static_roofline"] = est
    return p


def test_cuda_loop_trip_counts_come_from_macros_and_constants_in_main() -> None:
    model = load(HONEST / "row_sum_main.cu")
    est = estimate_work(model, model.kernel("row_sum"))
    assert est is not None and est["unknown"] == []
    assert est["loops"] == [{"line": 11, "trip_count": 1024, "source": "launch site line 36: cols = 1024"}]
    # 1024 iterations of one 4-byte load and one add, then one 4-byte store
    assert est["flops"] == 1024 and est["bytes"] == 1024 * 4 + 4
    b = classify(_static(est), model.kernel("row_sum").features)
    assert b.cls == "memory-bound" and b.evidence[0].startswith("static estimate (roofline): 1.02e+03 FLOP")
    assert "line 11: 1024" in b.evidence[0]


def test_a_compute_heavy_loop_is_compute_bound() -> None:
    model = load(HONEST / "row_sum_main.cu")
    k = model.kernel("poly_eval")
    est = estimate_work(model, k)
    assert est["loops"][0]["trip_count"] == 64 and est["loops"][0]["source"] == "constant"
    assert est["flops"] == 64 * 4 and est["bytes"] == 8  # two multiply-adds per iteration, one load, one store
    b = classify(_static(est), k.features)
    assert b.cls == "compute-bound" and est["intensity"] >= RIDGE_FLOP_PER_BYTE["sm_90"]


def test_an_unknown_trip_count_still_classifies_when_every_value_gives_the_same_class() -> None:
    text = (HONEST / "row_sum_main.cu").read_text().replace("rows, COLS);", "rows, cols_at_runtime);")
    model = parse_text(text, "cuda")
    est = estimate_work(model, model.kernel("row_sum"))
    assert est["intensity"] is None and est["flops"] is None
    assert est["unknown"] == ["trip count of the loop at line 11 (cols: a runtime argument with no constant "
                              "launch-site or harness value)"]
    lo, hi = est["intensity_range"]
    assert 0 < lo <= hi < 1
    b = classify(_static(est), model.kernel("row_sum").features)
    assert b.cls == "memory-bound" and "for any value of the unknown (trip count of the loop at line 11" in \
        b.evidence[0]


def test_triton_rmsnorm_with_loops_gets_a_class() -> None:
    model = load(HONEST / "rmsnorm_fp32.py")
    k = model.kernel("rmsnorm_kernel")
    est = estimate_work(model, k, constexprs={"BLOCK_N": {"value": 1024, "source": "launch site line 30"}})
    assert [lp["trip_count"] for lp in est["loops"]] == [None, None]
    assert "n_cols" in est["unknown"][0]
    assert classify(_static(est), k.features).cls == "memory-bound"
    # a literal row length at the launch site fixes both trip counts: an exact estimate
    text = model.text.replace("x2d.stride(0), n_cols, eps,", "x2d.stride(0), 4096, eps,")
    m2 = parse_text(text, "python")
    est = estimate_work(m2, m2.kernel("rmsnorm_kernel"), constexprs={"BLOCK_N": 1024})
    assert [lp["trip_count"] for lp in est["loops"]] == [4, 4] and est["intensity"] is not None
    assert est["unknown"] == []
    # regression (new-user trial): the counts are per element of the block, not per program ("12 B per program")
    assert est["unit"] == "per element of a program's block"


def test_triton_matmul_takes_k_from_the_harness_and_the_tiles_from_the_constexprs() -> None:
    model = load(SUITE / "matmul_autotune.py")
    k = model.kernel("mm_kernel")
    sizes = harness_sizes(str(SUITE / "matmul_autotune.py"), "mm_kernel", model)
    assert sizes == {"M": 4096, "N": 4096, "K": 4096}
    tiles = {"BM": 128, "BN": 128, "BK": 32}
    est = estimate_work(model, k, constexprs=tiles, sizes=sizes)
    assert est["loops"] == [{"line": 46, "trip_count": 128, "source": "constexpr, harness sizes"}]
    # the dots, plus the `acc +=` on the 128 x 128 tile in each of the 128 iterations
    assert est["flops"] == 2 * 128 * 128 * 4096 + 128 * 128 * 128 and est["intensity"] == pytest.approx(32.0)
    assert est["unit"] == "per program"  # with tl.dot tiles the counts are the whole program's
    assert classify(_static(est), k.features).cls == "compute-bound"
    # without sizes the class depends on K, and the evidence says so
    est = estimate_work(model, k, constexprs=tiles, sizes={})
    b = classify(_static(est), k.features)
    assert b.cls == "unknown"
    assert any("depends on trip count of the loop at line 46 (K: a runtime argument" in e for e in b.evidence)
    # without tile sizes the dot cannot be counted: that is what is unknown
    b = classify(_static(estimate_work(model, k, sizes=sizes)), k.features)
    assert b.cls == "unknown" and any("tile sizes of tl.dot" in e for e in b.evidence)


def test_end_to_end_static_profiles_of_loop_kernels_are_classified(tmp_path: Path) -> None:
    from htam_core.profile.api import profile_kernel
    from htam_core.profile.static_cuda import find_nvcc
    from htam_core.runtime.cache import CompileCache

    cache = CompileCache(tmp_path / "c")
    if find_nvcc() is not None:
        p = profile_kernel(HONEST / "row_sum_main.cu", "row_sum", static=True, cache=cache)
        assert p.bottleneck.cls == "memory-bound" and p.extra["static_roofline"]["flops"] == 1024
    pytest.importorskip("triton")
    p = profile_kernel(HONEST / "rmsnorm_fp32.py", "rmsnorm_kernel", static=True, cache=cache)
    assert p.bottleneck.cls == "memory-bound"
    assert p.bottleneck.evidence[0].startswith("static estimate (roofline)")
