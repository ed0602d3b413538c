"""GPU profiles on a real device (marked gpu: skipped without CUDA).

Run on the H200: ``pytest -m gpu tests/profile/test_gpu.py -s``. When ``HTAM_GPU_RESULTS`` names a
file, every measured profile is appended to it as a JSON line (for bench/results/).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from htam_core.harness import find_harness
from htam_core.measure.stats import spread_pct
from htam_core.profile.errors import ProfileError
from htam_core.profile.gpu import profile_on_gpu
from htam_core.profile.ncu import find_ncu

pytestmark = pytest.mark.gpu
FIX = Path(__file__).resolve().parents[1] / "fixtures"
G = FIX / "gpu"


def record(name, p, seconds):
    out = os.environ.get("HTAM_GPU_RESULTS")
    d = p.to_json()
    print(f"\n{name}: {seconds:.2f} s  time_ms={d['time_ms']} bw={d['bandwidth_bytes_per_s']} "
          f"roofline={d['roofline_fraction']} sol={d['sol']} occ={d['achieved_occupancy']} "
          f"class={d['bottleneck']['class']} warnings={d['warnings']}")
    if out:
        with open(out, "a") as fh:
            fh.write(json.dumps({"test": name, "wall_s": round(seconds, 3), "profile": d,
                                 "date": time.strftime("%Y-%m-%d")}) + "\n")


def prof(path, kernel, name, harness=None, **kw):
    t0 = time.perf_counter()
    p = profile_on_gpu(path, kernel, harness=harness, **kw)
    record(name, p, time.perf_counter() - t0)
    assert p.mode == "gpu" and p.time_ms is not None and p.time_ms.min <= p.time_ms.median <= p.time_ms.max
    return p


def test_vector_add_tiny_vs_good_block():
    h = find_harness(G / "vadd.py", "vadd_kernel")
    h.kwargs = {"BLOCK": 32}
    tiny = prof(G / "vadd.py", "vadd_kernel", "vadd_block32", harness=h, use_ncu=False)
    h.kwargs = {"BLOCK": 1024}
    good = prof(G / "vadd.py", "vadd_kernel", "vadd_block1024", harness=h, use_ncu=True)
    assert tiny.extra["correctness"]["correct"] and good.extra["correctness"]["correct"]
    assert tiny.time_ms.median > 1.5 * good.time_ms.median
    assert good.bandwidth_bytes_per_s > 1e12 and 0.3 < good.roofline_fraction < 1.3
    assert len(good.extra["timing"]["per_set"]) == 2
    if find_ncu():
        assert good.sol is not None and good.achieved_occupancy is not None


def test_naive_vs_tiled_matmul_raw_cuda():
    naive = prof(G / "kernels.cu", "matmul_naive", "matmul_naive", use_ncu=True)
    tiled = prof(G / "kernels.cu", "matmul_tiled", "matmul_tiled", use_ncu=False)
    assert naive.extra["correctness"]["correct"], naive.extra["correctness"]
    assert tiled.extra["correctness"]["correct"], tiled.extra["correctness"]
    assert tiled.time_ms.median < naive.time_ms.median
    assert naive.flops_per_s and naive.roofline_fraction is not None


def test_naive_transpose():
    p = prof(G / "kernels.cu", "transpose_naive", "transpose_naive", use_ncu=True)
    assert p.extra["correctness"]["correct"] and p.bandwidth_bytes_per_s


def test_cu_program_with_main_under_ncu():
    if find_ncu() is None:
        pytest.skip("ncu not on PATH")
    p = prof(G / "vadd_main.cu", "vadd_main_kernel", "vadd_main_cu", use_ncu=True)
    # main() is read for the launch (an inferred harness, checked against the starting kernel)
    assert p.harness == "inferred" and p.extra["correctness"]["correct"] and p.sol is not None


def test_kernelbench_triton_pair():
    p = prof(FIX / "harness" / "kb" / "kb_tri.py", "relu_plus_one", "kernelbench_triton", use_ncu=False)
    assert p.harness == "kernelbench" and p.extra["correctness"]["correct"]


def test_kernelbench_load_inline_pair_cached_build():
    t0 = time.perf_counter()
    p = prof(FIX / "corpus" / "kb_swish.py", "swish_fwd_kernel", "kernelbench_load_inline_first", use_ncu=False,
             timeout_s=600)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    prof(FIX / "corpus" / "kb_swish.py", "swish_fwd_kernel", "kernelbench_load_inline_warm", use_ncu=False)
    warm = time.perf_counter() - t0
    assert p.extra["correctness"]["correct"], p.extra["correctness"]
    print(f"\nload_inline first profile {first:.1f} s, warm {warm:.1f} s")


def test_illegal_address_is_reported_and_next_profile_works():
    with pytest.raises(ProfileError, match="cuda-fault|crash"):
        profile_on_gpu(G / "kernels.cu", "illegal_write", use_ncu=False)
    p = prof(G / "kernels.cu", "transpose_naive", "after_fault", use_ncu=False)
    assert p.extra["correctness"]["correct"]


def test_timing_repeatability_and_warm_profile_cost():
    h = find_harness(G / "vadd.py", "vadd_kernel")
    runs = []
    for _ in range(2):
        t0 = time.perf_counter()
        p = profile_on_gpu(G / "vadd.py", "vadd_kernel", harness=h, use_ncu=False)
        runs.append((p.time_ms.median, time.perf_counter() - t0))
    spread = spread_pct(runs[0][0], runs[1][0])
    t0 = time.perf_counter()
    profile_on_gpu(G / "kernels.cu", "matmul_tiled", use_ncu=False)
    cu_warm = time.perf_counter() - t0
    out = os.environ.get("HTAM_GPU_RESULTS")
    row = {"test": "repeatability", "median_ms": [r[0] for r in runs], "spread_pct": spread,
           "warm_profile_s": {"triton": runs[1][1], "raw_cuda": cu_warm}, "date": time.strftime("%Y-%m-%d")}
    print("\n", row)
    if out:
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
    assert spread < 10.0
