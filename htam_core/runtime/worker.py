"""Persistent, isolated worker processes for compiling and running untrusted kernel code.

Every compile and run of user or generated kernel code happens here, never in the caller's
process. One persistent worker per key (typically one per GPU)
keeps the CUDA context, ``import torch`` and Triton's caches warm between calls.

Isolation of a worker:

* a fresh interpreter started with :mod:`subprocess` in its own session (process group), so that
  a timeout kills the worker and everything it started (nvcc, ncu, ...);
* a clean, minimal environment (:func:`minimal_env`, the allow-list of
  :mod:`htam_core.runtime.children`); never API keys, tokens, the LLM key's variable or ``HTAM_MEMORY``;
* its children end with each call: whatever a call started and left running (a fork loop, a daemon) is
  killed before the reply goes out, and the worker dies with its caller (a watchdog on the parent pid);
* a private temporary working directory;
* an optional address-space limit (``resource.setrlimit(RLIMIT_AS)``) set in the child before any
  user code runs. Note: CUDA reserves very large virtual ranges, so GPU workers normally run
  without ``RLIMIT_AS`` (pass ``memory_limit_bytes=None``) or with ``rlimit="data"``.

Protocol: newline-delimited JSON over private pipes (the child moves its own stdout to its log
file, so a kernel that prints cannot corrupt the channel). JSON rather than pickle so that code
running in the worker cannot execute code in the caller by forging a reply.

Failures come back as a :class:`WorkerError` with ``kind`` one of ``"timeout"`` (wall-clock limit,
worker killed), ``"crash"`` (the process died: segfault, ``os._exit``, killed), ``"exception"``
(the target raised), ``"oom"`` (``MemoryError`` or CUDA out of memory) or ``"cuda-fault"`` (an
illegal address, misaligned access, launch failure: the CUDA context is poisoned). After a
timeout, crash, ``oom`` from ``MemoryError`` or CUDA fault the worker is killed and the next call
starts a fresh one, so a bad kernel costs only its worker.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from htam_core.runtime.children import become_subreaper, child_env, die_with_parent, is_secret, kill_tree
from htam_core.runtime.triton_interp import read_constexpr_spellings

ErrorKind = Literal["timeout", "crash", "exception", "oom", "cuda-fault"]

#: The tasks (processes and threads) a worker and its children may add to its user's count, where
#: ``RLIMIT_NPROC`` applies (not as root): room for nvcc, ptxas, ncu and torch's thread pools, not a fork bomb.
NPROC_HEADROOM = 4096

#: Substrings of an error message that mean the CUDA context is poisoned (sticky errors).
CUDA_FAULT_PATTERNS: tuple[str, ...] = (
    "illegal memory access", "illegal address", "misaligned address", "unspecified launch failure",
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
    "cudaErrorIllegalAddress", "cudaErrorMisalignedAddress", "cudaErrorLaunchFailure",
    "illegal instruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "device-side assert",
    "hardware stack error", "CUDA_ERROR_HARDWARE_STACK_ERROR", "unrecoverable error",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "misaligned", "CUDA_ERROR_ASSERT",
)
_CUDA_OOM_PATTERNS: tuple[str, ...] = ("CUDA out of memory", "CUDA error: out of memory",
                                       "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation")

_STDERR_TAIL = 4000


@dataclass
class WorkerError:
    """A structured failure of one call.

    Attributes:
        kind: ``"timeout" | "crash" | "exception" | "oom" | "cuda-fault"``.
        message: one line for the user (exception type and message, exit signal, limit hit).
        traceback: the child's formatted traceback, or the tail of its stderr for a crash; ``None``
            when there is none.
        exc_type: the exception's class name for ``"exception"``/``"oom"``/``"cuda-fault"``.
    """

    kind: ErrorKind
    message: str
    traceback: str | None = None
    exc_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"kind": self.kind, "message": self.message, "traceback": self.traceback,
                "exc_type": self.exc_type}


@dataclass
class WorkerResult:
    """The outcome of :func:`run_in_worker`.

    Attributes:
        ok: the target returned normally; ``value`` holds its (JSON-decoded) return value.
        value: the return value, or ``None`` on failure.
        error: the failure, or ``None`` when ``ok``.
        duration_s: wall-clock seconds the call took, including a worker start if one was needed.
        worker_pid: pid of the worker that ran (or tried to run) the call.
        restarted: the worker was killed after this call (timeout, crash, fault) and will be
            started afresh for the next one.
    """

    ok: bool
    value: Any = None
    error: WorkerError | None = None
    duration_s: float = 0.0
    worker_pid: int | None = None
    restarted: bool = False


def minimal_env(
    *, gpu_index: int | None = None, interpret: bool | None = None, extra: dict[str, str] | None = None,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """Build the clean environment of a worker: :func:`~htam_core.runtime.children.child_env` (the allow-list,
    never a secret-looking name, ``HTAM_MEMORY*`` or the LLM key's variable) with the worker's GPU and Triton
    settings.

    Args:
        gpu_index: index of the GPU the worker may use, among the caller's visible GPUs. Sets
            ``CUDA_VISIBLE_DEVICES`` to that one device (mapped through the caller's own
            ``CUDA_VISIBLE_DEVICES`` list when set). ``None`` leaves visibility unchanged.
        interpret: ``True`` sets ``TRITON_INTERPRET=1`` (Triton kernels run on the CPU through the
            interpreter) and, without ``gpu_index``, hides every GPU; ``False`` removes it; ``None``
            keeps the caller's setting.
        extra: further variables. Names that look like secrets (``*KEY*``, ``*TOKEN*``,
            ``*SECRET*``, ...) or ``HTAM_MEMORY*`` are dropped, whatever the caller asks.
        base: the environment to filter (default ``os.environ``).

    Returns:
        A new dict. Its ``PYTHONPATH`` starts with the directory holding ``htam_core`` so that the
        worker can import it, followed by the caller's ``PYTHONPATH``; also ``PYTHONUNBUFFERED=1`` and
        ``PYTHONDONTWRITEBYTECODE=1``.
    """
    src = dict(os.environ if base is None else base)
    env = child_env(src)
    if gpu_index is not None:
        visible = src.get("CUDA_VISIBLE_DEVICES")
        ids = [s.strip() for s in visible.split(",") if s.strip()] if visible else []
        if ids and 0 <= gpu_index < len(ids):
            env["CUDA_VISIBLE_DEVICES"] = ids[gpu_index]
        else:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu_index)
    if interpret is True:
        env["TRITON_INTERPRET"] = "1"
        if gpu_index is None:
            env["CUDA_VISIBLE_DEVICES"] = ""  # interpreter workers run on the CPU, even on a GPU host
    elif interpret is False:
        env.pop("TRITON_INTERPRET", None)
    for k, v in (extra or {}).items():
        if not is_secret(k):
            env[k] = str(v)
    return env


#: Seconds between checks of whether the worker is still alive while waiting for its reply.
_EXIT_POLL_S = 0.25

class WorkerPool:
    """One persistent worker process, started lazily and restarted after a fatal failure.

    Calls are serialized (one at a time per pool; a lock makes it safe from several threads).
    Use one pool per GPU: ``WorkerPool("gpu0", gpu_index=0)``.

    Args:
        key: the pool's name (``"default"``, ``"gpu0"``, ``"cpu-interpret"`` ...).
        env: extra environment variables for the worker (secrets are filtered, see
            :func:`minimal_env`).
        cwd: working directory of the worker. Default: a private temporary directory created for
            this pool and removed by :meth:`close`.
        memory_limit_bytes: address-space (or data) limit of the worker in bytes, set in the child
            with ``resource.setrlimit`` before any target code runs; ``None`` for no limit.
        rlimit: ``"as"`` (``RLIMIT_AS``, the default) or ``"data"`` (``RLIMIT_DATA``, which
            tolerates CUDA's large ``PROT_NONE`` reservations).
        gpu_index: GPU this worker may see (``CUDA_VISIBLE_DEVICES``), or ``None``.
        interpret: run Triton through ``TRITON_INTERPRET=1`` (``True``), never (``False``), or
            keep the caller's setting (``None``).
        sys_path: directories prepended to the worker's ``sys.path`` (e.g. a test fixtures dir).
        start_timeout_s: seconds a new worker may take to report ready.
        warm_imports: modules every new worker imports right after it starts (``["torch"]`` for a GPU worker:
            :func:`warm_up`, which also creates torch's CUDA context when there is a GPU), so that the first
            call does not pay for them. A failed warm-up is ignored (the call that needs the module says why).
        keep_warm: after a call that killed the worker (timeout, crash, fault), start and warm its replacement
            at once in a background thread instead of at the next call.

    Attributes:
        starts: worker processes started by this pool; calls: calls of target code on the current worker
            (a warm-up is not one; a fresh worker has 0); start_seconds: wall seconds spent starting and warming
            workers.
    """

    def __init__(
        self, key: str = "default", *, env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None,
        memory_limit_bytes: int | None = None, rlimit: Literal["as", "data"] = "as",
        gpu_index: int | None = None, interpret: bool | None = None, sys_path: list[str] | None = None,
        start_timeout_s: float = 60.0, warm_imports: list[str] | None = None, keep_warm: bool = False,
    ) -> None:
        self.key = key
        self.warm_imports = list(warm_imports or [])
        self.keep_warm = keep_warm
        self.calls = 0
        self.start_seconds = 0.0
        self.gpu_index = gpu_index
        self.memory_limit_bytes = memory_limit_bytes
        self.rlimit = rlimit
        self.sys_path = [str(p) for p in (sys_path or [])]
        self.start_timeout_s = start_timeout_s
        self.env = minimal_env(gpu_index=gpu_index, interpret=interpret, extra=env)
        self._own_cwd = cwd is None
        self.cwd = Path(cwd) if cwd is not None else Path(tempfile.mkdtemp(prefix=f"htam-worker-{_safe(key)}-"))
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._log_path = self.cwd / f".htam-worker-{_safe(key)}.log"
        self._log_fh: Any = None
        self._lock = threading.Lock()
        self._next_id = 0
        self.starts = 0

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """Pid of the live worker, or ``None`` when none is running."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _start(self) -> None:
        t0 = time.monotonic()
        try:
            self._start_process()
            if self.warm_imports:
                self._call_locked("htam_core.runtime.worker:warm_up", {"modules": self.warm_imports},
                                  self.start_timeout_s)
                if self._proc is None or self._proc.poll() is not None:
                    self._start_process()  # the warm-up killed it: a cold worker; the call says what fails
        finally:
            dt = time.monotonic() - t0
            self.start_seconds += dt
            _note_start(dt)
        self.calls = 0

    def prestart(self) -> int | None:
        """Start (and warm) the worker now unless one is running; returns its pid (``None`` when the warm-up
        killed it). Waits for a call in progress.

        Raises:
            RuntimeError: the worker process cannot start.
        """
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            return self.pid

    def prestart_in_background(self) -> threading.Thread:
        """:meth:`prestart` on a daemon thread (a start failure is left for the next call to report); returns
        the thread."""
        def quiet() -> None:
            with contextlib.suppress(Exception):
                self.prestart()

        t = threading.Thread(target=quiet, name=f"htam-prestart-{_safe(self.key)}", daemon=True)
        t.start()
        return t

    def _start_process(self) -> None:
        self._kill()
        self.cwd.mkdir(parents=True, exist_ok=True)
        config = {"memory_limit_bytes": self.memory_limit_bytes, "rlimit": self.rlimit,
                  "sys_path": self.sys_path}
        self._log_fh = open(self._log_path, "ab")  # noqa: SIM115 - kept open for the child's life
        self._log_start = self._log_path.stat().st_size
        self._proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "htam_core.runtime.worker", "--child", json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log_fh, cwd=str(self.cwd),
            env=self.env, start_new_session=True, close_fds=True,
        )
        self._buf = b""
        self.starts += 1
        msg = self._read_message(self.start_timeout_s)
        if not isinstance(msg, dict) or msg.get("ready") is not True:
            tail = self._stderr_tail()
            self._kill()
            raise RuntimeError(f"worker {self.key!r} did not start: {msg!r}\n{tail}")

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.returncode is None:  # not reaped: its pid (and process group) is still its own
                # the worker and everything it started (a fork loop, a double fork, a setsid): its orphans are
                # its own children (it is a subreaper), so the whole tree is found; a dead worker's group is
                # killed too (what it left there)
                kill_tree(proc.pid)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            for f in (proc.stdin, proc.stdout):
                with contextlib.suppress(Exception):
                    f.close()  # type: ignore[union-attr]
        if self._log_fh is not None:
            with contextlib.suppress(Exception):
                self._log_fh.close()
            self._log_fh = None

    def kill_now(self) -> None:
        """Kill the worker's process group at once, without waiting for a call in progress (:meth:`close` and
        :meth:`restart` wait for it): the running call then returns a ``crash`` error, and the next call starts
        a fresh worker. For a process that is shutting down while a long call (Nsight Compute, a comparison)
        holds the pool; the lock is not taken, so it is safe from any thread."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            kill_tree(proc.pid)

    def restart(self) -> None:
        """Kill the worker now; the next call starts a fresh one."""
        with self._lock:
            self._kill()

    def close(self) -> None:
        """Stop the worker and remove the private working directory (if the pool created it)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                with contextlib.suppress(Exception):
                    self._proc.stdin.write(b'{"quit": true}\n')  # type: ignore[union-attr]
                    self._proc.stdin.flush()  # type: ignore[union-attr]
                    self._proc.wait(timeout=2)
            self._kill()
            if self._own_cwd:
                shutil.rmtree(self.cwd, ignore_errors=True)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- I/O -------------------------------------------------------------------------------
    def _read_message(self, timeout_s: float | None) -> Any:
        """Read one JSON line from the worker. Returns the object, ``_TIMEOUT`` or ``_EOF``.

        The worker's exit is watched too (every :data:`_EXIT_POLL_S`), not only the pipe's end: processes the worker
        forked inherit its stdout, so a worker that dies while they live would show no end of file until the last
        of them exits, and its crash would be reported as a timeout after the whole limit."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if remaining is not None and remaining <= 0:
                    return _TIMEOUT
                wait = _EXIT_POLL_S if remaining is None else min(remaining, _EXIT_POLL_S)
                if not sel.select(wait):
                    if self._proc.poll() is not None and not sel.select(0):
                        return _EOF  # the worker is gone and wrote nothing more: a crash, whoever holds the pipe
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return _EOF
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            return _GARBLED

    def _stderr_tail(self) -> str:
        try:
            with open(self._log_path, "rb") as f:
                f.seek(max(self._log_start, f.seek(0, 2) - _STDERR_TAIL))
                return f.read().decode("utf-8", "replace")
        except (OSError, AttributeError):
            return ""

    # -- calls -------------------------------------------------------------------------------
    def run(self, target: str, kwargs: dict[str, Any] | None = None, timeout_s: float = 60.0) -> WorkerResult:
        """Run ``target(**kwargs)`` in the worker and return its JSON-serializable result.

        Args:
            target: ``"package.module:function"`` or ``"/path/to/file.py:function"``.
            kwargs: JSON-serializable keyword arguments.
            timeout_s: wall-clock limit in seconds for this call (a worker start is not counted).

        Returns:
            A :class:`WorkerResult`; never raises for failures of the target. The return value
            must be JSON-serializable (``NaN``/``inf`` allowed), else the call fails with kind
            ``"exception"``.

        Raises:
            RuntimeError: the worker process itself cannot start (broken interpreter/environment).
            TypeError: ``kwargs`` is not JSON-serializable.
        """
        json.dumps(kwargs or {})  # TypeError before anything starts
        with self._lock:
            t0 = time.monotonic()
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            r = self._call_locked(target, kwargs, timeout_s)
            self.calls += 1
            r.duration_s = time.monotonic() - t0
        if r.restarted and self.keep_warm:
            self.prestart_in_background()  # the replacement starts now, not at the next call
        return r

    def _call_locked(self, target: str, kwargs: dict[str, Any] | None, timeout_s: float) -> WorkerResult:
        """One request to the running worker (the pool's lock is held)."""
        request_body = json.dumps({"target": target, "kwargs": kwargs or {}})
        t0 = time.monotonic()
        assert self._proc is not None and self._proc.stdin is not None
        pid = self._proc.pid
        self._next_id += 1
        req_id = self._next_id
        self._log_start = self._log_path.stat().st_size if self._log_path.exists() else 0
        try:
            self._proc.stdin.write(f'{{"id": {req_id}, "call": {request_body}}}\n'.encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            msg: Any = _EOF
        else:
            msg = self._read_message(timeout_s)
        dt = time.monotonic() - t0
        if msg is _TIMEOUT:
            self._kill()
            err = WorkerError("timeout", f"{target} did not finish within {timeout_s:g} s; "
                              "the worker was killed and will be restarted", self._stderr_tail() or None)
            return WorkerResult(False, None, err, dt, pid, True)
        if msg is _EOF or msg is _GARBLED or not isinstance(msg, dict) or msg.get("id") != req_id:
            err = self._crash_error(target, garbled=msg is not _EOF)
            return WorkerResult(False, None, err, dt, pid, True)
        if msg.get("ok"):
            return WorkerResult(True, msg.get("value"), None, dt, pid, False)
        e = msg.get("error") or {}
        err = WorkerError(e.get("kind", "exception"), e.get("message", "unknown error"),
                          e.get("traceback"), e.get("exc_type"))
        restart = bool(msg.get("restart"))
        if restart:
            self._kill()
        return WorkerResult(False, None, err, dt, pid, restart)

    def _crash_error(self, target: str, *, garbled: bool) -> WorkerError:
        proc = self._proc
        code: int | None = None
        if proc is not None:
            code = _exit_status_unreaped(proc, 5.0)
            if code is not None:  # a zombie, not reaped yet: its group id cannot be reused, so kill what is left
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
        tail = self._stderr_tail()
        self._kill()
        if garbled:
            how = "sent a garbled reply (something wrote to the worker's result channel)"
        elif code is None:
            how = "stopped answering"
        elif code < 0:
            try:
                how = f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        kind: ErrorKind = "crash"
        if "MemoryError" in tail or (code == -signal.SIGKILL and "Killed" in tail):
            kind = "oom"
        elif any(p in tail for p in CUDA_FAULT_PATTERNS):
            kind = "cuda-fault"
        return WorkerError(kind, f"the worker running {target} {how}; it will be restarted", tail or None)


def _exit_status_unreaped(proc: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """Wait up to ``timeout_s`` for ``proc`` to end without reaping it (``waitid`` with ``WNOWAIT``), so that its
    pid stays its own while its process group is killed. Returns its exit status as :attr:`Popen.returncode`
    gives it (negative for a signal), or ``None`` when it still runs."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # already reaped
            return proc.returncode
        if info is not None:
            return -info.si_status if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else info.si_status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


_TIMEOUT = object()
_EOF = object()
_GARBLED = object()


def _safe(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key)[:40]


# -- registry of persistent pools ---------------------------------------------------------------
_POOLS: dict[str, WorkerPool] = {}
_POOLS_LOCK = threading.Lock()


def get_pool(key: str = "default", **config: Any) -> WorkerPool:
    """Return the persistent pool named ``key``, creating it with ``config`` on first use.

    ``config`` takes :class:`WorkerPool`'s keyword arguments. When a pool of that key exists
    with a different configuration, it is closed and replaced; the warmth options (``warm_imports``,
    ``keep_warm``) are not part of that comparison: a caller that asks for them only adds them to the pool, so
    two callers of one worker (the verifier and the timer of a GPU) never replace each other's worker.
    """
    isolation = {k: v for k, v in config.items() if k not in _WARMTH}
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is not None and isolation and getattr(pool, "_config", None) != isolation:
            pool.close()
            pool = None
        if pool is None:
            pool = WorkerPool(key, **config)
            pool._config = isolation  # type: ignore[attr-defined]
            _POOLS[key] = pool
        else:
            for name in _WARMTH:
                if config.get(name):
                    setattr(pool, name, list(config[name]) if name == "warm_imports" else config[name])
        return pool


#: Options of :class:`WorkerPool` that change how warm a worker is kept, not what it may do.
_WARMTH = ("warm_imports", "keep_warm")


def run_in_worker(target: str, kwargs: dict[str, Any] | None = None, timeout_s: float = 60.0,
                  pool_key: str = "default", **pool_config: Any) -> WorkerResult:
    """Run ``target(**kwargs)`` in the persistent worker ``pool_key`` (see :meth:`WorkerPool.run`).

    Args:
        target: ``"module:function"`` or ``"/path/file.py:function"``.
        kwargs: JSON-serializable keyword arguments.
        timeout_s: wall-clock limit in seconds.
        pool_key: which persistent worker to use (one per GPU: ``"gpu0"``).
        pool_config: :class:`WorkerPool` options used when the pool is created.
    """
    return get_pool(pool_key, **pool_config).run(target, kwargs, timeout_s)


def shutdown_all() -> None:
    """Stop every persistent worker (registered with :mod:`atexit`)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for p in pools:
        with contextlib.suppress(Exception):
            p.close()


def close_pool(key: str) -> bool:
    """Stop the persistent worker ``key`` (if it exists), so that its process and all it holds (a CUDA
    context, cached GPU memory) are gone; the next call with that key starts a fresh one.

    Returns:
        whether a pool of that key existed.
    """
    with _POOLS_LOCK:
        pool = _POOLS.pop(key, None)
    if pool is None:
        return False
    with contextlib.suppress(Exception):
        pool.close()
    return True


def kill_pool(key: str) -> bool:
    """Kill the persistent worker ``key`` at once, also in the middle of a call (:meth:`WorkerPool.kill_now`); the
    call returns a ``crash`` error and the pool stays registered (its next call starts a fresh worker).

    Returns:
        whether a pool of that key existed.
    """
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
    if pool is not None:
        pool.kill_now()
    return pool is not None


_START_STATS = {"starts": 0, "seconds": 0.0}
_START_LOCK = threading.Lock()


def _note_start(seconds: float) -> None:
    with _START_LOCK:
        _START_STATS["starts"] += 1
        _START_STATS["seconds"] += seconds


def start_stats() -> dict[str, float]:
    """Worker starts in this process so far, all pools together: ``{"starts": n, "seconds": s}`` (wall seconds
    spent starting and warming workers). The optimize loop reports the difference over its run as its
    process-start phase."""
    with _START_LOCK:
        return dict(_START_STATS)


def warm_up(modules: list[str]) -> dict[str, Any]:
    """Worker target: import ``modules`` (a list of module names) so that later calls find them loaded; when
    ``torch`` is among them and a GPU is visible, also create its CUDA context. Returns ``{"pid", "imported"}``.

    A module that fails to import is skipped (the call that needs it reports the error)."""
    imported = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - a missing optional module is the later call's error
            continue
        imported.append(name)
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            if torch.cuda.is_available():
                torch.cuda.init()
    return {"pid": os.getpid(), "imported": imported}


def kill_all() -> None:
    """Kill every persistent worker at once (:meth:`WorkerPool.kill_now`), also those in the middle of a call.

    A language server calls it on ``shutdown``: a profile thread blocked in a long worker call would otherwise
    keep the server alive after ``exit`` (threads are joined before :func:`shutdown_all` runs at exit), and
    the worker, in its own session, would keep the GPU after the server is gone.
    """
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for p in pools:
        p.kill_now()


atexit.register(shutdown_all)


# -- child side -----------------------------------------------------------------------------------
def _resolve(target: str) -> Any:
    mod_name, sep, func_name = target.rpartition(":")
    if not sep or not mod_name or not func_name:
        raise ValueError(f"target must be 'module:function' or 'file.py:function', got {target!r}")
    if mod_name.endswith(".py"):
        path = Path(mod_name)
        spec = importlib.util.spec_from_file_location(f"_htam_target_{abs(hash(str(path)))}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(mod_name)
    obj = module
    for part in func_name.split("."):
        obj = getattr(obj, part)
    return obj


def _exc_chain_text(exc: BaseException) -> str:
    parts, seen, cur = [], set(), exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(f"{type(cur).__name__}: {cur}")
        cur = cur.__cause__ or cur.__context__
    return "\n".join(parts)


def _cuda_context_poisoned() -> str | None:
    """After an exception: probe CUDA (if already initialized); return the sticky error or None."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - any failure here means the context is unusable
            return f"{type(e).__name__}: {e}"
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            cupy.cuda.runtime.deviceSynchronize()
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__}: {e}"
    return None


def release_memory() -> None:
    """Give back what the last call left on the GPU: when CUDA is initialised in this process, collect reference
    cycles, then return the CUDA caching allocator's unused blocks to the driver.

    A persistent worker runs many calls; without this, tensors held by cycles (closures over a harness's
    inputs) live until Python's next full collection, and the allocator keeps their blocks reserved, so a
    later call, or another worker on the same GPU, runs out of memory on inputs that fit alone (KernelBench's
    6 GiB elementwise inputs did, 2026-12-02). Never raises. The idea is PyTorch's own advice for a
    long-lived process (``torch.cuda.empty_cache``, "Memory management" in the CUDA semantics notes).
    """
    import gc

    torch = sys.modules.get("torch")
    with contextlib.suppress(Exception):
        if torch is not None and torch.cuda.is_initialized():  # a CPU worker pays nothing
            gc.collect()
            torch.cuda.empty_cache()


def classify_exception(exc: BaseException) -> tuple[ErrorKind, bool]:
    """Map an exception raised by target code to ``(kind, restart_worker)``.

    ``MemoryError`` -> ``("oom", True)``; CUDA out-of-memory -> ``("oom", False)`` (the context
    stays usable); messages matching :data:`CUDA_FAULT_PATTERNS` -> ``("cuda-fault", True)``;
    anything else -> ``("exception", False)``.
    """
    if isinstance(exc, MemoryError):
        return "oom", True
    text = _exc_chain_text(exc)
    if type(exc).__name__ == "OutOfMemoryError" or any(p in text for p in _CUDA_OOM_PATTERNS):
        return "oom", False
    if any(p.lower() in text.lower() for p in CUDA_FAULT_PATTERNS):
        return "cuda-fault", True
    return "exception", False


def _limit_processes() -> None:
    """Cap the tasks this worker and its children may start (``RLIMIT_NPROC``) at the user's present count plus
    :data:`NPROC_HEADROOM`. The limit counts every task of the user, so it is set relative to now; root ignores
    it, so nothing is set there. Never raises."""
    import resource

    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return
    uid = os.geteuid()
    count = 0
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == uid:
                count += len(os.listdir(entry / "task"))
    if count == 0:
        return
    with contextlib.suppress(ValueError, OSError):
        _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        want = count + NPROC_HEADROOM
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        resource.setrlimit(resource.RLIMIT_NPROC, (want, hard))


def _end_children() -> None:
    """Kill what the call just finished left running (children that fork, sleep or daemonize): they end with
    their candidate."""
    kill_tree(os.getpid(), include_root=False)


def _child_main(config_json: str) -> None:  # pragma: no cover - runs in the child process
    config = json.loads(config_json)
    die_with_parent()  # the caller was killed (even by SIGKILL): this worker and its children go too
    become_subreaper()  # orphans of a candidate's children stay ours, so _end_children finds them
    _limit_processes()
    read_constexpr_spellings()  # the interpreter reads `language.constexpr` as the compiler does (no-op on a GPU)
    # Private channel: keep the pipes on new fds, then point fd 0 at /dev/null and fd 1 at stderr
    # (the log), so target code that reads stdin or prints cannot touch the protocol.
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    limit = config.get("memory_limit_bytes")
    if limit:
        import resource

        which = resource.RLIMIT_DATA if config.get("rlimit") == "data" else resource.RLIMIT_AS
        resource.setrlimit(which, (int(limit), int(limit)))
    for p in reversed(config.get("sys_path") or []):
        sys.path.insert(0, p)

    def send(obj: dict[str, Any]) -> None:
        try:
            data = json.dumps(obj)
        except (TypeError, ValueError) as e:
            data = json.dumps({"id": obj.get("id"), "ok": False, "restart": False, "error": {
                "kind": "exception", "exc_type": type(e).__name__,
                "message": f"the result is not JSON-serializable: {e}", "traceback": None}})
        proto_out.write(data.encode() + b"\n")

    send({"ready": True, "pid": os.getpid()})
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = proto_in.read(1 << 16)
            if not chunk:
                _end_children()
                return
            buf += chunk
        line, _, buf = buf.partition(b"\n")
        req = json.loads(line)
        if req.get("quit"):
            _end_children()
            return
        req_id = req.get("id")
        call = req.get("call") or {}
        try:
            fn = _resolve(call["target"])
            value = fn(**(call.get("kwargs") or {}))
            _end_children()
            send({"id": req_id, "ok": True, "value": value})
        except BaseException as exc:  # noqa: BLE001 - every failure of target code is reported
            if isinstance(exc, KeyboardInterrupt):
                raise
            kind, restart = classify_exception(exc)
            tb = traceback.format_exc()
            from htam_core.types.errors import exception_text

            message = exception_text(exc)
            if isinstance(exc, SystemExit):
                message = f"target code called sys.exit({exc.code!r})"
                restart = True
            _end_children()
            if kind == "exception":
                poisoned = _cuda_context_poisoned()
                if poisoned:
                    kind, restart = "cuda-fault", True
                    message += f" (CUDA context poisoned: {poisoned})"
            send({"id": req_id, "ok": False, "restart": restart,
                  "error": {"kind": kind, "exc_type": type(exc).__name__, "message": message[:4000],
                            "traceback": tb[-20000:]}})
            if restart:
                return
            del exc
        release_memory()


if __name__ == "__main__" and len(sys.argv) >= 3 and sys.argv[1] == "--child":
    _child_main(sys.argv[2])
