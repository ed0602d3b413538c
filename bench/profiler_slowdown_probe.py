"""Does attaching ``torch.profiler`` (CUPTI activity) slow a kernel down, and which kernels?

The timer agreement table (``bench/timing_agreement.py``) found that a one-element-per-thread saxpy over 64M
floats, launched through CuPy or a ``.cu`` host launcher, runs about 6 % slower while ``torch.profiler``
records, so CUPTI's kernel records time a slowed kernel, while Triton's vectorized vector add of the same size
does not slow down. This probe separates the candidate causes on one GPU, in one process:

* the same memory traffic with 1, 4 (``float4``) and grid-stride elements per thread, i.e. many small blocks
  against few large ones;
* CUDA events around each launch without the profiler, with it, and without it again (order effects, clocks);
* CUPTI's own duration of the launches recorded with the profiler.

Each variant: ``reps`` launches timed one by one with CUDA events (no L2 flush: 3 x 256 MB do not fit in L2).
Output: ``<out>/probe.json`` and ``<out>/probe.md``. Needs a CUDA GPU, torch and CuPy; exits 2 without them.

Usage: ``python bench/profiler_slowdown_probe.py --out DIR [--n 67108864] [--reps 40]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SRC = r"""
extern "C" __global__ void saxpy1(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void saxpy4(const float4* __restrict__ x, float4* __restrict__ y, float a, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) { float4 u = x[i], v = y[i];
        v.x = a * u.x + v.x; v.y = a * u.y + v.y; v.z = a * u.z + v.z; v.w = a * u.w + v.w; y[i] = v; }
}
extern "C" __global__ void saxpy_gs(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
"""


def _events(launch: Any, reps: int) -> list[float]:
    import torch

    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        launch()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e))
    return out


def probe_one(name: str, launch: Any, reps: int) -> dict[str, Any]:
    """Event medians (ms) of ``launch`` without, with and again without the profiler, and CUPTI's median."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        launch()
    torch.cuda.synchronize()
    before = statistics.median(_events(launch, reps))
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        under = statistics.median(_events(launch, reps))
        torch.cuda.synchronize()
    cupti = [(e.time_range.end - e.time_range.start) / 1000.0 for e in prof.events()
             if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False)]
    after = statistics.median(_events(launch, reps))
    return {"kernel": name, "events_before_ms": before, "events_under_profiler_ms": under,
            "events_after_ms": after, "cupti_ms": statistics.median(cupti) if cupti else None,
            "cupti_records": len(cupti), "slowdown_under_profiler": under / before - 1.0,
            "cupti_over_events_before": (statistics.median(cupti) / before - 1.0) if cupti else None}


def main(argv: list[str] | None = None) -> int:
    """Run the probe; exit 0 on success, 2 without a GPU or CuPy."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--n", type=int, default=1 << 26, help="elements (default 64M)")
    ap.add_argument("--reps", type=int, default=40)
    a = ap.parse_args(argv)
    try:
        import cupy
        import numpy as np
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA GPU")
    except Exception as exc:  # noqa: BLE001 - one line, the probe needs a GPU
        print(f"profiler_slowdown_probe: not run: {exc}", file=sys.stderr)
        return 2
    n = a.n - a.n % 4
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    mod = cupy.RawModule(code=SRC, options=("-std=c++17",))
    k1, k4, kgs = (mod.get_function(k) for k in ("saxpy1", "saxpy4", "saxpy_gs"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stream = torch.cuda.current_stream().cuda_stream

    def on(func: Any, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]) -> Any:
        def launch() -> None:
            with cupy.cuda.ExternalStream(stream):
                func(grid, block, args)
        return launch

    a32, n32 = np.float32(0.5), np.int32(n)
    variants = [
        (f"1 element/thread, block 256, {(n + 255) // 256} blocks", on(k1, ((n + 255) // 256,), (256,), (cx, cy, a32, n32))),
        (f"1 element/thread, block 1024, {(n + 1023) // 1024} blocks", on(k1, ((n + 1023) // 1024,), (1024,), (cx, cy, a32, n32))),
        (f"float4/thread, block 256, {(n // 4 + 255) // 256} blocks", on(k4, ((n // 4 + 255) // 256,), (256,), (cx, cy, a32, np.int32(n // 4)))),
        (f"grid-stride, block 256, {sms * 8} blocks", on(kgs, (sms * 8,), (256,), (cx, cy, a32, n32))),
        ("torch.add_ (x + y in place, torch's own kernel)", lambda: y.add_(x, alpha=0.5)),
    ]
    rows = []
    for name, launch in variants:
        rows.append(probe_one(name, launch, a.reps))
        print(f"[probe] {name}: {rows[-1]['slowdown_under_profiler']:+.1%} under the profiler", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": torch.cuda.get_device_name(0),
           "torch": torch.__version__, "cupy": cupy.__version__, "n": n, "reps": a.reps, "rows": rows,
           "command": f"python bench/profiler_slowdown_probe.py --out {a.out} --n {a.n} --reps {a.reps}"}
    (a.out / "probe.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    lines = [f"# Does torch.profiler slow a kernel down? ({doc['device']}, {doc['date']})", "",
             f"Command: `{doc['command']}`; torch {doc['torch']}, CuPy {doc['cupy']}; saxpy over {n} fp32 "
             f"elements, {a.reps} launches per column timed one by one with CUDA events (ms, median).", "",
             "| kernel | events before | events under profiler | events after | CUPTI | under / before | CUPTI / before |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cupti_over_events_before"]
        lines.append(f"| {r['kernel']} | {r['events_before_ms']:.4f} | {r['events_under_profiler_ms']:.4f} | "
                     f"{r['events_after_ms']:.4f} | {r['cupti_ms'] if r['cupti_ms'] is None else round(r['cupti_ms'], 4)} | "
                     f"{r['slowdown_under_profiler']:+.1%} | {'-' if c is None else f'{c:+.1%}'} |")
    (a.out / "probe.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"profiler_slowdown_probe: wrote {a.out / 'probe.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
