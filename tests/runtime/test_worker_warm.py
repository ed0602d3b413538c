"""Warm workers: pre-started with their imports, replaced at once after a crash, never replaced by a caller that
only asks for more warmth; the language server's session pre-starts the GPU worker when it finds a GPU."""

from __future__ import annotations

import time

import pytest

from htam_core.editor.session import Session
from htam_core.runtime.worker import WorkerPool, close_pool, get_pool, start_stats


def _wait_for_pid(pool: WorkerPool, not_pid: int | None, timeout_s: float = 60.0) -> int | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid = pool.pid
        if pid is not None and pid != not_pid:
            return pid
        time.sleep(0.05)
    return None


def test_prestart_warms_imports_and_calls_reuse_that_process() -> None:
    before = start_stats()
    with WorkerPool("warm-test", warm_imports=["json", "no_such_module_htam"]) as pool:
        pid = pool.prestart()
        assert pid is not None and pool.starts == 1 and pool.calls == 0 and pool.start_seconds > 0
        r = pool.run("os:getcwd")
        assert r.ok and r.worker_pid == pid
        r = pool.run("os:getpid")
        assert r.ok and r.value == pid and pool.calls == 2 and pool.starts == 1
    assert start_stats()["starts"] == before["starts"] + 1


def test_a_crashed_worker_is_replaced_in_the_background() -> None:
    with WorkerPool("keep-warm-test", keep_warm=True) as pool:
        first = pool.prestart()
        r = pool.run("os:_exit", {"status": 3})
        assert not r.ok and r.error.kind == "crash" and r.restarted
        second = _wait_for_pid(pool, first)  # started without a call asking for it
        assert second is not None and second != first and pool.starts == 2
        assert pool.run("os:getpid").value == second and pool.calls == 1


def test_a_hung_worker_is_replaced_in_the_background(tmp_path) -> None:
    target = tmp_path / "hang.py"
    target.write_text("import time\ndef hang():\n    time.sleep(30)\n")
    with WorkerPool("keep-warm-hang", keep_warm=True) as pool:
        first = pool.prestart()
        r = pool.run(f"{target}:hang", timeout_s=0.5)
        assert r.error.kind == "timeout"
        assert _wait_for_pid(pool, first) not in (None, first)


def test_warmth_options_do_not_replace_a_shared_worker() -> None:
    close_pool("warmth-share")
    try:
        pool = get_pool("warmth-share", interpret=True, gpu_index=None)
        pid = pool.prestart()
        same = get_pool("warmth-share", interpret=True, gpu_index=None, warm_imports=["json"], keep_warm=True)
        assert same is pool and pool.pid == pid and pool.keep_warm and pool.warm_imports == ["json"]
        other = get_pool("warmth-share", interpret=False, gpu_index=None)
        assert other is not pool  # a different isolation is still a different worker
    finally:
        close_pool("warmth-share")


def test_session_prestarts_the_gpu_worker_when_it_finds_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr("htam_core.measure.gpu.prestart_gpu_worker", lambda i=0: calls.append(i))
    monkeypatch.setattr("htam_core.editor.session._gpu_name", lambda i: "Fake GPU")
    s = Session(gpu_index=1)
    s.look_up_gpu()
    assert calls == [1]
    s.configure(static=True)
    assert calls == [1]  # static mode: no worker
    monkeypatch.setattr("htam_core.editor.session._gpu_name", lambda i: None)
    s2 = Session()
    s2.look_up_gpu()
    assert calls == [1]  # no GPU: nothing started


def test_a_warm_up_that_kills_the_worker_leaves_a_cold_one(tmp_path) -> None:
    (tmp_path / "boom_on_import.py").write_text("import os\nos._exit(7)\n")
    with WorkerPool("warm-boom", warm_imports=["boom_on_import"], sys_path=[str(tmp_path)]) as pool:
        r = pool.run("os:getpid")
        assert r.ok and r.value == pool.pid and pool.starts == 2  # the warm one died; a cold one answers
