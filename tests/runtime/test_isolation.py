"""Isolation of the worker processes that run untrusted kernel code.

What a worker must not see (API keys, including a custom ``--llm-api-key-env`` variable, and the memory store's
location), where it runs (a private temporary directory), its memory limit, and that a fault, a hang or an
out-of-memory costs only that worker: another worker is untouched and the next call of the same pool works.
"""

from __future__ import annotations

import os
import resource
import tempfile
from pathlib import Path

import pytest

from htam_core.runtime.worker import WorkerPool, run_in_worker, shutdown_all

FIX = str(Path(__file__).resolve().parents[1] / "fixtures" / "workers")
T = "isolation_targets:"
SECRET = "sk-test-0123456789abcdef"
CUSTOM_VAR = "ACME_LLM_ACCESS"  # what a user names with --llm-api-key-env: no KEY/TOKEN in its name


@pytest.fixture
def secrets_in_parent(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv(CUSTOM_VAR, SECRET + "-custom")
    monkeypatch.setenv("HTAM_MEMORY", "/home/someone/.local/share/htam/memory.sqlite")
    monkeypatch.setenv("HTAM_MEMORY_DIR", "/home/someone/.local/share/htam")
    monkeypatch.setenv("HF_TOKEN", "hf_abc")
    return monkeypatch


def _assert_clean(env: dict[str, str]) -> None:
    for name in ("OPENAI_API_KEY", CUSTOM_VAR, "HTAM_MEMORY", "HTAM_MEMORY_DIR", "HF_TOKEN"):
        assert name not in env, name
    assert not any(SECRET in v for v in env.values()), "a secret value leaked under another name"
    assert not any("memory.sqlite" in v for v in env.values())


def test_worker_env_has_no_api_keys_nor_memory_store(secrets_in_parent):
    from htam_core.generate.config import LLMConfig

    # the parent can read the key through the configured variable...
    assert LLMConfig(model="m", api_key_env=CUSTOM_VAR).api_key() == SECRET + "-custom"
    # ...and a worker started now never sees it, even when a caller tries to pass it on
    with WorkerPool("iso-env", sys_path=[FIX], env={"OPENAI_API_KEY": SECRET, "HTAM_MEMORY": "/x"}) as pool:
        r = pool.run(T + "environment", {}, timeout_s=60)
        assert r.ok, r.error
        _assert_clean(r.value)
        assert r.value["PYTHONPATH"] and "PATH" in r.value


def test_registry_pools_used_by_the_verifier_are_clean(secrets_in_parent):
    # run_in_worker is what verify_in_worker, strict_reverify and the GPU profiler call
    r = run_in_worker(T + "environment", {}, timeout_s=60, pool_key="iso-registry", interpret=True, sys_path=[FIX])
    try:
        assert r.ok, r.error
        _assert_clean(r.value)
        assert r.value["TRITON_INTERPRET"] == "1" and r.value["CUDA_VISIBLE_DEVICES"] == ""
    finally:
        shutdown_all()


def test_cwd_is_a_private_temporary_directory():
    parent_cwd = os.getcwd()
    pool = WorkerPool("iso-cwd", sys_path=[FIX])
    try:
        r = pool.run(T + "where", {}, timeout_s=60)
        assert r.ok, r.error
        cwd = Path(r.value["cwd"])
        assert cwd == pool.cwd.resolve() and str(cwd) != parent_cwd
        assert cwd.is_relative_to(Path(tempfile.gettempdir()).resolve()) and cwd.name.startswith("htam-worker-")
        assert r.value["pid"] != os.getpid()
    finally:
        pool.close()
    assert not cwd.exists()  # removed with the pool


def test_rlimit_as_is_set_when_asked():
    limit = 3 << 30
    with WorkerPool("iso-rlimit", sys_path=[FIX], memory_limit_bytes=limit) as pool:
        r = pool.run(T + "limits", {}, timeout_s=60)
        assert r.ok and r.value["as"] == [limit, limit]
    with WorkerPool("iso-rlimit-data", sys_path=[FIX], memory_limit_bytes=limit, rlimit="data") as pool:
        r = pool.run(T + "limits", {}, timeout_s=60)
        assert r.ok and r.value["data"] == [limit, limit]
        assert r.value["as"] == list(resource.getrlimit(resource.RLIMIT_AS))  # unchanged: CUDA-friendly
    with WorkerPool("iso-nolimit", sys_path=[FIX]) as pool:
        assert pool.run(T + "limits", {}, timeout_s=60).value["as"] == list(resource.getrlimit(resource.RLIMIT_AS))


def test_fault_hang_and_oom_cost_only_that_worker():
    with WorkerPool("iso-victim", sys_path=[FIX], memory_limit_bytes=1 << 30) as bad, \
            WorkerPool("iso-bystander", sys_path=[FIX]) as other:
        other_pid = other.run(T + "where", {}, timeout_s=60).value["pid"]
        pids = {bad.run(T + "where", {}, timeout_s=60).value["pid"]}
        calls = [("standins:segfault", {}, 60, "crash"), ("standins:loop_forever", {}, 1.5, "timeout"),
                 (T + "hog", {"n_bytes": 4 << 30}, 60, "oom")]
        for target, kwargs, limit, kind in calls:
            r = bad.run(target, kwargs, timeout_s=limit)
            assert not r.ok and r.error.kind == kind, (kind, r.error)
            assert r.restarted  # a crash, a hang and a MemoryError each replace the worker
            nxt = bad.run(T + "where", {}, timeout_s=60)
            assert nxt.ok, nxt.error  # the next call of the same pool works
            pids.add(nxt.value["pid"])
        assert len(pids) == 4  # a fresh worker after each failure
        again = other.run(T + "where", {}, timeout_s=60)
        assert again.ok and again.value["pid"] == other_pid  # the bystander was never touched


def test_wild_access_in_a_triton_interpreter_kernel_crashes_only_its_worker():
    pytest.importorskip("triton")
    with WorkerPool("iso-triton", sys_path=[FIX], interpret=True) as pool:
        r = pool.run(T + "triton_wild_load", {}, timeout_s=120)
        assert not r.ok and r.error.kind in ("crash", "exception"), r.error
        ok = pool.run(T + "where", {}, timeout_s=60)
        assert ok.ok


@pytest.mark.gpu
def test_cuda_illegal_address_costs_only_the_worker_then_a_normal_call_works():
    pytest.importorskip("cupy")
    with WorkerPool("iso-gpu", sys_path=[FIX], gpu_index=0, interpret=False) as pool:
        assert pool.run(T + "cuda_ok", {}, timeout_s=120).ok
        r = pool.run(T + "cuda_illegal_address", {}, timeout_s=120)
        assert not r.ok and r.error.kind == "cuda-fault" and r.restarted, r.error
        ok = pool.run(T + "cuda_ok", {}, timeout_s=120)
        assert ok.ok and ok.value == pytest.approx(2 * sum(range(1024)))
