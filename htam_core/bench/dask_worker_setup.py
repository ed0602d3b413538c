"""Set-up of the worker processes of the ``LocalCluster`` that htam starts (a Dask worker preload).

A Ctrl-C in the terminal reaches every process of its group: the worker processes too, which then each print a
``KeyboardInterrupt`` traceback from inside distributed. The user's Ctrl-C is for htam, which stops the run,
keeps the finished results and closes the cluster, whose nannies stop the workers; so a worker process ignores
SIGINT (the preload mechanism: https://distributed.dask.org/en/stable/plugins.html, "Preload scripts").
"""

from __future__ import annotations

import signal
from typing import Any


def dask_setup(worker: Any) -> None:
    """Called by distributed in each worker process as it starts: ignore SIGINT there (the main thread)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
