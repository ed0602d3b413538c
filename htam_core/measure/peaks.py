"""The device's measured peaks (DRAM bandwidth, fp32 and bf16 FLOP/s) and the roofline position.

Peaks are *measured*, not taken from datasheets: a large device-to-device copy for bandwidth and
large torch matmuls for FLOP/s (fp32 with TF32 disabled, and bf16), each the best of several
timed runs. They are measured once per device and cached as JSON in the user cache dir
(``<htam cache>/peaks/<device name>-<uuid>.json``).

Roofline (Williams, Waterman, Patterson, "Roofline", CACM 2009): at arithmetic intensity
``I = flops / bytes`` the attainable rate is ``min(peak_flops, I * peak_bw)``;
:func:`roofline_fraction` is the achieved rate over it. With bytes only, the fraction is the
achieved bandwidth over the peak bandwidth; with FLOPs only, achieved over peak FLOP/s.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from htam_core.runtime.cache import cache_root


@dataclass
class Peaks:
    """Measured peaks of one device.

    Attributes:
        device: device name.
        uuid: device UUID (or index) used for the cache key.
        dram_bytes_per_s: copy bandwidth (bytes read + written per second).
        fp32_flops_per_s: fp32 matmul, TF32 off.
        tf32_flops_per_s: fp32 matmul with TF32 tensor cores allowed (``None`` in caches written before it was
            measured).
        bf16_flops_per_s: bf16 matmul (tensor cores).
        measured_at: ISO date.
    """

    device: str
    uuid: str
    dram_bytes_per_s: float
    fp32_flops_per_s: float
    bf16_flops_per_s: float
    measured_at: str = ""
    tf32_flops_per_s: float | None = None

    def flops_for(self, dtype: str | None) -> float:
        """Peak FLOP/s for a compute dtype name (see :func:`peak_flops_for`)."""
        peak = peak_flops_for(dtype, self.fp32_flops_per_s, self.bf16_flops_per_s, self.tf32_flops_per_s)
        return peak if peak is not None else self.fp32_flops_per_s


def peak_flops_for(dtype: str | None, fp32: float | None, bf16: float | None = None,
                   tf32: float | None = None) -> float | None:
    """The FLOP/s peak that bounds a compute dtype: ``bfloat16``/``float16`` -> the bf16 tensor-core peak,
    ``tf32`` -> the TF32 tensor-core peak, anything else -> fp32 (SIMT); a peak that was not measured
    (``None``/0) falls back to fp32. Peaks in FLOP/s, as in :class:`Peaks` or its JSON."""
    if dtype in ("bfloat16", "float16") and bf16:
        return bf16
    if dtype == "tf32" and tf32:
        return tf32
    return fp32


def roofline_fraction(time_s: float, *, bytes_moved: float | None, flops: float | None, peaks: Peaks,
                      dtype: str | None = None) -> float | None:
    """Achieved / attainable rate, 0..1 (can exceed 1 slightly when caches beat DRAM), or ``None``.

    Args:
        time_s: measured time of one call, seconds.
        bytes_moved: DRAM bytes per call, or ``None``.
        flops: FLOPs per call, or ``None``.
        peaks: the device's measured peaks.
        dtype: compute dtype (selects the FLOP/s peak).
    """
    if time_s <= 0:
        return None
    pf = peaks.flops_for(dtype)
    if flops and bytes_moved:
        attainable = min(pf, flops / bytes_moved * peaks.dram_bytes_per_s)
        return (flops / time_s) / attainable
    if bytes_moved:
        return (bytes_moved / time_s) / peaks.dram_bytes_per_s
    if flops:
        return (flops / time_s) / pf
    return None


def _median_time_ms(fn: Any, reps: int = 10) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return min(times)


def measure_peaks() -> dict[str, Any]:
    """Worker target: measure the current device's peaks (about 2-5 s). Returns :class:`Peaks` as JSON."""
    import datetime

    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    n = 1 << 28  # 1 GiB of float32
    src = torch.empty(n, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    ms = _median_time_ms(lambda: dst.copy_(src))
    bw = 2 * src.numel() * 4 / (ms / 1000.0)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        m = 8192
        a = torch.randn(m, m, device="cuda")
        b = torch.randn(m, m, device="cuda")
        ms32 = _median_time_ms(lambda: a @ b, reps=5)
        fp32 = 2 * m**3 / (ms32 / 1000.0)
        torch.backends.cuda.matmul.allow_tf32 = True
        ms_tf32 = _median_time_ms(lambda: a @ b, reps=10)
        tf32 = 2 * m**3 / (ms_tf32 / 1000.0)
        a16, b16 = a.bfloat16(), b.bfloat16()
        ms16 = _median_time_ms(lambda: a16 @ b16, reps=10)
        bf16 = 2 * m**3 / (ms16 / 1000.0)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    uuid = str(getattr(props, "uuid", "") or torch.cuda.current_device())
    return asdict(Peaks(props.name, uuid, bw, fp32, bf16, datetime.date.today().isoformat(), tf32))


def device_identity() -> dict[str, str]:
    """Worker target: ``{"device", "uuid"}`` of the current device (cheap)."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"device": props.name, "uuid": str(getattr(props, "uuid", "") or torch.cuda.current_device())}


def peaks_path(device: str, uuid: str) -> Path:
    """Cache file of a device's peaks."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{device}-{uuid}")[:120]
    return cache_root() / "peaks" / f"{safe}.json"


def get_peaks(device: str, uuid: str, measure: Any) -> Peaks:
    """The cached peaks of (device, uuid), measuring them with ``measure()`` (returns JSON) when absent.

    Args:
        device, uuid: identity of the device (from :func:`device_identity`).
        measure: callable that runs :func:`measure_peaks` (in a worker) and returns its JSON.
    """
    path = peaks_path(device, uuid)
    try:
        return Peaks(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        pass
    data = measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)
    return Peaks(**data)
