"""How htam starts a child process: its environment, its lifeline to the parent, and how its tree is killed.

Every child the project starts (worker processes, the harness inference's recording run, nvcc, ptxas,
cuobjdump, Nsight Compute, nvidia-smi, the editor's harness-probe helper, Dask worker processes) gets its
environment from :func:`child_env`: an allow-list of named variables (:data:`ALLOWED_ENV`, plus the locale's
``LC_*``), never a prefix such as ``CUDA_*`` or ``TRITON_*`` that would let a secret stored under such a name
through. On top of the allow-list, names that look like secrets (:func:`is_secret`) and every variable
registered with :func:`forget_variable` (the one naming the LLM API key, ``--llm-api-key-env``) are removed,
even when a caller passes them explicitly.

A long-lived child calls :func:`die_with_parent` as it starts: a watchdog thread notices that its parent is
gone (the parent pid changed: the parent was killed, even by SIGKILL) and then kills the child's own
descendants and exits. ``PR_SET_PDEATHSIG`` (:func:`set_parent_death_signal`) is used only for a one-shot
child whose starting thread waits for it (``subprocess.run``): Linux sends that signal when the *thread* that
forked the child ends, which would kill a persistent worker started from a short-lived thread.

:func:`kill_tree` stops (SIGSTOP) and then kills (SIGKILL) a process and all its descendants, found through
``psutil``; a process that made itself a child subreaper (:func:`become_subreaper`, Linux) keeps the orphans of
its descendants as its own children, so a double fork or ``setsid`` cannot take a process out of the tree.

The ideas: allow-listing a child's environment is the OWASP "least privilege" advice and what ``sudo``'s
``env_reset`` does; ``PR_SET_PDEATHSIG`` and ``PR_SET_CHILD_SUBREAPER`` are prctl(2); stopping a tree before
killing it is how ``pkill``-style tools avoid racing a fork loop.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import psutil

#: Variables a child may inherit, by exact name: the shell basics, compilers, CUDA, Triton and PyTorch settings
#: that change how kernels build and run, and htam's own settings that a child reads.
ALLOWED_ENV: frozenset[str] = frozenset({
    # shell basics and the locale (``LC_*`` is allowed by prefix: :data:`ALLOWED_PREFIXES`)
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "XDG_CACHE_HOME", "SYSTEMROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "MPLBACKEND",
    # compilers and linkers
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "CC", "CXX",
    "CUDAHOSTCXX", "MAX_JOBS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",
    # thread counts
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    # CUDA toolkit and driver
    "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING", "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE", "CUDA_CACHE_DISABLE", "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
    # Triton
    "TRITON_INTERPRET", "TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR",
    "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH",
    "TRITON_LIBDEVICE_PATH", "TRITON_DEBUG", "TRITON_ALWAYS_COMPILE", "TRITON_KERNEL_DUMP",
    "TRITON_PRINT_AUTOTUNING", "TRITON_F32_DEFAULT", "TRITON_DEFAULT_FP_FUSION",
    # PyTorch and CuPy
    "TORCH_EXTENSIONS_DIR", "TORCH_CUDA_ARCH_LIST", "TORCH_HOME", "TORCHINDUCTOR_CACHE_DIR",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "PYTORCH_NVML_BASED_CUDA_CHECK",
    "TORCH_SHOW_CPP_STACKTRACES", "TORCH_USE_CUDA_DSA", "CUPY_CACHE_DIR",
    # htam's own settings read in a child
    "HTAM_CACHE_DIR", "HTAM_DEBUG", "HTAM_INFER", "HTAM_INFER_GPU", "HTAM_INFER_TIMEOUT", "HTAM_LLMC",
    "HTAM_KB_PROBLEMS", "HTAM_GPU_RESULTS", "HTAM_FORGET_ENV",
})
#: Where a process lists the variables it forgot (:func:`forget_variable`), comma-separated, so that a child
#: started with the whole environment by a library (multiprocessing, Dask) forgets them too.
FORGET_ENV = "HTAM_FORGET_ENV"
#: Prefixes allowed: the locale only (``LC_ALL``, ``LC_CTYPE``, ...).
ALLOWED_PREFIXES: tuple[str, ...] = ("LC_",)
_SECRET_RE = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH)|^HTAM_MEMORY", re.IGNORECASE)
_forgotten: set[str] = set()
_forgotten_lock = threading.Lock()

#: Set by :func:`child_env` for a Python child: the pid of the process that started it (read by
#: :func:`die_with_parent`, so that a parent killed before the child started watching is noticed).
PARENT_ENV = "HTAM_PARENT_PID"

#: Seconds between two looks of :func:`die_with_parent`'s watchdog at the parent pid.
WATCHDOG_POLL_S = 0.25
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def is_secret(name: str) -> bool:
    """Whether a variable named ``name`` must never reach a child: its name looks like a secret (``*KEY*``,
    ``*TOKEN*``, ``*SECRET*``, ``*PASSW*``, ``*CREDENTIAL*``, ``*AUTH*``, any case), it is ``HTAM_MEMORY*``
    (the memory store's location), or it was registered with :func:`forget_variable`."""
    with _forgotten_lock:
        if name in _forgotten:
            return True
    return bool(_SECRET_RE.search(name))


def forget_variable(name: str) -> None:
    """Register ``name`` (the variable holding the LLM API key, ``--llm-api-key-env``) so that no child started
    by this process ever receives it, whatever its name and whatever a caller passes. Idempotent."""
    if name:
        with _forgotten_lock:
            _forgotten.add(name)
            os.environ[FORGET_ENV] = ",".join(sorted(_forgotten))


def child_env(base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None, *,
              python: bool = True) -> dict[str, str]:
    """The environment of a child process.

    Args:
        base: the environment to filter (default ``os.environ``).
        extra: variables to set on top (after filtering ``base``); a name that :func:`is_secret` is dropped.
        python: the child imports htam (a Python child): its ``PYTHONPATH`` starts with the folder holding
            ``htam_core``, followed by the caller's ``PYTHONPATH``; ``PYTHONUNBUFFERED=1`` and
            ``PYTHONDONTWRITEBYTECODE=1`` are set, and :data:`PARENT_ENV` holds this process's pid. ``False`` (nvcc, ptxas, ncu's own process): the caller's
            ``PYTHONPATH`` is kept as it is.

    Returns:
        A new dict holding only :data:`ALLOWED_ENV` names and ``LC_*`` from ``base``, then ``extra``; never a
        secret-looking name nor a forgotten one. ``PATH`` is always set (``os.defpath`` when missing).
    """
    src = dict(os.environ if base is None else base)
    env = {k: v for k, v in src.items()
           if (k in ALLOWED_ENV or k.startswith(ALLOWED_PREFIXES)) and not is_secret(k)}
    for k, v in (extra or {}).items():
        if not is_secret(k):
            env[k] = str(v)
    env.setdefault("PATH", os.defpath)
    paths = [p for p in src.get("PYTHONPATH", "").split(os.pathsep) if p]
    if python:
        pkg_root = str(Path(__file__).resolve().parents[2])
        # keep the caller's PYTHONPATH after htam's root: packages installed with `pip --target` (a GPU host with
        # carried wheels) are only importable through it, and the child must import what the caller can
        paths = [pkg_root] + [p for p in paths if p != pkg_root]
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env[PARENT_ENV] = str(os.getpid())  # for die_with_parent: a parent gone before the child looked
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def scrub_environ(*, keep_forgotten: bool = False) -> None:
    """In a child started by a library that passes no environment of its own (``multiprocessing``'s spawn,
    Dask's nanny): reduce ``os.environ`` to :func:`child_env` before anything else runs, so that code running
    later, and every process it starts, sees only the allow-list.

    The variables the parent forgot (listed in :data:`FORGET_ENV`) are forgotten here too, so that no child of
    this process gets them. ``keep_forgotten`` keeps them in this process's own ``os.environ``: for a process
    that runs htam's own code and talks to the LLM endpoint (a Dask worker of ``htam bench kernelbench
    --engine llm``), never kernel code.
    """
    listed = [n for n in os.environ.get(FORGET_ENV, "").split(",") if n]
    for name in listed:
        forget_variable(name)
    keep = child_env(dict(os.environ), python=False)
    if keep_forgotten:
        keep.update({n: os.environ[n] for n in listed if n in os.environ})
    for name in list(os.environ):
        if name not in keep:
            del os.environ[name]
    os.environ.update(keep)


def _load_libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


# loaded once here: a ``preexec_fn`` runs between fork and exec, where loading a library could deadlock
_LIBC = _load_libc()


def _prctl(option: int, arg: int) -> bool:
    if _LIBC is None:
        return False
    try:
        return _LIBC.prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Linux ``prctl(PR_SET_PDEATHSIG, sig)`` in the calling process: ``sig`` arrives when the thread that
    started this process ends. For a one-shot child only (a ``preexec_fn`` of ``subprocess.run``, whose
    thread waits for the child). Returns whether it was set (``False`` elsewhere than Linux); never raises."""
    return _prctl(_PR_SET_PDEATHSIG, int(sig))


_PR_SET_DUMPABLE = 4


def hide_own_environ() -> bool:
    """Linux ``prctl(PR_SET_DUMPABLE, 0)`` in the calling process when its environment holds a secret-looking
    variable (:func:`is_secret`): ``/proc/<pid>/environ`` (and ``mem``) of this process become readable by
    root only, so a child running as the same user (a kernel's ``__main__``, LLM-written code) cannot read the
    API key from its parent, although it knows the parent's pid. Root's children still can: the worker is not a
    sandbox (docs/SECURITY.md). Side effect: no core dumps and no debugger attach by the same user. Returns
    whether it was set; never raises. The idea: ``proc(5)``, ``/proc/pid`` ownership of non-dumpable processes."""
    if not any(is_secret(n) for n in os.environ):
        return False
    return _prctl(_PR_SET_DUMPABLE, 0)


def become_subreaper() -> bool:
    """Linux ``prctl(PR_SET_CHILD_SUBREAPER, 1)``: orphans among this process's descendants (a double fork,
    a ``setsid``) become its children instead of init's, so :func:`kill_tree` still finds them. Returns whether
    it was set; never raises."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def descendants(pid: int) -> list[psutil.Process]:
    """The live descendants of process ``pid`` (children, grandchildren, ...); empty when ``pid`` is gone."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def _signal_all(procs: Iterable[psutil.Process], sig: int) -> None:
    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            p.send_signal(sig)


def kill_tree(pid: int, *, include_root: bool = True, rounds: int = 20) -> int:
    """Kill the process ``pid`` (with ``include_root``) and all its descendants, even ones forking as fast as
    they can: every process found is stopped with SIGSTOP, the tree is read again until no new process shows,
    then all get SIGKILL (and the process group ``pid`` leads, if any, too).

    Args:
        pid: the root process.
        include_root: kill the root too (``False``: only its descendants, e.g. a worker cleaning up after a
            call).
        rounds: at most this many reads of the tree.

    Returns:
        The number of processes signalled. Never raises.
    """
    seen: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        root = None
    if root is not None and include_root and pid != os.getpid():
        _signal_all([root], signal.SIGSTOP)
    for _ in range(rounds):
        new = [p for p in descendants(pid) if p.pid not in seen and p.pid != os.getpid()]
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        seen.update((p.pid, p) for p in new)
    victims = list(seen.values())
    if root is not None and include_root and pid != os.getpid():
        victims.append(root)
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(pid, signal.SIGKILL)
    _signal_all(victims, signal.SIGKILL)
    if victims and not include_root:  # our own children: reap them so none stays a zombie
        deadline = time.monotonic() + 2.0
        for p in victims:
            with contextlib.suppress(psutil.Error, ChildProcessError, OSError):
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
    return len(victims)


def die_with_parent(poll_s: float = WATCHDOG_POLL_S) -> None:
    """In a long-lived child: start a daemon thread that, once the parent is gone (the parent pid changed,
    whatever killed the parent, SIGKILL included), kills this process's descendants and exits at once
    (``os._exit(1)``). Call it first thing in the child. Idempotent per process."""
    global _watching
    if _watching == os.getpid():
        return
    _watching = os.getpid()
    parent = _expected_parent()
    if os.getppid() != parent:  # the parent died before this child started watching
        kill_tree(os.getpid(), include_root=False)
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                kill_tree(os.getpid(), include_root=False)
                os._exit(1)

    threading.Thread(target=watch, name="htam-parent-watchdog", daemon=True).start()


_watching: int | None = None


def _expected_parent() -> int:
    """The pid of the process that started this one: ``multiprocessing``'s record of it for a process that
    ``multiprocessing`` spawned, else :data:`PARENT_ENV` (set by :func:`child_env`), else the present parent."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid:
        return int(parent.pid)
    raw = os.environ.get(PARENT_ENV, "")
    return int(raw) if raw.isdigit() else os.getppid()


def start_as_child(*, keep_forgotten: bool = False) -> None:
    """The first call of a long-lived Python child that a library started with the parent's whole environment
    (the editor's harness-probe helper, a ``multiprocessing`` initializer; a Dask worker's preload):
    :func:`scrub_environ` (``keep_forgotten`` as there), then :func:`die_with_parent`."""
    scrub_environ(keep_forgotten=keep_forgotten)
    die_with_parent()


def one_shot_kwargs() -> dict[str, object]:
    """Keyword arguments for ``subprocess.run`` of a one-shot child (nvcc, ptxas, ncu, the recording run):
    the allow-listed environment for a non-Python tool and a parent-death signal, so the child dies with the
    process that waits for it. A caller that needs a Python child's environment passes its own ``env``."""
    return {"env": child_env(python=False), "preexec_fn": set_parent_death_signal}


__all__ = ["ALLOWED_ENV", "ALLOWED_PREFIXES", "FORGET_ENV", "PARENT_ENV", "become_subreaper", "child_env", "descendants", "die_with_parent",
           "forget_variable", "hide_own_environ", "is_secret", "kill_tree", "one_shot_kwargs", "scrub_environ",
           "set_parent_death_signal", "start_as_child"]
