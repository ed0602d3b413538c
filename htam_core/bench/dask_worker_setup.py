"""Set-up of the worker processes of the ``LocalCluster`` that htam starts (a Dask worker preload).

A Ctrl-C in the terminal reaches every process of its group: the worker processes too, which then each print a
``KeyboardInterrupt`` traceback from inside distributed. The user's Ctrl-C is for htam, which stops the run,
keeps the finished results and closes the cluster, whose nannies stop the workers; so a worker process ignores
SIGINT (the preload mechanism: https://distributed.dask.org/en/stable/plugins.html, "Preload scripts").
"""

from __future__ import annotations

import signal
from typing import Any

from htam_core.runtime.children import start_as_child


def dask_setup(worker: Any) -> None:
    """Called by distributed in each worker process as it starts: ignore SIGINT there (the main thread), keep
    only the child allow-list of the environment, and die with htam's process
    (:func:`~htam_core.runtime.children.start_as_child`). The LLM key's variable stays in this process (its
    tasks ask the LLM endpoint with ``--engine llm``) but reaches none of its children: kernel code runs in the
    worker pools it starts, never here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    start_as_child(keep_forgotten=True)
