"""Spread self-contained benchmark tasks over the GPUs of one host, and describe the machine.

One task = one JSON-serializable dict in, one dict out (ARCHITECTURE.md, "Rules"). With one GPU or none, tasks run in
this process, one after the other. With several visible GPUs, a :class:`concurrent.futures.ProcessPoolExecutor`
runs one worker process per GPU, each pinned with ``CUDA_VISIBLE_DEVICES`` (so inside it the GPU is index 0).
Nothing beyond that: a later version can hand the same tasks to Dask or Ray unchanged.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.metadata
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

TaskFn = Callable[[dict[str, Any]], dict[str, Any]]


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
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, ln in enumerate(ln for ln in out.splitlines() if ln.startswith("GPU "))]


def _pin(queue: Any) -> None:  # pragma: no cover - runs in pool workers
    os.environ["CUDA_VISIBLE_DEVICES"] = queue.get()


def _call(fn_path: str, task: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - runs in pool workers
    mod, _, name = fn_path.rpartition(":")
    return getattr(importlib.import_module(mod), name)(task)


def run_tasks(fn_path: str, tasks: Iterable[dict[str, Any]], gpus: list[str],
              on_done: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run ``fn(task)`` for every task; results in task order.

    Args:
        fn_path: ``"module:function"`` of a module-level function taking and returning a JSON-shaped dict.
        tasks: the task dicts.
        gpus: GPU ids (from :func:`visible_gpus`); with two or more, one pinned worker process per GPU.
        on_done: called with each result as it arrives (progress output).

    Returns:
        One result per task, in the order of ``tasks``. A worker that raised gives
        ``{"error": "<type>: <message>"}`` for its task instead of stopping the run.
    """
    tasks = list(tasks)
    results: list[dict[str, Any] | None] = [None] * len(tasks)
    if len(gpus) <= 1:
        for i, t in enumerate(tasks):
            try:
                results[i] = _call(fn_path, t)
            except Exception as exc:  # noqa: BLE001 - one broken task must not lose the others
                results[i] = {"error": f"{type(exc).__name__}: {exc}"}
            if on_done:
                on_done(results[i])  # type: ignore[arg-type]
        return results  # type: ignore[return-value]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        queue = manager.Queue()
        for g in gpus:
            queue.put(g)
        with ProcessPoolExecutor(max_workers=len(gpus), mp_context=ctx, initializer=_pin,
                                 initargs=(queue,)) as pool:
            futs = {pool.submit(_call, fn_path, t): i for i, t in enumerate(tasks)}
            for fut in as_completed(futs):
                i = futs[fut]
                try:
                    results[i] = fut.result()
                except Exception as exc:  # noqa: BLE001
                    results[i] = {"error": f"{type(exc).__name__}: {exc}"}
                if on_done:
                    on_done(results[i])  # type: ignore[arg-type]
    return results  # type: ignore[return-value]


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
                                 capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
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
