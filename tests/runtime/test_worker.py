"""Worker isolation: timeouts, crashes, OOM and faults cost only the worker ."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from htam_core.runtime.worker import WorkerPool, classify_exception, minimal_env, run_in_worker

FIX = str(Path(__file__).resolve().parents[1] / "fixtures" / "workers")
T = "standins:"


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("test-cpu", sys_path=[FIX], memory_limit_bytes=1 << 30) as p:
        yield p


def test_call_returns_value_and_worker_persists(pool):
    r1 = pool.run(T + "add", {"a": 1, "b": 2}, timeout_s=30)
    r2 = pool.run(T + "add", {"a": 3, "b": 4}, timeout_s=30)
    assert r1.ok and r1.value["sum"] == 3 and r2.value["sum"] == 7
    assert r1.value["pid"] == r2.value["pid"] == r2.worker_pid  # persistent, not the caller
    assert r1.value["pid"] != os.getpid()


def test_infinite_loop_times_out_then_next_call_works(pool):
    r = pool.run(T + "loop_forever", {}, timeout_s=1.0)
    assert not r.ok and r.error.kind == "timeout" and r.restarted
    assert 1.0 <= r.duration_s < 10
    ok = pool.run(T + "add", {"a": 1, "b": 1}, timeout_s=30)
    assert ok.ok and ok.value["sum"] == 2 and ok.worker_pid != r.worker_pid


def test_os_exit_is_a_crash(pool):
    r = pool.run(T + "hard_exit", {"code": 3}, timeout_s=30)
    assert not r.ok and r.error.kind == "crash" and "status 3" in r.error.message
    assert pool.run(T + "add", {"a": 0, "b": 0}, timeout_s=30).ok


def test_segfault_is_a_crash(pool):
    r = pool.run(T + "segfault", {}, timeout_s=30)
    assert not r.ok and r.error.kind == "crash" and "SIGSEGV" in r.error.message
    assert pool.run(T + "add", {"a": 0, "b": 0}, timeout_s=30).ok


def test_memory_error_under_rlimit_is_oom(pool):
    r = pool.run(T + "allocate", {"n_bytes": 4 << 30}, timeout_s=30)
    assert not r.ok and r.error.kind == "oom", r.error
    small = pool.run(T + "allocate", {"n_bytes": 1 << 20}, timeout_s=30)
    assert small.ok and small.value == 1 << 20


def test_exception_is_structured_and_worker_kept(pool):
    before = pool.pid or pool.run(T + "add", {"a": 0, "b": 0}, timeout_s=30).worker_pid
    r = pool.run(T + "raise_value_error", {"msg": "nope"}, timeout_s=30)
    assert not r.ok and r.error.kind == "exception" and r.error.exc_type == "ValueError"
    assert "nope" in r.error.message and "raise_value_error" in r.error.traceback
    assert not r.restarted and pool.pid == before


def test_cuda_fault_message_restarts_worker(pool):
    r = pool.run(T + "fake_cuda_fault", {}, timeout_s=30)
    assert not r.ok and r.error.kind == "cuda-fault" and r.restarted
    assert pool.run(T + "add", {"a": 0, "b": 0}, timeout_s=30).ok


def test_print_does_not_corrupt_protocol(pool):
    r = pool.run(T + "noisy", {}, timeout_s=30)
    assert r.ok and r.value == "quiet"


def test_unserializable_result_is_an_exception(pool):
    r = pool.run(T + "unserializable", {}, timeout_s=30)
    assert not r.ok and r.error.kind == "exception" and "JSON" in r.error.message


def test_sys_exit_is_reported(pool):
    r = pool.run(T + "call_exit", {}, timeout_s=30)
    assert not r.ok and "sys.exit" in r.error.message
    assert pool.run(T + "add", {"a": 0, "b": 0}, timeout_s=30).ok


def test_clean_environment_and_private_cwd(pool, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("HTAM_MEMORY", "/tmp/mem.sqlite")
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda")
    env = minimal_env(gpu_index=1, interpret=True, extra={"MY_TOKEN": "x", "FOO": "1"})
    assert "OPENAI_API_KEY" not in env and "HTAM_MEMORY" not in env and "MY_TOKEN" not in env
    assert env["CUDA_HOME"] == "/usr/local/cuda" and env["FOO"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["TRITON_INTERPRET"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    assert minimal_env(gpu_index=1)["CUDA_VISIBLE_DEVICES"] == "5"
    wenv = pool.run(T + "env", {}, timeout_s=30).value
    assert not any("KEY" in k or k.startswith("HTAM_MEMORY") for k in wenv)
    assert pool.run(T + "cwd", {}, timeout_s=30).value == str(pool.cwd)


def test_run_in_worker_registry_and_bad_target():
    r = run_in_worker("no_such_module_xyz:f", {}, timeout_s=30, pool_key="test-registry")
    assert not r.ok and r.error.kind == "exception" and "no_such_module_xyz" in r.error.message
    r = run_in_worker("nocolon", {}, timeout_s=30, pool_key="test-registry")
    assert not r.ok and "module:function" in r.error.message


def test_triton_interpreter_kernel_that_loops_forever():
    pytest.importorskip("triton")
    with WorkerPool("test-interp", sys_path=[FIX], interpret=True) as p:
        warm = p.run(T + "triton_add", {}, timeout_s=120)  # imports torch/triton: not part of the limit
        assert warm.ok, warm.error
        r = p.run(T + "triton_loop_forever", {}, timeout_s=4)
        assert not r.ok and r.error.kind == "timeout", r.error
        ok = p.run(T + "triton_add", {}, timeout_s=120)
        assert ok.ok, ok.error
        assert ok.value == pytest.approx(2 * sum(range(100)))


def test_classify_exception():
    assert classify_exception(MemoryError()) == ("oom", True)
    assert classify_exception(RuntimeError("CUDA error: misaligned address")) == ("cuda-fault", True)
    assert classify_exception(RuntimeError("CUDA out of memory. Tried to allocate")) == ("oom", False)
    assert classify_exception(ValueError("x")) == ("exception", False)


def test_worker_imports_what_the_callers_pythonpath_holds(tmp_path, monkeypatch):
    """Regression: packages installed with ``pip --target DIR`` and reached through PYTHONPATH (the GPU host's
    carried wheels) were invisible to workers, whose minimal env reset PYTHONPATH to htam's root only."""
    import os

    from htam_core.runtime.worker import WorkerPool, minimal_env

    site = tmp_path / "site"
    site.mkdir()
    (site / "only_on_pythonpath.py").write_text("VALUE = 41\n\ndef answer():\n    return VALUE + 1\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    env = minimal_env()
    assert env["PYTHONPATH"].split(os.pathsep)[1] == str(site)
    pool = WorkerPool("pythonpath-regression")
    try:
        r = pool.run("only_on_pythonpath:answer", {}, timeout_s=60)
        assert r.ok, r.error
        assert r.value == 42
    finally:
        pool.close()


def test_kill_all_ends_a_call_in_progress_at_once():
    """Regression (bench_lsp_gpu hung at shutdown): a call blocked in a worker is ended by kill_all, not
    waited for, so a server shutting down does not outlive its client, and the worker does not outlive it."""
    import threading
    import time

    from htam_core.runtime.worker import get_pool, kill_all

    p = get_pool("test-kill-all", sys_path=[FIX])
    assert p.run(T + "add", {"a": 1, "b": 1}, timeout_s=60).ok
    pid = p.pid
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("r", p.run(T + "loop_forever", {}, timeout_s=120)))
    th.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    kill_all()
    th.join(30)
    assert not th.is_alive() and time.monotonic() - t0 < 15
    assert not out["r"].ok and out["r"].error.kind == "crash"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert p.run(T + "add", {"a": 2, "b": 2}, timeout_s=60).value["sum"] == 4  # the next call starts afresh
    p.close()


def test_release_memory_collects_cycles_and_empties_the_cuda_cache_only_when_cuda_is_up(monkeypatch) -> None:
    """After every call a worker gives back what the call left on the GPU (regression: KernelBench's GiB inputs
    held by reference cycles and the caching allocator ran the next problem out of memory, H200 2026-12-02)."""
    import gc
    import sys
    import types
    import weakref

    from htam_core.runtime.worker import release_memory

    emptied: list[bool] = []
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: up[0],
                                                            empty_cache=lambda: emptied.append(True)))
    monkeypatch.setitem(sys.modules, "torch", fake)

    class Node:
        pass

    def cycle() -> weakref.ref:
        a, b = Node(), Node()
        a.other, b.other = b, a
        return weakref.ref(a)

    gc.disable()
    try:
        up = [False]
        ref = cycle()
        release_memory()  # CUDA not initialised: a CPU worker pays nothing
        assert ref() is not None and emptied == []
        up[0] = True
        release_memory()
        assert ref() is None and emptied == [True]
    finally:
        gc.enable()


def test_close_pool_stops_the_worker_and_the_next_call_starts_a_fresh_one() -> None:
    from htam_core.runtime.worker import close_pool, run_in_worker

    first = run_in_worker("os:getpid", {}, timeout_s=30, pool_key="test-close-pool")
    assert first.ok
    assert close_pool("test-close-pool") is True
    assert close_pool("test-close-pool") is False  # gone
    second = run_in_worker("os:getpid", {}, timeout_s=30, pool_key="test-close-pool")
    assert second.ok and second.value != first.value
    close_pool("test-close-pool")
