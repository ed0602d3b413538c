"""Every kind of child htam starts gets the allow-listed environment (no canary secret under any name, the LLM
key's own variable included), and what a candidate forks ends with the candidate."""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from htam_core.runtime import children
from htam_core.runtime.children import child_env, kill_tree, one_shot_kwargs
from htam_core.runtime.worker import WorkerPool

REPO = Path(__file__).resolve().parents[2]
FIX = str(REPO / "tests" / "fixtures" / "workers")
CANARY = "canary-5e1f0c9d"
#: The probe's names: the usual secrets, the memory store, a key variable named under an allowed-looking prefix
#: (``--llm-api-key-env TRITON_LLM_PW``) and a secret under the CUDA prefix.
SECRET_NAMES = ("OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "HTAM_MEMORY", "TRITON_LLM_PW",
                "CUDA_MY_SECRET")


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_core.generate.config import LLMConfig

    for i, name in enumerate(SECRET_NAMES):
        monkeypatch.setenv(name, f"{CANARY}-{i}")
    monkeypatch.setenv(children.FORGET_ENV, "")
    with children._forgotten_lock:  # start from a process that forgot nothing (another test may have)
        saved = set(children._forgotten)
        children._forgotten.clear()
    LLMConfig(model="m", api_key_env="TRITON_LLM_PW")  # what --llm-api-key-env TRITON_LLM_PW does
    yield
    with children._forgotten_lock:
        children._forgotten.clear()
        children._forgotten.update(saved)


def _assert_no_canary(env: dict[str, str] | str, where: str) -> None:
    text = env if isinstance(env, str) else json.dumps(env)
    assert CANARY not in text, f"a canary secret reached {where}"
    if not isinstance(env, str):
        assert not set(SECRET_NAMES) & set(env), where


def _proc_environ(pid: int) -> str:
    return Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")


def test_child_env_is_an_allow_list_without_prefixes(canaries) -> None:
    env = child_env(extra={"GITHUB_TOKEN": CANARY, "TRITON_LLM_PW": CANARY, "FOO": "1"})
    _assert_no_canary(env, "child_env")
    assert env["FOO"] == "1" and env["PATH"]
    assert "TRITON_INTERPRET" in child_env({"TRITON_INTERPRET": "1", "TRITON_LLM_PW": "x"})
    # an allowed name still loses to the forgotten key variable
    children.forget_variable("CUDA_HOME")
    assert "CUDA_HOME" not in child_env({"CUDA_HOME": "/usr/local/cuda"})


def test_worker_process_and_its_environ_file_hold_no_canary(canaries) -> None:
    with WorkerPool("canary-worker", sys_path=[FIX]) as pool:
        r = pool.run("isolation_targets:environment", {}, timeout_s=60)
        assert r.ok, r.error
        _assert_no_canary(r.value, "the worker's os.environ")
        _assert_no_canary(_proc_environ(pool.pid), "/proc/<worker>/environ")


def test_inference_run_of_the_users_main_holds_no_canary(canaries, tmp_path: Path) -> None:
    from htam_core.harness.infer_py import record

    out = tmp_path / "env.json"
    src = tmp_path / "k.py"
    src.write_text("import json, os\n\ndef launch(x):\n    return x\n\nif __name__ == '__main__':\n"
                   f"    open({str(out)!r}, 'w').write(json.dumps(dict(os.environ)))\n"
                   f"    open({str(out)!r} + '.proc', 'wb').write(open('/proc/self/environ', 'rb').read())\n")
    record(src, "launch", timeout_s=120)
    _assert_no_canary(json.loads(out.read_text()), "the inference's run of __main__")
    _assert_no_canary(Path(str(out) + ".proc").read_bytes().decode(), "/proc/<inference run>/environ")


def _fake_tool(tmp_path: Path, name: str) -> Path:
    out = tmp_path / f"{name}.env"
    tool = tmp_path / "bin" / name
    tool.parent.mkdir(exist_ok=True)
    tool.write_text(f"#!/bin/sh\nenv > {out}\ncat /proc/$$/environ >> {out}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return out


def test_tools_run_by_htam_hold_no_canary(canaries, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_core.bench.parallel import visible_gpus
    from htam_core.editor.session import _gpu_name

    out = _fake_tool(tmp_path, "nvidia-smi")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for run in (visible_gpus, lambda: _gpu_name(0)):
        out.unlink(missing_ok=True)
        run()
        _assert_no_canary(out.read_text(), "nvidia-smi")
    # what nvcc, ptxas, cuobjdump and ncu are started with
    r = subprocess.run(["env"], capture_output=True, text=True, **one_shot_kwargs())
    _assert_no_canary(r.stdout, "a one-shot tool")


def _subprocess_calls(path: Path) -> list[tuple[int, set[str], bool]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("run", "Popen")
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"):
            calls.append((node.lineno, {k.arg for k in node.keywords if k.arg},
                          any(k.arg is None for k in node.keywords)))
    return calls


def test_every_child_the_project_starts_gets_an_environment() -> None:
    """Each ``subprocess.run``/``Popen`` in htam_core and the server passes ``env=`` or ``**one_shot_kwargs()``
    (a child started without one would inherit every secret)."""
    bad = []
    for path in [*REPO.joinpath("htam_core").rglob("*.py"), *REPO.joinpath("server").rglob("*.py")]:
        for line, names, spread in _subprocess_calls(path):
            if "env" not in names and not spread:
                bad.append(f"{path.relative_to(REPO)}:{line}")
    assert not bad, bad


def test_harness_probe_helper_and_dask_worker_drop_the_canaries(canaries) -> None:
    from htam_core.editor.harness import HarnessProbe

    helper = HarnessProbe()
    try:
        helper.status(str(REPO / "nowhere.py"), "k", None, timeout_s=120)
        pool = helper._pool
        assert pool is not None
        for name in SECRET_NAMES:
            assert pool.submit(os.getenv, name).result(60) is None, name
    finally:
        helper.shutdown()
    code = ("import json, os\nfrom htam_core.bench.dask_worker_setup import dask_setup\ndask_setup(None)\n"
            "from htam_core.runtime.children import child_env\n"
            "print(json.dumps({'own': dict(os.environ), 'child': child_env()}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    seen = json.loads(r.stdout)
    _assert_no_canary(seen["child"], "a child of a Dask worker")
    # the worker keeps only the LLM key's variable (its tasks ask the endpoint), never the other canaries
    assert {n for n in SECRET_NAMES if n in seen["own"]} == {"TRITON_LLM_PW"}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_processes_a_candidate_forks_end_with_it() -> None:
    with WorkerPool("fork-return", sys_path=[FIX]) as pool:
        r = pool.run("fork_targets:fork_and_return", {"n": 12}, timeout_s=60)
        assert r.ok, r.error
        pids = r.value
        assert len(pids) == 12
        assert not [p for p in pids if _alive(p)], "forked children outlived their candidate"
        assert pool.run("isolation_targets:where", {}, timeout_s=60).ok  # the worker itself lives on


def test_processes_of_a_candidate_that_times_out_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    with WorkerPool("fork-hang", sys_path=[FIX]) as pool:
        r = pool.run("fork_targets:fork_and_hang", {"n": 9, "pid_file": str(pid_file)}, timeout_s=5)
        assert not r.ok and r.error.kind == "timeout"
    pids = [int(p) for p in pid_file.read_text().split()]
    time.sleep(0.5)
    assert not [p for p in pids if _alive(p)], "forked children outlived the worker"


def test_kill_tree_stops_a_fork_loop() -> None:
    loop = subprocess.Popen([sys.executable, "-c", "import os, time\nfor _ in range(200):\n    if os.fork() == 0:\n"
                             "        time.sleep(60); os._exit(0)\n    time.sleep(0.005)\ntime.sleep(60)"],
                            start_new_session=True)
    try:
        time.sleep(0.5)
        found = [p.pid for p in children.descendants(loop.pid)]
        assert found
        kill_tree(loop.pid)
        loop.wait(timeout=10)
        time.sleep(0.3)
        assert not [p for p in found if _alive(p)]
    finally:
        loop.kill()


def test_processes_of_a_candidate_that_kills_its_worker_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    with WorkerPool("fork-crash", sys_path=[FIX]) as pool:
        # the sleepers (60 s) hold the worker's stdout: the crash is seen from the worker's exit, not the pipe's end
        # (a limit below their sleep: read from the pipe alone, the crash would be reported as a timeout)
        r = pool.run("fork_targets:fork_and_crash", {"n": 6, "pid_file": str(pid_file)}, timeout_s=20)
        assert not r.ok and r.error.kind == "crash" and "status 3" in r.error.message, r.error
    pids = [int(p) for p in pid_file.read_text().split()]
    time.sleep(0.5)
    assert not [p for p in pids if _alive(p)], "forked children outlived their crashed worker"


_DASK_MAIN = '''
import json, os
from htam_core.bench.executors import ExecutorOptions, start_local_cluster
from htam_core.generate.config import LLMConfig

def seen():
    from htam_core.runtime.children import child_env
    return {"own": dict(os.environ), "child": child_env()}

if __name__ == "__main__":
    LLMConfig(model="m", api_key_env="TRITON_LLM_PW")
    cluster = start_local_cluster(ExecutorOptions("dask", workers=1))
    try:
        import distributed
        with distributed.Client(cluster) as client:
            print(json.dumps(client.submit(seen, pure=False).result(timeout=120)))
    finally:
        cluster.close()
'''


def test_a_dask_worker_of_a_local_cluster_drops_the_canaries(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.update({name: f"{CANARY}-{i}" for i, name in enumerate(SECRET_NAMES)})
    script = tmp_path / "dask_env.py"
    script.write_text(_DASK_MAIN)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env,
                       cwd=tmp_path)
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    _assert_no_canary(seen["child"], "a child of a Dask worker")
    # the worker process keeps only the LLM key's variable (its tasks ask the endpoint), no other canary
    assert {n for n in SECRET_NAMES if n in seen["own"]} == {"TRITON_LLM_PW"}


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() == 0,
                    reason="Linux and a non-root user: root reads every /proc/<pid>/environ")
def test_a_child_cannot_read_its_parents_environ_when_it_holds_a_key() -> None:
    """Regression: a kernel file's ``__main__`` read the API key from ``/proc/<ppid>/environ`` of htam."""
    code = ("import os, subprocess, sys\n"
            "from htam_core.runtime.children import hide_own_environ\n"
            "assert hide_own_environ()\n"
            "child = 'import os\\ntry:\\n    print(open(f\"/proc/{os.getppid()}/environ\").read())\\n'\\\n"
            "        'except OSError as e:\\n    print(\"refused\", e.errno)'\n"
            "print(subprocess.run([sys.executable, '-c', child], capture_output=True, text=True).stdout)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "OPENAI_API_KEY": CANARY, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert CANARY not in r.stdout and "refused" in r.stdout, r.stdout


def test_hide_own_environ_does_nothing_without_a_secret() -> None:
    code = "from htam_core.runtime.children import hide_own_environ\nprint(hide_own_environ())\n"
    env = {k: v for k, v in os.environ.items() if not children.is_secret(k)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**env, "PYTHONPATH": str(REPO)})
    assert r.stdout.strip() == "False", r.stderr
