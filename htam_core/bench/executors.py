"""Run keyed benchmark tasks through an executor: in this process, or on a Dask cluster.

One task = one key and one JSON-serializable dict in, one dict out (ARCHITECTURE.md, "Rules"); the function is
named ``"module:function"`` so that a worker on another host imports it itself. Executors come from
:data:`EXECUTORS`:

* ``local``: with one visible GPU or none, the tasks run in this process, one after the other (a task that
  raises gives ``{"error": ...}`` and the run goes on). With several visible GPUs it starts the same Dask
  ``LocalCluster`` as ``dask`` does, one worker process per GPU.
* ``dask``: Dask distributed. Without ``scheduler`` it starts a ``distributed.LocalCluster`` on this host: one
  worker process per visible GPU, each pinned with ``CUDA_VISIBLE_DEVICES`` and declaring ``resources={"GPU":
  1}``, so a task (submitted with ``resources={"GPU": 1}``) holds one GPU; on a machine without a GPU,
  ``workers`` CPU worker processes (static-mode tasks need no GPU). With ``scheduler`` (``tcp://host:8786``)
  it joins an existing cluster (docs/BENCH.md says how to start one): :func:`connect` checks the address
  with distributed's parser, tries :data:`CONNECT_TIMEOUT_S` seconds, and waits ``worker_wait`` seconds for
  a first worker, saying so. A ``LocalCluster`` is closed by :func:`close_cluster` (workers get
  :data:`CLOSE_TIMEOUT_S` to exit); its workers leave Ctrl-C to htam.

Failures: a task whose worker process died (a kernel that brought its process down) is rescheduled by Dask's
scheduler on another worker; after :data:`ALLOWED_FAILURES` retries (the scheduler's
``distributed.scheduler.allowed-failures``, set for a ``LocalCluster``; an external scheduler must be started
with it, see docs/BENCH.md) the task is recorded as failed with the reason. An exception raised by the task
itself is recorded at once (the same code would raise again).

Streaming and resume (:class:`ResultLog`): every result is appended to ``results.jsonl`` in the output folder
as soon as it arrives (``as_completed``), with its key; a rerun with the same folder skips the keys already
there (results skipped or cut short by the time budget are not kept, so a rerun runs them). A key covers
everything a result depends on (:func:`task_key`: the task's settings and the content of the files it reads),
so an edited kernel or harness runs again instead of being resumed from a stale result. A lost worker never
loses finished results: they are on the client's disk already. Progress lines give
counts and an ETA (:class:`Progress`).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from htam_core.harness.base import origin_dirs
from htam_core.source.analysis.includes import headers_digest

__all__ = ["ALLOWED_FAILURES", "CLOSE_TIMEOUT_S", "CONNECT_TIMEOUT_S", "DASK_LOG_LEVEL", "EXECUTORS", "ExecutorError",
           "ExecutorOptions", "Progress", "ResultLog", "check_scheduler_address", "close_cluster", "connect",
           "dependency_digest", "file_digest", "is_final", "resumed_summary", "run_tasks", "shared_cluster",
           "start_local_cluster", "task_key"]

#: Lowest level of distributed's log lines shown while a ``LocalCluster`` runs (``silence_logs``). Its WARNINGs are
#: routine cluster life (a nanny restarting or closing a worker at shutdown, "event loop was unresponsive",
#: heartbeats missed on a loaded machine) and flooded the progress lines; a dead worker is reported by the run
#: itself (:func:`_failure`), and distributed's ERRORs still show.
DASK_LOG_LEVEL = logging.ERROR
#: How many times a task whose worker died is rescheduled before it is recorded as failed.
ALLOWED_FAILURES = 2
#: Fields of a task dict that never take part in its key (a rerun with a new time budget resumes).
_VOLATILE = ("deadline",)

Keyed = tuple[str, dict[str, Any]]
OnDone = Callable[[str, dict[str, Any]], None]


class ExecutorError(Exception):
    """The executor cannot run (unknown name, Dask not installed, no scheduler at the address); the message
    says what to do."""


def file_digest(path: str | Path | None) -> str | None:
    """The SHA-256 (hex) of a file's bytes; ``None`` for no path or a file that cannot be read."""
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def dependency_digest(path: str | Path | None) -> list[str | None]:
    """What a task's result depends on in the file ``path``: the digest of its bytes (:func:`file_digest`)
    and of the local headers it includes, transitively, from its folder and the original's
    (:func:`htam_core.source.analysis.includes.headers_digest`): a ``common.h`` edited next to the ``.cu``
    file changes the key. ``[None]`` for no path or an unreadable file."""
    own = file_digest(path)
    if own is None:
        return [None]
    p = Path(path)  # type: ignore[arg-type]
    return [own, headers_digest(p.read_bytes(), p, origin_dirs(p))]


def task_key(label: str, task: dict[str, Any], files: Iterable[str | Path | None] = ()) -> str:
    """A stable key for a task: ``label`` plus the first 12 hex digits of the SHA-256 of its JSON (sorted keys,
    without :data:`_VOLATILE` fields) and of the content of ``files``, so that a rerun with other settings, or
    after one of those files was edited, does not resume from a stale result.

    Args:
        label: readable prefix (``"vadd_kernel/htam"``).
        task: the task's JSON-shaped settings (budget, trials, policy, seed, engine, static, ...).
        files: every file the result depends on (the kernel file, a reference module, imported memory exports);
            a path in ``task`` names a file, only its content here says whether it changed. A missing file
            counts as such (``None``). The local headers each file includes count too (:func:`dependency_digest`).
    """
    body = json.dumps({"task": {k: v for k, v in task.items() if k not in _VOLATILE},
                       "files": [dependency_digest(f) for f in files]}, sort_keys=True, default=str)
    return f"{label}#{hashlib.sha256(body.encode()).hexdigest()[:12]}"


def resumed_summary(resumed: int, total: int, folder: str | Path) -> dict[str, Any]:
    """The results document's ``resumed`` entry: ``{"tasks", "total", "line"}``, the line saying how many
    tasks were taken from an earlier run's ``results.jsonl`` in ``folder`` rather than run again (the report
    shows it, so that a reused result is never mistaken for a fresh one)."""
    if not resumed:
        line = f"0 tasks resumed: {'the task' if total == 1 else f'all {total} tasks'} ran in this run."
    else:
        line = (f"{resumed} of {total} task{'' if total == 1 else 's'} resumed from an earlier run in this folder "
                f"({folder}; their kernel files, harnesses and settings are unchanged); `--fresh` runs them again.")
    return {"tasks": resumed, "total": total, "line": line}


def call_task(fn_path: str, task: dict[str, Any]) -> dict[str, Any]:
    """Import ``module:function`` and call it on ``task`` (runs in the executor's process or a Dask worker)."""
    mod, _, name = fn_path.rpartition(":")
    return getattr(importlib.import_module(mod), name)(task)


class ResultLog:
    """The results of one run folder, one JSON line ``{"key", "result"}`` per finished task.

    Args:
        path: the ``.jsonl`` file (created with its folder on the first result); ``None`` keeps nothing on disk.

    Attributes:
        done: key -> result of every task finished in an earlier run (read at construction; a torn last line,
            from a run killed while writing, is ignored).
        resumed: how many tasks :func:`run_tasks` took from ``done`` instead of running them (over all its
            calls with this log).
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.done: dict[str, dict[str, Any]] = {}
        self.resumed = 0
        if self.path and self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.done[str(row["key"])] = dict(row["result"])
                except (ValueError, KeyError, TypeError):
                    continue

    def append(self, key: str, result: dict[str, Any]) -> None:
        """Write one finished result (flushed and fsynced: a crash of the client keeps it)."""
        self.done[key] = result
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "result": result}, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


class Progress:
    """Counts and an ETA for one phase of a run: ``total`` tasks of which ``resumed`` were finished before.

    The ETA is the wall time between the first and the latest result of this run, divided by the results
    after the first, times the tasks left: the observed throughput (tasks run concurrently), without the
    start-up before the first result (starting a cluster, importing torch in each worker), which would
    inflate every estimate. Until a second result arrives the text says ``ETA after the next task``.

    Args:
        total: tasks in this phase; resumed: of them, finished in an earlier run.
        phase: the phase's name, put in front of the counts (``"warm-up 1/4 done"``), or ``None``.
        clock: seconds (monotonic).
    """

    def __init__(self, total: int, resumed: int = 0, clock: Callable[[], float] = time.monotonic,
                 phase: str | None = None) -> None:
        self.total, self.resumed, self.finished, self.failed = total, resumed, 0, 0
        self.phase = phase
        self._clock = clock
        self._t0 = clock()
        self._first: float | None = None
        self._last: float | None = None

    def update(self, result: dict[str, Any]) -> str:
        """Count one result; return the progress text ``"12/300 done (3 resumed, 1 failed), ETA 4m05s"``."""
        self.finished += 1
        self.failed += result.get("status") in ("error", "failed")
        self._last = self._clock()
        if self._first is None:
            self._first = self._last
        return self.text()

    def eta_s(self) -> float | None:
        """Seconds left by the throughput after the first result, or ``None`` before a second result."""
        if self.finished < 2 or self._first is None or self._last is None:
            return None
        return (self.total - self.resumed - self.finished) * (self._last - self._first) / (self.finished - 1)

    def text(self) -> str:
        """The progress text so far."""
        done = self.resumed + self.finished
        left = self.total - done
        text = f"{self.phase + ' ' if self.phase else ''}{done}/{self.total} done"
        extra = [f"{self.resumed} resumed"] if self.resumed else []
        extra += [f"{self.failed} failed"] if self.failed else []
        text += f" ({', '.join(extra)})" if extra else ""
        eta = self.eta_s()
        if not left or not self.finished:
            return text
        return text + (f", ETA {int(eta // 60)}m{int(eta % 60):02d}s" if eta is not None else ", ETA after the next task")


@dataclass
class ExecutorOptions:
    """How to run tasks (the CLI's ``--executor``, ``--scheduler``, ``--workers``).

    Attributes:
        name: a key of :data:`EXECUTORS`.
        gpus: visible GPU ids (:func:`htam_core.bench.parallel.visible_gpus`); one worker per GPU.
        scheduler: address of an existing Dask scheduler, or ``None`` to start a ``LocalCluster``.
        workers: CPU worker processes of a ``LocalCluster`` on a machine without a GPU.
        worker_wait: seconds to wait for a first worker of ``scheduler``'s cluster before giving up.
        say: where notices go (one line each; default stderr), e.g. "waiting for workers".
    """

    name: str = "local"
    gpus: tuple[str, ...] = ()
    scheduler: str | None = None
    workers: int = 2
    worker_wait: float = 60.0
    say: Callable[[str], None] | None = None


#: Seconds to wait for the scheduler at ``--scheduler`` to answer (a refused connection is retried until then).
CONNECT_TIMEOUT_S = 10
#: Seconds a closing ``LocalCluster`` gives each worker process to exit on its own before its nanny kills it
#: (distributed's default, 4 s, is too short on a loaded machine or for a worker tearing down a CUDA context,
#: and ends the run with "Worker process still alive after 4.0 seconds, killing").
CLOSE_TIMEOUT_S = 30.0


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def check_scheduler_address(address: str) -> str:
    """``address`` if distributed can connect to it, with its parser (``distributed.comm.parse_address``, the
    scheme's backend, and ``host:port`` for the TCP-like schemes).

    Raises:
        ExecutorError: the address is not one (``notanaddress``: no port; ``foo://h:1``: unknown scheme;
            ``tcp://h:99999``: no such port).
    """
    from distributed.comm import parse_address, parse_host_port
    from distributed.comm.registry import backends

    hint = "give the scheduler's address as `dask scheduler` prints it, e.g. tcp://10.0.0.5:8786"
    try:
        scheme, loc = parse_address(address)
    except ValueError as exc:
        raise ExecutorError(f"--scheduler {address!r} is not an address ({exc}); {hint}") from None
    if scheme not in backends:
        raise ExecutorError(f"--scheduler {address!r} has the unknown scheme {scheme}:// (known: "
                            f"{', '.join(sorted(backends))}); {hint}")
    if scheme in ("tcp", "tls", "ws", "wss"):
        try:
            host, port = parse_host_port(loc)
        except ValueError as exc:
            raise ExecutorError(f"--scheduler {address!r} is not an address ({exc}); {hint}") from None
        if not host:
            raise ExecutorError(f"--scheduler {address!r} has no host; {hint}")
        if not 0 < int(port) < 65536:
            raise ExecutorError(f"--scheduler {address!r} has the port {port}, outside 1-65535; {hint}")
    return address


def connect(opts: ExecutorOptions) -> Any:
    """A ``distributed.Client`` of the scheduler at ``opts.scheduler`` that has at least one worker.

    The connection is tried for :data:`CONNECT_TIMEOUT_S`; a scheduler without workers gets one notice line
    ("waiting for workers") and up to ``opts.worker_wait`` seconds (``Client.wait_for_workers``).

    Raises:
        ExecutorError: bad address, no scheduler there, or still no worker after ``opts.worker_wait`` s.
    """
    distributed = _dask()
    addr = check_scheduler_address(str(opts.scheduler))
    try:
        client = distributed.Client(addr, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError):
        raise ExecutorError(f"cannot reach the Dask scheduler at {addr} (connection refused or timed out after "
                            f"{CONNECT_TIMEOUT_S} s); start it with `dask scheduler` (docs/BENCH.md), check "
                            "the address, or drop --scheduler") from None
    if client.scheduler_info().get("workers"):
        return client
    (opts.say or _stderr)(f"connected to {addr}: 0 workers; waiting for workers (start one with "
                          f"`dask worker {addr} ...`, docs/BENCH.md)")
    try:
        client.wait_for_workers(1, timeout=opts.worker_wait)
    except (TimeoutError, OSError):
        client.close()
        raise ExecutorError(f"the Dask scheduler at {addr} still had no worker after {opts.worker_wait:g} s; "
                            f"start one with `dask worker {addr}` (docs/BENCH.md) or wait longer with "
                            "--worker-wait SECONDS") from None
    return client


def close_cluster(cluster: Any, *, interrupted: bool = False) -> None:
    """Close a ``LocalCluster`` cleanly: each worker process is first asked to exit and given
    :data:`CLOSE_TIMEOUT_S` to do so (``Nanny.close``), then the cluster and its scheduler close. Call it
    after every client of the cluster is closed. ``interrupted`` (Ctrl-C): close at once, a worker in the
    middle of a task is killed after distributed's short grace (its result was not kept anyway)."""
    import asyncio

    if interrupted:
        cluster.close()
        return

    async def close_workers() -> None:
        await asyncio.gather(*(w.close(timeout=CLOSE_TIMEOUT_S) for w in list(cluster.workers.values())),
                             return_exceptions=True)

    try:
        cluster.sync(close_workers)
    finally:
        cluster.close(timeout=CLOSE_TIMEOUT_S + 10)


class Executor(Protocol):
    """Runs keyed tasks and calls ``on_done(key, result)`` for each as it finishes (any order)."""

    def __call__(self, fn_path: str, tasks: list[Keyed], on_done: OnDone, opts: ExecutorOptions) -> None: ...


def _error(exc: BaseException) -> dict[str, Any]:
    return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}


def run_in_process(fn_path: str, tasks: list[Keyed], on_done: OnDone, opts: ExecutorOptions) -> None:
    """The ``local`` executor: one task after the other in this process (several GPUs: :func:`run_on_dask`)."""
    if len(opts.gpus) > 1:
        run_on_dask(fn_path, tasks, on_done, opts)
        return
    for key, task in tasks:
        try:
            result = call_task(fn_path, task)
        except Exception as exc:  # noqa: BLE001 - one broken task must not lose the others
            result = _error(exc)
        on_done(key, result)


def _dask() -> Any:
    import distributed  # deferred: Dask is heavy to import and only this executor needs it

    return distributed


#: The preload module of the worker processes of a ``LocalCluster`` (they leave Ctrl-C to htam).
_WORKER_SETUP = "htam_core.bench.dask_worker_setup"


def start_local_cluster(opts: ExecutorOptions) -> Any:
    """A ``distributed.LocalCluster``: one single-threaded worker process per GPU, pinned with
    ``CUDA_VISIBLE_DEVICES`` and declaring ``{"GPU": 1}``; without GPUs, ``opts.workers`` CPU workers. The
    scheduler (in this process) reschedules a task of a dead worker at most :data:`ALLOWED_FAILURES` times.
    Ports are chosen by the OS and bound to localhost; the dashboard is off. distributed's own log lines show
    from :data:`DASK_LOG_LEVEL` up (its ``silence_logs``, for the scheduler, the nannies and the workers), so
    that routine warnings do not flood a run's progress lines; errors still show."""
    distributed = _dask()
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}), warnings.catch_warnings():
        # the dashboard is off; the HTTP server (health, metrics) moving off a busy port 8787 is not news
        warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
        common = {"scheduler_port": 0, "host": "127.0.0.1", "dashboard_address": None, "processes": True,
                  "threads_per_worker": 1, "silence_logs": DASK_LOG_LEVEL, "preload": [_WORKER_SETUP]}
        if not opts.gpus:
            return distributed.LocalCluster(n_workers=max(1, opts.workers), **common)
        cluster = distributed.LocalCluster(n_workers=0, **common)
        for g in opts.gpus:  # one pinned worker per GPU: inside it the GPU is index 0
            spec = {"cls": distributed.Nanny,
                    "options": {"nthreads": 1, "resources": {"GPU": 1}, "env": {"CUDA_VISIBLE_DEVICES": g},
                                "host": "127.0.0.1", "dashboard": False, "silence_logs": DASK_LOG_LEVEL,
                                "preload": [_WORKER_SETUP]}}
            cluster.worker_spec[f"gpu{g}"] = spec
        cluster.scale(len(opts.gpus))
        cluster.sync(cluster._correct_state)
        return cluster


def _failure(exc: BaseException) -> dict[str, Any]:
    name = type(exc).__name__
    if name == "KilledWorker":
        return {"status": "failed", "error": f"the task's worker process died {ALLOWED_FAILURES + 1} times (a "
                                             "kernel that brings its process down?); not retried again"}
    return _error(exc)


@contextmanager
def _quiet_client_logs() -> Iterator[None]:
    """While results stream in, distributed's client logs nothing below CRITICAL: a lost scheduler connection is
    reported once, as an :class:`ExecutorError`, not as distributed's traceback."""
    logs = [logging.getLogger(n) for n in ("distributed.client", "distributed.utils")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for log, level in zip(logs, levels, strict=True):
            log.setLevel(level)


def run_on_dask(fn_path: str, tasks: list[Keyed], on_done: OnDone, opts: ExecutorOptions) -> None:
    """The ``dask`` executor: submit every task, hand each result to ``on_done`` as it completes.

    Tasks ask for ``{"GPU": 1}`` when the cluster's workers declare GPUs (with ``opts.gpus``, or when every
    worker of an external cluster has the resource), so one task holds one GPU.

    A task cancelled by the cluster (the connection to the scheduler was lost) is not handed to ``on_done``: it
    did not finish, so a rerun runs it again; the finished results were already handed over.

    Raises:
        ExecutorError: the scheduler cannot be reached (the message has the address), or the connection to it
            was lost before every task finished (the message says how many did not).
    """
    distributed = _dask()
    if not tasks:
        return
    cluster = None
    unfinished = 0
    try:
        if opts.scheduler:
            client = connect(opts)
        else:
            cluster = start_local_cluster(opts)
            client = distributed.Client(cluster)
        with _quiet_client_logs(), client:
            infos = client.scheduler_info().get("workers", {}).values()
            gpu = bool(opts.gpus) or (bool(infos) and all("GPU" in (w.get("resources") or {}) for w in infos))
            futs = {client.submit(call_task, fn_path, task, key=f"htam-{key}", pure=False,
                                  resources={"GPU": 1} if gpu else None): key for key, task in tasks}
            for fut in distributed.as_completed(futs):
                try:
                    result = fut.result()
                except CancelledError:  # the scheduler connection was lost: the task did not run out
                    unfinished += 1
                    continue
                except Exception as exc:  # noqa: BLE001 - a failed task is recorded, the run goes on
                    result = _failure(exc)
                on_done(futs[fut], result)
                fut.release()
        if unfinished:
            raise ExecutorError(
                f"lost the connection to the Dask scheduler{' at ' + opts.scheduler if opts.scheduler else ''}"
                f": {unfinished} of {len(tasks)} tasks did not finish. The finished ones are kept in "
                "results.jsonl; restart the scheduler (and its workers) and run the same command again to "
                "resume the rest")
    except KeyboardInterrupt:
        if cluster is not None:
            close_cluster(cluster, interrupted=True)
            cluster = None
        raise
    finally:
        if cluster is not None:
            close_cluster(cluster)


@contextmanager
def shared_cluster(opts: ExecutorOptions) -> Iterator[ExecutorOptions]:
    """Options whose tasks all go to one cluster for the whole block: when ``opts`` would start a
    ``LocalCluster`` per :func:`run_tasks` call (``dask`` without a scheduler, or ``local`` with several GPUs),
    start it once here, yield options that join it, and close it at the end; otherwise yield ``opts``."""
    local_cluster = opts.name == "dask" and not opts.scheduler or opts.name == "local" and len(opts.gpus) > 1
    if not local_cluster:
        yield opts
        return
    cluster = start_local_cluster(opts)
    try:
        yield replace(opts, name="dask", scheduler=cluster.scheduler_address)
    except KeyboardInterrupt:
        close_cluster(cluster, interrupted=True)
        raise
    else:
        close_cluster(cluster)
    finally:
        cluster.close()  # after an error: at once (closing twice is a no-op)


#: Executor name -> function (``--executor``).
EXECUTORS: dict[str, Executor] = {"local": run_in_process, "dask": run_on_dask}


def run_tasks(fn_path: str, tasks: Iterable[Keyed], opts: ExecutorOptions, *, log: ResultLog | None = None,
              on_done: Callable[[dict[str, Any], str], None] | None = None,
              on_resumed: Callable[[str], None] | None = None, phase: str | None = None) -> list[dict[str, Any]]:
    """Run every task not finished yet in ``log``; results in task order (resumed ones included).

    Args:
        fn_path: ``"module:function"`` taking and returning a JSON-shaped dict.
        tasks: ``(key, task)`` pairs; keys are unique (:func:`task_key`).
        opts: which executor, and its settings.
        log: where results stream to and resume from (``None``: nothing on disk, nothing resumed).
        on_done: called with each new result and the progress text as it arrives.
        on_resumed: called once, before anything runs, with the progress text (``"4/52 done (4 resumed)"``)
            when some tasks were resumed from ``log`` (so that a run whose every task resumes still says so).
        phase: the name of this call's phase in the progress text (``"warm-up"``): each call counts its own
            tasks, so a run of several calls names them apart.

    Returns:
        One result per task, in the order of ``tasks``. A task that raised or whose worker died too often gives
        ``{"status": "error"|"failed", "error": "<reason>"}`` instead of stopping the run.

    Raises:
        ExecutorError: unknown executor or duplicate keys, or the executor cannot start.
    """
    tasks = list(tasks)
    if opts.name not in EXECUTORS:
        raise ExecutorError(f"unknown executor {opts.name!r}; known: {', '.join(EXECUTORS)}")
    keys = [k for k, _ in tasks]
    if len(set(keys)) != len(keys):
        raise ExecutorError("two tasks have the same key; every task needs its own")
    log = log or ResultLog(None)
    results = {k: log.done[k] for k in keys if k in log.done}
    todo = [(k, t) for k, t in tasks if k not in results]
    progress = Progress(len(tasks), resumed=len(results), phase=phase)
    log.resumed += len(results)
    if results and on_resumed:
        on_resumed(progress.text())

    def done(key: str, result: dict[str, Any]) -> None:
        results[key] = result
        if is_final(result):
            log.append(key, result)
        text = progress.update(result)
        if on_done:
            on_done(result, text)

    EXECUTORS[opts.name](fn_path, todo, done, opts)
    lost = {"status": "error", "error": "the executor returned no result for this task"}
    return [results[k] if k in results else lost for k in keys]


def is_final(result: dict[str, Any]) -> bool:
    """Whether a result is kept for resuming: not one skipped or cut short by the time budget
    (``status == "skipped"`` or ``cancelled``), which a rerun runs again."""
    return result.get("status") != "skipped" and not result.get("cancelled")
