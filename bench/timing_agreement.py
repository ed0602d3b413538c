"""Timer agreement: htam's timer against CUPTI and ``triton.testing.do_bench_cudagraph``, on real kernels.

For each kernel (Triton, CUDA through CuPy RawKernel and through a ``.cu`` host launcher, and torch launchers
that allocate their outputs; from about 3 µs to about 50 ms) and each of three runs in one process:

* ``timer``: :func:`htam_core.measure.timer.time_launcher` (median, cold L2 every trial), with its method,
  minus the calibrated event overhead of its method (:mod:`htam_core.measure.calibrate`);
* ``raw``: the same median before the subtraction (``timer + overhead``);
* ``cupti``: CUPTI's per-call device time under the same flush sequence (the timer's cross-check);
* ``cupti_hot``: CUPTI's per-call device time of back-to-back calls without a flush (warm L2);
* ``do_bench_cudagraph``: Triton's graph-replay benchmark (median; warm L2, as Triton runs it);
* ``timer_around``: for graph-timed kernels, the same graph timed with the events recorded around the
  replay instead of inside the graph (shows the graph launch latency the default leaves out);
* ``under profiler`` (first run only): the raw event median of the same timer while ``torch.profiler`` records
  CUPTI activity, against the raw median without it (does attaching the profiler change the kernel?).

Before the kernels, a probe records both methods' calibrations and the interval of an empty event pair inside a
graph (no kernel between the events), to show where the overhead sits.

Reported per kernel: the medians over the runs, the timer against CUPTI (target: within 3 % for every kernel
of 5 µs or more), and the run-to-run spread of the timer, ``(max - min) / median`` of the three run medians
(target: median over kernels <= 1 %). Writes ``timing_agreement.json`` and ``timing_agreement.md`` (device,
date, command) into ``--out``. Without a GPU it says so and exits 0.

Diagnostic (``--diagnose auto``, before the runs): the kernels that missed the target on the H200 (a CuPy saxpy
at 1M and 64M elements and a ``.cu`` vector add, all the same in-place CUDA kernel, the timer 4-7 % below
CUPTI) and two controls (the same kernel out of place, a Triton vector add), timed every way: graph replay with
the flush outside and inside the graph and without a flush, eager events, ``do_bench``,
``do_bench_cudagraph``, CUPTI back to back, CUPTI with a host sync per call, CUPTI warm, and the timer's own
trials while the profiler records with CUPTI's time of those trials (see :func:`diagnose_one`). In the v2
table the ``prof`` column of exactly those kernels was +5 to +6 %: attaching the profiler slows the kernel
itself, and the timer's events under the profiler, minus the overhead, match CUPTI within 1 % (64M saxpy
0.2505 vs 0.2517 ms, ``.cu`` vector add 0.0656 vs 0.0652 ms), while the timer without the profiler matches
``do_bench_cudagraph`` (0.2357 vs 0.2361 ms). So CUPTI there times a kernel slowed by the profiler; the
``same trials`` column compares like with like. The diagnostic settles it in one GPU run.

Budget: ``--max-seconds`` (200): no kernel run starts that would end past it; the table is written after every
kernel, so a stopped run keeps what it measured.

Usage: ``PYTHONPATH=. python3 bench/timing_agreement.py --out bench/results/timing-agreement``
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Agreement target with CUPTI for kernels of at least MIN_TARGET_MS.
TARGET_REL = 0.03
MIN_TARGET_MS = 0.005
#: Target for the median run-to-run spread, percent.
TARGET_SPREAD_PCT = 1.0

CUDA_SRC = r"""
extern "C" __global__ void saxpy(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void saxpy_out(const float* __restrict__ x, const float* __restrict__ y,
                                     float* __restrict__ z, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + y[i];
}
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < n) out[x * n + y] = in[y * n + x];
}
extern "C" __global__ void sgemm_naive(const float* A, const float* B, float* C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}
"""

HOST_SRC = CUDA_SRC + r"""
extern "C" void vadd_host(const float* x, float* y, int n) {
    saxpy<<<(n + 255) / 256, 256>>>(x, y, 1.0f, n);
}
extern "C" void sgemm_host(const float* A, const float* B, float* C, int n) {
    dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
    sgemm_naive<<<grid, block>>>(A, B, C, n);
}
"""


def _triton_kernels() -> dict[str, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    @triton.jit
    def rmsnorm_kernel(x, w, out, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < N
        v = tl.load(x + row * N + offs, mask=m, other=0.0)
        r = tl.rsqrt(tl.sum(v * v, axis=0) / N + eps)
        tl.store(out + row * N + offs, v * r * tl.load(w + offs, mask=m), mask=m)

    @triton.jit
    def softmax_kernel(x, out, N, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < N
        v = tl.load(x + row * N + offs, mask=m, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(out + row * N + offs, e / tl.sum(e, axis=0), mask=m)

    @triton.jit
    def swiglu_kernel(a, b, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(a + offs, mask=m)
        tl.store(out + offs, x * tl.sigmoid(x) * tl.load(b + offs, mask=m), mask=m)

    @triton.jit
    def matmul_kernel(a, b, c, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc += tl.dot(tl.load(a + rm[:, None] * sam + (k + rk)[None, :]),
                          tl.load(b + (k + rk)[:, None] * sbk + rn[None, :]))
        tl.store(c + rm[:, None] * scm + rn[None, :], acc.to(tl.float16))

    return {"add": add_kernel, "rmsnorm": rmsnorm_kernel, "softmax": softmax_kernel, "swiglu": swiglu_kernel,
            "matmul": matmul_kernel, "cdiv": triton.cdiv, "pow2": triton.next_power_of_2}


def _keep(fn: Callable[[], Any], *tensors: Any) -> Callable[[], Any]:
    """``fn`` holding references to ``tensors``: a host launcher bound to raw device pointers must keep its
    tensors alive (a graph capture empties torch's allocator cache, which would unmap freed blocks)."""
    def launch() -> Any:
        return fn()
    launch.tensors = tensors  # type: ignore[attr-defined]
    return launch


def kernels(tmp: Path) -> list[dict[str, Any]]:
    """The kernels: ``{"name", "language", "launcher", "allocates", "fn"}`` (``fn`` a no-argument launcher)."""
    import cupy
    import torch

    from htam_core.harness.cu_launcher import host_launcher

    tk = _triton_kernels()
    cdiv, pow2 = tk["cdiv"], tk["pow2"]
    dev = "cuda"
    out: list[dict[str, Any]] = []

    def add(name: str, language: str, launcher: str, allocates: bool, fn: Callable[[], Any]) -> None:
        out.append({"name": name, "language": language, "launcher": launcher, "allocates": allocates, "fn": fn})

    # -- Triton -------------------------------------------------------------------------------------
    for n, alloc in ((1 << 16, True), (1 << 20, False), (1 << 24, True), (1 << 26, False)):
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        o = torch.empty_like(x)

        def vadd(x=x, y=y, o=o, n=n, alloc=alloc):
            dst = torch.empty_like(x) if alloc else o
            tk["add"][(cdiv(n, 1024),)](x, y, dst, n, BLOCK=1024)
            return dst
        add(f"triton vector add {n} fp32" + (" (allocates)" if alloc else ""), "triton", "python", alloc, vadd)
    for rows, cols, alloc in ((4096, 1000, True), (8192, 4096, False)):
        x, w = torch.randn(rows, cols, device=dev), torch.randn(cols, device=dev)
        o = torch.empty_like(x)

        def rms(x=x, w=w, o=o, rows=rows, cols=cols, alloc=alloc):
            dst = torch.empty_like(x) if alloc else o
            tk["rmsnorm"][(rows,)](x, w, dst, cols, 1e-6, BLOCK=pow2(cols))
            return dst
        add(f"triton RMSNorm {rows}x{cols} fp32" + (" (allocates)" if alloc else ""), "triton", "python", alloc, rms)
    for rows, cols, alloc in ((256, 4099, False), (8192, 8192, True)):
        x = torch.randn(rows, cols, device=dev)
        o = torch.empty_like(x)

        def smax(x=x, o=o, rows=rows, cols=cols, alloc=alloc):
            dst = torch.empty_like(x) if alloc else o
            tk["softmax"][(rows,)](x, dst, cols, BLOCK=pow2(cols), num_warps=8)
            return dst
        add(f"triton softmax {rows}x{cols} fp32" + (" (allocates)" if alloc else ""), "triton", "python", alloc,
            smax)
    a, b = torch.randn(8192, 11008, device=dev), torch.randn(8192, 11008, device=dev)

    def swiglu(a=a, b=b):
        dst = torch.empty_like(a)
        tk["swiglu"][(cdiv(a.numel(), 1024),)](a, b, dst, a.numel(), BLOCK=1024)
        return dst
    add("triton SwiGLU 8192x11008 fp32 (allocates)", "triton", "python", True, swiglu)
    ma, mb = torch.randn(4096, 4096, device=dev, dtype=torch.float16), torch.randn(4096, 4096, device=dev,
                                                                                  dtype=torch.float16)

    def mm(ma=ma, mb=mb):
        c = torch.empty(4096, 4096, device=dev, dtype=torch.float16)
        tk["matmul"][(32, 32)](ma, mb, c, 4096, 4096, 4096, 4096, BM=128, BN=128, BK=32, num_warps=8, num_stages=3)
        return c
    add("triton matmul 4096^3 fp16 (allocates)", "triton", "python", True, mm)

    # -- CUDA through CuPy RawKernel (the harness's "cupy" kind: launched on torch's current stream) -----
    mod = cupy.RawModule(code=CUDA_SRC, options=("-std=c++17",))
    saxpy, transpose, sgemm = (mod.get_function(k) for k in ("saxpy", "transpose_naive", "sgemm_naive"))

    def cupy_launch(func, grid, block, args):
        def launch():
            with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                func(grid, block, args)
        return launch

    import numpy as np

    for n in (1 << 20, 1 << 26):
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        add(f"cuda saxpy {n} fp32 (cupy)", "cuda", "cupy", False,
            cupy_launch(saxpy, (cdiv(n, 256),), (256,), (cupy.asarray(x), cupy.asarray(y), np.float32(0.5),
                                                         np.int32(n))))
    n = 1 << 26  # diagnostic only (DIAGNOSTIC_ONLY): the same kernel out of place, a control for the in-place one
    x, y, z = torch.randn(n, device=dev), torch.randn(n, device=dev), torch.empty(n, device=dev)
    add(f"cuda saxpy out-of-place {n} fp32 (cupy)", "cuda", "cupy", False,
        cupy_launch(mod.get_function("saxpy_out"), (cdiv(n, 256),), (256,),
                    (cupy.asarray(x), cupy.asarray(y), cupy.asarray(z), np.float32(0.5), np.int32(n))))
    n = 8192
    t_in, t_out = torch.randn(n, n, device=dev), torch.empty(n, n, device=dev)
    add(f"cuda naive transpose {n}x{n} fp32 (cupy)", "cuda", "cupy", False,
        cupy_launch(transpose, (n // 16, n // 16), (16, 16), (cupy.asarray(t_in), cupy.asarray(t_out), np.int32(n))))
    for n in (2048, 4096):
        A, B, C = (torch.randn(n, n, device=dev) for _ in range(3))
        add(f"cuda naive sgemm {n}^3 fp32 (cupy)", "cuda", "cupy", False,
            cupy_launch(sgemm, (n // 16, n // 16), (16, 16), (cupy.asarray(A), cupy.asarray(B), cupy.asarray(C),
                                                               np.int32(n))))

    # -- torch launchers that allocate their outputs (cuBLAS, torch's own CUDA kernels) ------------------
    ba, bb = (torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) for _ in range(2))
    add("torch matmul 8192^3 bf16 (cuBLAS, allocates)", "cuda", "python", True, lambda: ba @ bb)
    sx = torch.randn(256, 4099, device=dev)
    add("torch softmax 256x4099 fp32 (allocates)", "cuda", "python", True, lambda: torch.softmax(sx, -1))
    # -- CUDA through a .cu host launcher (<<<...>>> on the legacy default stream); last, since a fault there
    # (a sticky CUDA error) would end every kernel after it --------------------------------------------
    cu = tmp / "timing_host.cu"
    cu.write_text(HOST_SRC, encoding="utf-8")
    major, minor = torch.cuda.get_device_capability()
    n = 1 << 24
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    bind = host_launcher(cu, "vadd_host", f"sm_{major}{minor}", [None, None, "int32"])
    add(f"cuda vector add {n} fp32 (.cu host launcher)", "cuda", "cu-host-launcher", False,
        _keep(bind([x, y, n]), x, y))
    n = 1024
    A, B, C = (torch.randn(n, n, device=dev) for _ in range(3))
    bind = host_launcher(cu, "sgemm_host", f"sm_{major}{minor}", [None, None, None, "int32"])
    add(f"cuda naive sgemm {n}^3 fp32 (.cu host launcher)", "cuda", "cu-host-launcher", False,
        _keep(bind([A, B, C, n]), A, B, C))

    return out


def _do_bench_cudagraph(fn: Callable[[], Any]) -> float | None:
    import torch
    import triton.testing

    with torch.cuda.stream(torch.cuda.Stream()):
        return float(triton.testing.do_bench_cudagraph(fn, rep=20, return_mode="median"))


def _cupti_hot(fn: Callable[[], Any]) -> float | None:
    from htam_core.measure import cupti

    ops = cupti.device_ops([fn] * 5)
    per = cupti.per_call_ms(ops, 5, 0)
    return statistics.median(per) if per else None


def probe() -> dict[str, Any]:
    """Both methods' event calibrations, and an empty event pair inside a graph (ms)."""
    import torch

    from htam_core.measure import calibrate
    from htam_core.measure.timer import flush_l2

    out: dict[str, Any] = {"null_numel": calibrate.null_numel()}
    for method in ("cuda-graph", "events-async-flush"):
        for suffix, numel in (("", None), (" one-block", 1)):
            c = calibrate.calibrate(method, numel=numel)
            out[method + suffix] = {"overhead_ms": c.overhead_ms, "null_event_ms": c.event_ms,
                                    "null_cupti_ms": c.kernel_ms, "note": c.note, "described": calibrate.describe(c)}
    s, e = torch.cuda.Event(enable_timing=True, external=True), torch.cuda.Event(enable_timing=True, external=True)
    g, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(g, stream=side):
        s.record()
        e.record()
    torch.cuda.synchronize()
    xs = []
    for _ in range(200):
        flush_l2()
        g.replay()
        e.synchronize()
        xs.append(s.elapsed_time(e))
    g.reset()
    out["empty_pair_in_graph_ms"] = statistics.median(xs)
    return out


def _under_profiler(lt: Any, n: int) -> tuple[float, float, float | None]:
    """Raw event medians of ``lt`` without and with ``torch.profiler`` recording CUDA activity, and CUPTI's median
    per-trial device time of the *same* trials recorded with the profiler (``None`` when they do not split into
    trials): the like-for-like comparison, since attaching the profiler can itself slow a kernel down."""
    from htam_core.measure import cupti
    from htam_core.measure.flush import flush_ops

    plain = statistics.median(lt.sample(n, raw=True))
    nf = flush_ops() if lt.flush else 0
    box: list[float] = []
    ops = cupti.device_ops([lambda: box.extend(lt.sample(n, raw=True))])
    per = cupti.per_call_ms(ops, n, nf)
    return plain, statistics.median(box), (statistics.median(per) if per else None)


def one_run(k: dict[str, Any], first: bool = False) -> dict[str, Any]:
    """One run of one kernel: timer (with its CUPTI cross-check), CUPTI warm, do_bench_cudagraph; in the
    ``first`` run also the raw timer with and without the profiler attached."""
    from htam_core.measure.timer import LauncherTimer, time_launcher

    t = time_launcher(k["fn"], trials=100, launcher_kind=k["launcher"], max_total_s=1.5)
    row = {"timer_ms": t.median_ms, "timer_raw_ms": t.median_ms + t.event_overhead_ms,
           "event_overhead_ms": t.event_overhead_ms, "event_overhead": t.event_overhead,
           "method": t.method, "method_reason": t.method_reason, "trials": t.trials,
           "trial_spread_iqr": t.spread, "cupti_ms": t.cupti_ms, "cupti_ops": t.cupti_ops,
           "agreement": t.agreement, "refused": t.refused, "warnings": t.warnings}
    if first:
        lt = LauncherTimer(k["fn"], launcher_kind=k["launcher"], use_cupti=False)
        try:
            row["raw_plain_ms"], row["raw_under_profiler_ms"], row["cupti_same_trials_ms"] = _under_profiler(
                lt, max(5, min(t.trials, 30)))
        finally:
            lt.close()
    if t.method == "cuda-graph":  # the same graph with the events recorded around the replay, for comparison
        lt = LauncherTimer(k["fn"], launcher_kind=k["launcher"], use_cupti=False, events_in_graph=False)
        try:
            row["timer_around_ms"] = statistics.median(lt.sample(min(t.trials, 50), raw=True))
        finally:
            lt.close()
    try:
        row["cupti_hot_ms"] = _cupti_hot(k["fn"])
    except Exception as exc:  # noqa: BLE001 - a bench row says what failed and goes on
        row["cupti_hot_ms"], row["cupti_hot_error"] = None, str(exc)[:300]
    try:
        row["do_bench_cudagraph_ms"] = _do_bench_cudagraph(k["fn"])
    except Exception as exc:  # noqa: BLE001
        row["do_bench_cudagraph_ms"], row["do_bench_cudagraph_error"] = None, str(exc)[:300]
    return row


def summarize(name: str, meta: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the runs, the agreement with CUPTI and the run-to-run spread of one kernel."""
    def med(key: str) -> float | None:
        xs = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(xs) if xs else None

    timer, cupti_ms = med("timer_ms"), med("cupti_ms")
    raw = med("timer_raw_ms")
    ts = [r["timer_ms"] for r in runs if r.get("timer_ms")]
    spread = (max(ts) - min(ts)) / statistics.median(ts) * 100.0 if len(ts) > 1 else None
    rel = (timer / cupti_ms - 1.0) if timer and cupti_ms else None
    in_scope = cupti_ms is not None and cupti_ms >= MIN_TARGET_MS
    return {"kernel": name, **meta, "timer_ms": timer, "cupti_ms": cupti_ms, "cupti_hot_ms": med("cupti_hot_ms"),
            "do_bench_cudagraph_ms": med("do_bench_cudagraph_ms"), "timer_around_ms": med("timer_around_ms"),
            "timer_vs_cupti": rel, "timer_raw_ms": raw, "event_overhead_ms": med("event_overhead_ms"),
            "raw_vs_cupti": (raw / cupti_ms - 1.0) if raw and cupti_ms else None,
            "raw_plain_ms": med("raw_plain_ms"), "raw_under_profiler_ms": med("raw_under_profiler_ms"),
            "cupti_same_trials_ms": med("cupti_same_trials_ms"),
            "same_trials_vs_cupti": _same_rel(med("raw_under_profiler_ms"), med("event_overhead_ms"),
                                              med("cupti_same_trials_ms")),
            "methods": sorted({r["method"] for r in runs}), "run_spread_pct": spread,
            "refused_runs": sum(1 for r in runs if r.get("refused")),
            "target_in_scope": in_scope, "within_target": (abs(rel) <= TARGET_REL) if in_scope and rel is not None
            else None, "runs": runs}


def _same_rel(raw_prof: float | None, overhead: float | None, cupti_same: float | None) -> float | None:
    """The timer (events minus the overhead) against CUPTI on the same trials, both with the profiler attached."""
    if raw_prof is None or cupti_same is None or cupti_same <= 0:
        return None
    return (raw_prof - (overhead or 0.0)) / cupti_same - 1.0


def _pm(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1%}"


# -- the diagnostic of the kernels that missed the target -------------------------------------------------
#: Kernels that missed the 3 % target on the H200 (2026-12-01 v2: the timer read 4-7 % below CUPTI), with two
#: controls: the same CUDA kernel out of place, and a Triton vector add of the same size.
DIAGNOSE = ("cuda saxpy 1048576 fp32 (cupy)", "cuda saxpy 67108864 fp32 (cupy)",
            "cuda vector add 16777216 fp32 (.cu host launcher)", "cuda saxpy out-of-place 67108864 fp32 (cupy)",
            "triton vector add 67108864 fp32")
#: Kernels measured only by the diagnostic, not in the agreement table.
DIAGNOSTIC_ONLY = ("cuda saxpy out-of-place 67108864 fp32 (cupy)",)


def _graph_events(fn: Callable[[], Any], flush_inside: bool) -> Callable[[int], list[float]]:
    """A graph of ``[flush_l2], start event, fn, end event`` (the flush captured *inside* the graph when
    ``flush_inside``, else none: warm L2); returns ``sample(n)``, the raw event interval (ms) of ``n`` replays."""
    import torch

    from htam_core.measure.timer import flush_l2

    flush_l2()  # the buffer exists before the capture
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True, external=True), torch.cuda.Event(enable_timing=True, external=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=side):
        if flush_inside:
            flush_l2()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()

    def sample(n: int) -> list[float]:
        out = []
        for _ in range(n):
            g.replay()
            e.synchronize()
            out.append(s.elapsed_time(e))
        return out

    sample.graph = g  # type: ignore[attr-defined]  # kept alive with the sampler
    return sample


def diagnose_one(k: dict[str, Any], n: int = 50) -> dict[str, Any]:
    """Every way of timing one kernel, raw (no overhead subtracted), medians in ms:

    ``graph_flush_outside`` (the timer's structure: an eager flush, then the replay of a graph with the events
    inside), ``graph_flush_inside`` (the flush captured in the graph), ``graph_no_flush`` (warm L2),
    ``events_async_flush`` (eager, no graph), ``do_bench`` (Triton's, eager, its own flush),
    ``do_bench_cudagraph``; CUPTI: ``cupti_flush`` (flush and call back to back), ``cupti_flush_synced`` (a host
    sync after every call, as the timer's trials), ``cupti_hot`` (no flush); ``events_under_profiler`` and
    ``cupti_same_trials`` (the timer's trials while the profiler records, and CUPTI's time of those trials).
    A method that does not apply (a launcher a graph cannot capture) or fails is an ``<name>_error`` entry.
    """
    import torch
    import triton.testing

    from htam_core.measure import cupti
    from htam_core.measure.flush import flush_ops
    from htam_core.measure.timer import LauncherTimer, flush_l2

    fn, out = k["fn"], {"kernel": k["name"], "launcher": k["launcher"], "trials": n}

    def put(name: str, f: Callable[[], float | None]) -> None:
        try:
            out[name] = f()
        except Exception as exc:  # noqa: BLE001 - one method failing is a finding, not the end
            out[name], out[name + "_error"] = None, f"{type(exc).__name__}: {exc}"[:200]

    med = statistics.median
    nf = flush_ops()
    capturable = k["launcher"] != "cu-host-launcher"  # <<<>>> on the legacy stream: not captured
    lt = LauncherTimer(fn, launcher_kind=k["launcher"], use_cupti=False, subtract_overhead=False)
    try:
        out["timer_method"] = lt.method
        put("graph_flush_outside" if lt.method == "cuda-graph" else "events_async_flush",
            lambda: med(lt.sample(n, raw=True)))
        box: list[float] = []

        def same() -> float | None:
            per = cupti.per_call_ms(cupti.device_ops([lambda: box.extend(lt.sample(n, raw=True))]), n, nf)
            return med(per) if per else None
        put("cupti_same_trials", same)
        out["events_under_profiler"] = med(box) if box else None
    finally:
        lt.close()
    if capturable:
        for name, inside in (("graph_flush_inside", True), ("graph_no_flush", False)):
            put(name, lambda inside=inside: med(_graph_events(fn, inside)(n)))
    if "events_async_flush" not in out:
        le = LauncherTimer(fn, method="events-async-flush", launcher_kind=k["launcher"], use_cupti=False,
                           subtract_overhead=False)
        try:
            put("events_async_flush", lambda: med(le.sample(n, raw=True)))
        finally:
            le.close()
    put("do_bench", lambda: float(triton.testing.do_bench(fn, warmup=5, rep=30, return_mode="median")))
    if capturable:
        put("do_bench_cudagraph", lambda: _do_bench_cudagraph(fn))

    def cupti_seq(flush: bool, synced: bool) -> float | None:
        seq: list[Callable[[], Any]] = []
        for _ in range(n):
            if flush:
                seq.append(flush_l2)
            seq.append(fn)
            if synced:
                seq.append(torch.cuda.synchronize)
        per = cupti.per_call_ms(cupti.device_ops(seq), n, nf if flush else 0)
        return med(per) if per else None
    put("cupti_flush", lambda: cupti_seq(True, False))
    put("cupti_flush_synced", lambda: cupti_seq(True, True))
    put("cupti_hot", lambda: cupti_seq(False, False))
    return out


DIAG_COLUMNS = ("graph_flush_outside", "graph_flush_inside", "graph_no_flush", "events_async_flush", "do_bench",
                "do_bench_cudagraph", "cupti_flush", "cupti_flush_synced", "cupti_hot", "events_under_profiler",
                "cupti_same_trials")


def diagnostic_markdown(diag: list[dict[str, Any]] | None) -> list[str]:
    """The diagnostic table (raw medians in µs) and how to read it."""
    if not diag:
        return []
    lines = ["## Diagnostic of the kernels that missed the target", "",
             "Raw medians in µs (no event overhead subtracted). graph flush outside: the timer's structure; "
             "graph flush inside: the L2 flush captured in the graph; graph no flush: warm L2; events async "
             "flush: eager launches; do_bench: Triton's (eager, own flush); CUPTI flush / flush synced / hot: "
             "device time back to back after a flush, with a host sync after each call (as the timer's trials), "
             "without a flush; events under profiler / CUPTI same trials: the timer's trials while the profiler "
             "records, and CUPTI's time of those same trials. Reading: if graph flush inside ≈ graph flush "
             "outside, the flush's place is not the cause; if events under profiler ≈ CUPTI same trials + the "
             "overhead while both exceed graph flush outside, the kernel itself runs slower with the profiler "
             "attached, so CUPTI measures a slowed kernel, not a faster timer.", "",
             "| kernel | " + " | ".join(c.replace("_", " ") for c in DIAG_COLUMNS) + " |",
             "|---|" + "---|" * len(DIAG_COLUMNS)]
    for d in diag:
        if "error" in d:
            lines.append(f"| {d['kernel']} | error: {d['error'][:100]} |" + " |" * (len(DIAG_COLUMNS) - 1))
            continue
        cells = [("n/a" if d.get(c + "_error") is None and c not in d else
                  "err" if d.get(c) is None else f"{d[c] * 1000:.2f}") for c in DIAG_COLUMNS]
        lines.append(f"| {d['kernel']} | " + " | ".join(cells) + " |")
    errs = [f"{d['kernel']}: {c}: {d[c + '_error']}" for d in diag for c in DIAG_COLUMNS if d.get(c + "_error")]
    lines += [""] + [f"- {e}" for e in errs] + ([""] if errs else [])
    return lines


def _f(x: float | None, nd: int = 4) -> str:
    return "—" if x is None else f"{x:.{nd}g}"


def markdown(doc: dict[str, Any]) -> str:
    """The results table and the verdict against the targets."""
    s = doc["summary"]
    lines = [f"# Timer agreement on {doc['device']} ({doc['date']})", "",
             f"Command: `{doc['command']}`", "", f"Runs finished: {doc.get('runs_done', '?')}", "",
             f"torch {doc['torch']}, triton {doc['triton']}. Three runs per kernel in one process. `timer`: htam's "
             "timer (median, L2 flushed before every trial). `CUPTI`: per-call device time of the launched "
             "kernels under the same flush sequence. `CUPTI warm`: back-to-back calls without a flush. "
             "`do_bench_cudagraph`: Triton's graph replay (warm L2). Spread: (max - min) / median of the three "
             "run medians. `around`: the same graph with the events around the replay (not inside it). `raw`: "
             "the timer before the event overhead was subtracted; `overhead`: what was subtracted (µs). "
             "`prof`: raw events while torch.profiler records, over raw events without it, minus 1 (run 1). "
             "`same trials`: the timer's events (minus the overhead) against CUPTI's device time of the same "
             "trials, both while the profiler records (run 1): like for like, since attaching the profiler can "
             "slow a kernel itself.", "",
             _probe_line(doc.get("probe")), "",
             "| kernel | launcher | method | timer (ms) | CUPTI (ms) | timer/CUPTI | raw (ms) | raw/CUPTI | "
             "overhead (µs) | prof | same trials | around (ms) | CUPTI warm (ms) | do_bench_cudagraph (ms) | "
             "run spread | within 3% |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["kernels"]:
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r.get('launcher', '')} | error: {r['error'][:80]} |" + " |" * 13)
            continue
        rel = r["timer_vs_cupti"]
        ok = {True: "yes", False: "**no**", None: "n/a (< 5 µs)"}[r["within_target"]]
        spread = "—" if r["run_spread_pct"] is None else f"{r['run_spread_pct']:.2f}%"
        raw_rel, ov = r.get("raw_vs_cupti"), r.get("event_overhead_ms")
        pp, pr = r.get("raw_plain_ms"), r.get("raw_under_profiler_ms")
        prof = f"{pr / pp - 1:+.1%}" if pp and pr else "—"
        lines.append(f"| {r['kernel']} | {r['launcher']} | {', '.join(r['methods'])} | {_f(r['timer_ms'])} | "
                     f"{_f(r['cupti_ms'])} | {'—' if rel is None else f'{rel:+.1%}'} | {_f(r.get('timer_raw_ms'))} | "
                     f"{'—' if raw_rel is None else f'{raw_rel:+.1%}'} | {_f(None if ov is None else ov * 1000, 3)} | "
                     f"{prof} | {_pm(r.get('same_trials_vs_cupti'))} | {_f(r['timer_around_ms'])} | "
                     f"{_f(r['cupti_hot_ms'])} | "
                     f"{_f(r['do_bench_cudagraph_ms'])} | "
                     f"{spread} | {ok} |")
    lines += ["", "## Against the targets", "",
              f"- kernels: {s['kernels']} ({s['errors']} failed to run); "
              f"{s['in_scope']} with CUPTI time >= 5 µs",
              f"- within 3% of CUPTI: {s['within_target']} of {s['in_scope']} "
              f"({'target met' if s['agreement_target_met'] else 'target missed'}); "
              f"worst {_f(s['worst_rel_pct'], 3)}% ({s['worst_kernel']})",
              f"- median run-to-run spread: {_f(s['median_run_spread_pct'], 3)}% "
              f"({'target met' if s['spread_target_met'] else 'target missed'}: <= {TARGET_SPREAD_PCT}%)",
              f"- refused runs (timer and CUPTI disagree by more than 10%): {s['refused_runs']}",
              f"- without the subtraction (raw events): {s['raw_within_target']} of {s['in_scope']} within 3%",
              f"- same trials (timer and CUPTI on the same trials, profiler attached): "
              f"{s.get('same_within_target', '—')} of {s.get('same_in_scope', '—')} within 3%", ""]
    if doc.get("stopped"):
        lines += [f"**Cut short:** {doc['stopped']}", ""]
    lines += diagnostic_markdown(doc.get("diagnostic"))
    return "\n".join(lines)


def _probe_line(p: dict[str, Any] | None) -> str:
    if not p:
        return "Probe: not run."
    if "error" in p:
        return f"Probe failed: {p['error']}"
    g, e = p["cuda-graph"], p["events-async-flush"]
    g1, e1 = p["cuda-graph one-block"], p["events-async-flush one-block"]
    return (f"Calibration (null kernel: a fill of {p['null_numel']} floats, one wave over every SM, in the same "
            f"structure as the trials): cuda-graph {g['described']}; events-async-flush {e['described']}. "
            f"With a one-block null kernel instead (not used): cuda-graph {g1['overhead_ms'] * 1000:.2f} µs, "
            f"events-async-flush {e1['overhead_ms'] * 1000:.2f} µs. An empty event pair inside a graph (no kernel "
            f"between the events) reads {p['empty_pair_in_graph_ms'] * 1000:.2f} µs.")


def write(doc: dict[str, Any], ks: list[dict[str, Any]], runs: dict[str, list[dict[str, Any]]],
          errors: dict[str, str], out: Path) -> str:
    """Summarize the runs so far into ``doc`` and write JSON and markdown into ``out``; returns the markdown
    (called after every round, so a run stopped at a time limit still leaves its table)."""
    doc["kernels"] = []
    doc["runs_done"] = min((len(runs[k["name"]]) for k in ks if k["name"] not in errors), default=0)
    for k in ks:
        meta = {"language": k["language"], "launcher": k["launcher"], "allocates": k["allocates"]}
        if k["name"] in errors:
            doc["kernels"].append({"kernel": k["name"], **meta, "error": errors[k["name"]],
                                   "runs": runs[k["name"]]})
        elif runs[k["name"]]:
            doc["kernels"].append(summarize(k["name"], meta, runs[k["name"]]))
    ok = [r for r in doc["kernels"] if "error" not in r]
    scope = [r for r in ok if r["target_in_scope"] and r["timer_vs_cupti"] is not None]
    worst = max(scope, key=lambda r: abs(r["timer_vs_cupti"]), default=None)
    spreads = [r["run_spread_pct"] for r in ok if r["run_spread_pct"] is not None]
    med_spread = statistics.median(spreads) if spreads else None
    doc["summary"] = {
        "kernels": len(doc["kernels"]), "errors": len(doc["kernels"]) - len(ok), "in_scope": len(scope),
        "within_target": sum(1 for r in scope if r["within_target"]),
        "agreement_target_met": bool(scope) and all(r["within_target"] for r in scope),
        "worst_rel_pct": abs(worst["timer_vs_cupti"]) * 100 if worst else None,
        "worst_kernel": worst["kernel"] if worst else None,
        "median_run_spread_pct": med_spread,
        "spread_target_met": med_spread is not None and med_spread <= TARGET_SPREAD_PCT,
        "refused_runs": sum(r["refused_runs"] for r in ok),
        "raw_within_target": sum(1 for r in scope if r.get("raw_vs_cupti") is not None
                                 and abs(r["raw_vs_cupti"]) <= TARGET_REL),
        "same_in_scope": sum(1 for r in scope if r.get("same_trials_vs_cupti") is not None),
        "same_within_target": sum(1 for r in scope if r.get("same_trials_vs_cupti") is not None
                                  and abs(r["same_trials_vs_cupti"]) <= TARGET_REL)}
    (out / "timing_agreement.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    md = markdown(doc)
    (out / "timing_agreement.md").write_text(md, encoding="utf-8")
    return md


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; write JSON and markdown into ``--out``. Returns 0 (also without a GPU)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder for timing_agreement.json and .md")
    ap.add_argument("--runs", type=int, default=3, help="runs per kernel (default 3)")
    ap.add_argument("--max-seconds", type=float, default=200.0,
                    help="total budget: no kernel run starts after it; what was measured is written (default 200)")
    ap.add_argument("--diagnose", choices=("auto", "off", "only"), default="auto",
                    help="the diagnostic of the kernels that missed the target: before the runs (auto), not at "
                         "all (off), or nothing else (only)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("timing_agreement: torch is not installed: nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("timing_agreement: no CUDA GPU here: nothing measured")
        return 0
    import triton

    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                      time.gmtime()),
                           "command": "python3 bench/timing_agreement.py " + shlex.join(argv or sys.argv[1:]),
                           "torch": torch.__version__, "triton": triton.__version__, "kernels": []}
    with tempfile.TemporaryDirectory(prefix="htam-ta-") as tmp:
        # the .cu host launchers are built into htam's cache; without HTAM_CACHE_DIR the cache root needs
        # platformdirs, which a bare GPU machine may lack (it stopped the 2026-12-01 v2 run)
        os.environ.setdefault("HTAM_CACHE_DIR", str(Path(tmp) / "cache"))
        try:
            doc["probe"] = probe()
        except Exception as exc:  # noqa: BLE001 - the kernels still run
            doc["probe"] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
            traceback.print_exc()
        print("probe:", json.dumps(doc["probe"], default=str), flush=True)
        all_ks = kernels(Path(tmp))
        print(f"kernels ready [{time.perf_counter() - t_start:.0f} s]", flush=True)
        if args.diagnose != "off":
            doc["diagnostic"] = []
            for k in (k for k in all_ks if k["name"] in DIAGNOSE):
                if time.perf_counter() - t_start > args.max_seconds / 2:  # the runs keep at least half
                    doc["diagnostic"].append({"kernel": k["name"], "error": "not run: half of --max-seconds spent"})
                    continue
                t0 = time.perf_counter()
                try:
                    d = diagnose_one(k)
                except Exception as exc:  # noqa: BLE001 - the table says what failed
                    d = {"kernel": k["name"], "error": f"{type(exc).__name__}: {exc}"[:300]}
                doc["diagnostic"].append(d)
                print(f"diagnostic {k['name']}: " + ", ".join(f"{c} {d[c] * 1000:.2f} µs" for c in DIAG_COLUMNS
                                                             if d.get(c)) + f" [{time.perf_counter() - t0:.1f} s]",
                      flush=True)
        ks = [k for k in all_ks if k["name"] not in DIAGNOSTIC_ONLY]
        runs: dict[str, list[dict[str, Any]]] = {k["name"]: [] for k in ks}
        md = write(doc, ks, runs, {}, out)
        errors: dict[str, str] = {}
        last_dt = 0.0  # the last kernel run's seconds: no run starts that would end past the budget
        for r in range(args.runs if args.diagnose != "only" else 0):
            for k in ks:
                if k["name"] in errors:
                    continue
                if time.perf_counter() - t_start + last_dt > args.max_seconds:
                    doc["stopped"] = (f"--max-seconds {args.max_seconds:g} spent during run {r + 1}: "
                                      "the kernels not yet run have fewer runs")
                    break
                t0 = time.perf_counter()
                try:
                    row = one_run(k, first=r == 0)
                except Exception as exc:  # noqa: BLE001 - one failing kernel must not lose the others
                    errors[k["name"]] = f"{type(exc).__name__}: {exc}"[:400]
                    traceback.print_exc()
                    continue
                runs[k["name"]].append(row)
                last_dt = time.perf_counter() - t0
                write(doc, ks, runs, errors, out)  # after every kernel: a stopped run keeps its table
                print(f"run {r + 1} {k['name']}: timer {row['timer_ms']:.5g} ms ({row['method']}), around "
                      f"{_f(row.get('timer_around_ms'), 5)}, CUPTI "
                      f"{_f(row['cupti_ms'], 5)}, warm {_f(row['cupti_hot_ms'], 5)}, dbc "
                      f"{_f(row['do_bench_cudagraph_ms'], 5)} [{time.perf_counter() - t0:.1f} s]", flush=True)
            md = write(doc, ks, runs, errors, out)
            if doc.get("stopped"):
                print(doc["stopped"], flush=True)
                break
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
