"""Set-up of the worker processes of the ``LocalCluster`` that htam starts (a Dask worker preload).

A Ctrl-C in the terminal reaches every process of its group: the worker processes too, which then each print a
``KeyboardInterrupt`` traceback from inside distributed. The user's Ctrl-C is for htam, which stops the run,
keeps the finished results and closes the cluster, whose nannies stop the workers; so a worker process ignores
SIGINT (the preload mechanism: https://distributed.dask.org/en/stable/plugins.html, "Preload scripts").
"""

from __future__ import annotations

import logging
import signal
from typing import Any

from htam_core.runtime.children import start_as_child

#: Messages of distributed's worker that only say its scheduler went away first: routine when htam closes the
#: cluster after a Ctrl-C (the scheduler closes while a worker's heartbeat is in flight), never a task's error.
ROUTINE_SHUTDOWN_MESSAGES = ("Failed to communicate with scheduler during heartbeat",)


class _DropRoutineShutdown(logging.Filter):
    """Drops the worker log records of :data:`ROUTINE_SHUTDOWN_MESSAGES` (with their traceback); every other
    record, a task's error included, passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not any(m in msg for m in ROUTINE_SHUTDOWN_MESSAGES)


def dask_setup(worker: Any) -> None:
    """Called by distributed in each worker process as it starts: ignore SIGINT there (the main thread), keep
    only the child allow-list of the environment, and die with htam's process
    (:func:`~htam_core.runtime.children.start_as_child`). The LLM key's variable stays in this process (its
    tasks ask the LLM endpoint with ``--engine llm``) but reaches none of its children: kernel code runs in the
    worker pools it starts, never here. The worker's log drops the routine "scheduler went away" heartbeat
    record that a close after Ctrl-C can cause (:data:`ROUTINE_SHUTDOWN_MESSAGES`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("distributed.worker").addFilter(_DropRoutineShutdown())
    start_as_child(keep_forgotten=True)
