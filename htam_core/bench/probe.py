"""A cheap static task for exercising executors at scale: rank one kernel and record the top step.

:func:`run_probe_task` loads a kernel, profiles it statically, ranks the next steps with HTAM over an empty memory
and records the top-ranked step into the task's own memory store as a correct, not measured, ``neutral`` outcome
(the status the editor records for a step it could not time). The record's uid and time come from the task, so
the same tasks give the same records on any executor and in any order, and a merged memory can be compared with a
sequential run's exactly. It is the unit of work of ``tests/bench/test_dask_cluster.py`` and
``bench/bench_dask.py``: the full static pipeline (parse, static profile, rank, SQLite write) at a few tens of
milliseconds a task, where a static ``htam optimize`` takes seconds.

``crash: true`` makes the task end its process with ``os._exit`` before doing anything: a stand-in for a kernel
that brings its worker down, to exercise the executor's retry of tasks whose worker died.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

__all__ = ["run_probe_task"]


def run_probe_task(task: dict[str, Any]) -> dict[str, Any]:
    """Rank ``task["kernel"]`` of ``task["path"]`` statically and record the top step.

    Args:
        task: ``{"path", "kernel", "memory_path", "uid", "time"}``, optionally ``"crash": true`` and
            ``"tag"`` (the record's user tag). ``memory_path`` is the task's own store; it is replaced (with its
            ``-wal``/``-shm`` files) at the start, so a retried task leaves no half-written records.

    Returns:
        ``{"status": "ok", "uid", "kernel", "step", "bottleneck", "pid", "wall_s"}``; ``{"status": "error",
        "error"}`` when the kernel cannot be loaded or ranked.
    """
    if task.get("crash"):
        os._exit(70)
    # start-up cost: loads psutil, sqlite3, sympy, tomllib, tree_sitter and 70 more project modules, only when this runs
    from htam_core.memory import Outcome, Ranker, Record, load_knowledge, open_store, state_from_profile
    from htam_core.memory.fingerprint import kernel_fingerprint
    from htam_core.memory.store import remove_store_files
    from htam_core.profile.api import profile_kernel
    from htam_core.source import load

    t0 = time.time()
    store_path = Path(task["memory_path"])
    remove_store_files(store_path)
    try:
        kernel = load(task["path"]).kernel(task["kernel"])
        profile = profile_kernel(task["path"], task["kernel"], static=True)
        kb = load_knowledge()
        state = state_from_profile(profile)
        steps = Ranker(kb, None).rank(state, [], kernel.features, kernel.language, profile, top=1, kernel=kernel)
    except Exception as exc:  # noqa: BLE001 - a task's failure is its result
        return {"status": "error", "uid": task["uid"], "error": f"{type(exc).__name__}: {exc}"}
    if not steps:
        return {"status": "error", "uid": task["uid"], "error": "no applicable strategy"}
    top = steps[0]
    rec = Record((), state, top.strategy, top.direction,
                 Outcome(None, True, False, "neutral", "probe: ranked statically, not applied"),
                 kernel_fingerprint(task["path"], task["kernel"]), profile.device, float(task["time"]),
                 str(task["uid"]), host=platform.node(), tag=task.get("tag"))
    store_path.parent.mkdir(parents=True, exist_ok=True)
    with open_store(store_path, kb=kb) as store:
        store.import_records([rec])
    return {"status": "ok", "uid": task["uid"], "kernel": task["kernel"], "step": top.strategy,
            "bottleneck": profile.bottleneck.cls, "pid": os.getpid(), "wall_s": time.time() - t0}
