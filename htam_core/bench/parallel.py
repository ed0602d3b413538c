"""Describe the machine a benchmark runs on: visible GPUs, device and software versions, and the time budget.

The tasks themselves run through an executor (:mod:`htam_core.bench.executors`: in this process, or on Dask).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from htam_core.runtime.children import one_shot_kwargs


def visible_gpus() -> list[str]:
    """Ids of the GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` when set, else ``nvidia-smi -L``.

    Returns an empty list on a machine without ``nvidia-smi`` (no GPU); ``torch`` is never imported here.
    """
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, **one_shot_kwargs()).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, ln in enumerate(ln for ln in out.splitlines() if ln.startswith("GPU "))]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(gpus: list[str]) -> dict[str, Any]:
    """Device and software versions for a results file (no torch import: package metadata and nvidia-smi).

    Returns:
        ``{"date", "gpu", "gpu_count", "driver", "python", "torch", "triton", "cupy", "htam", "host"}``;
        ``gpu`` is ``"none (static mode)"`` without a GPU.
    """
    gpu, driver = "none (static mode)", None
    smi = shutil.which("nvidia-smi")
    if gpus and smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30, **one_shot_kwargs()).stdout.strip().splitlines()
            if out:
                gpu, driver = (p.strip() for p in out[0].split(",", 1))
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    cupy = next((v for v in (_version(d) for d in ("cupy", "cupy-cuda12x", "cupy-cuda13x")) if v), None)
    return {"date": _dt.date.today().isoformat(), "gpu": gpu, "gpu_count": len(gpus), "driver": driver,
            "python": platform.python_version(), "torch": _version("torch"), "triton": _version("triton"),
            "cupy": cupy, "htam": _version("htam"), "host": platform.node()}


def gpu_slug(env: dict[str, Any]) -> str:
    """A file-name part for the device: ``"nvidia-h200"``, or ``"static"`` without a GPU."""
    if not env.get("gpu_count"):
        return "static"
    return re.sub(r"[^a-z0-9]+", "-", str(env["gpu"]).lower()).strip("-") or "gpu"


@contextmanager
def cancel_at(deadline: float | None) -> Iterator[threading.Event]:
    """An event that is set at ``deadline`` (``time.time()`` seconds; ``None``: never), for
    :func:`htam_core.optimize.run_optimize`'s ``cancel``: a run past the benchmark's time budget stops after its
    current candidate and keeps its best so far. The timer is stopped on exit."""
    cancel = threading.Event()
    timer = None
    if deadline is not None:
        timer = threading.Timer(max(0.0, deadline - time.time()), cancel.set)
        timer.daemon = True
        timer.start()
    try:
        yield cancel
    finally:
        if timer is not None:
            timer.cancel()
