"""The LLM engine against a real model: SmolLM2-135M-Instruct served by llama-cpp-python on 127.0.0.1, on the CPU.

Skipped, with the reason, when llama-cpp-python's server is not importable (by ``$HTAM_LLM_PYTHON`` or this
interpreter; ``make install-llm`` builds it) or the model cannot be fetched. The model is tiny: its replies are
rarely correct kernels, so the test asserts the bookkeeping, not a speedup: the run ends cleanly, each reply is
accounted for in report.json and llm.jsonl (a checked candidate, a repeat of a kernel already evaluated, an
endpoint fault, or refused: no code), tokens in and out are logged per reply, and the memory records exactly the
steps that had a candidate. ``make test`` builds the server in the background while the suite runs and runs this
file after it (``.ci/local-llm.sh``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from htam_core.generate.local_model import (
    PYTHON_ENV,
    LocalModelError,
    LocalServer,
    fetch_model,
    llama_cpp_missing,
    model_spec,
)
from htam_core.memory import open_store
from htam_core.memory.records import ENDPOINT_FAULT
from htam_core.runtime.children import child_env
from tests.optimize.report_checks import copy_example

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "HTAM_TEST_LOCAL_LLM_KEY"
#: Statuses of a step whose reply held a candidate that was checked.
CANDIDATE = {"win", "loss", "neutral", "incorrect", "failed"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """The small model served on a free loopback port for the module's tests."""
    python = os.environ.get(PYTHON_ENV) or sys.executable
    missing = llama_cpp_missing(python)
    if missing:
        pytest.skip(missing)
    spec = model_spec("smollm2")
    try:
        path = fetch_model(spec, python=sys.executable)
    except (LocalModelError, OSError) as exc:
        pytest.skip(f"the model {spec.key} cannot be had: {exc}")
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LocalServer(path, spec, python=python, log=log) as srv:
        yield srv


def test_optimize_with_a_real_local_model(server: LocalServer, tmp_path: Path) -> None:
    src = copy_example(tmp_path / "src")
    out, mem = tmp_path / "out", tmp_path / "mem.sqlite3"
    env = child_env(extra={"TRITON_INTERPRET": "1", "HTAM_INFER": "0", "HTAM_CACHE_DIR": str(tmp_path / "cache")})
    env[KEY_ENV] = "sk-local-no-auth"  # the local server accepts any key; set here, past the child filter
    cmd = [sys.executable, "-m", "htam_core.cli.main", "optimize", str(src), "--kernel", "add_kernel",
           "--engine", "llm", "--budget", "2", "--static", "--out", str(out), "--memory", str(mem),
           "--llm-base-url", server.base_url, "--llm-model", server.spec.name, "--llm-api-key-env", KEY_ENV,
           "--llm-max-tokens", "384", "--llm-timeout", "300", "--llm-max-repairs", "1", "--llm-max-faults", "2"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr

    report = json.loads((out / "report.json").read_text())
    steps = report["steps"]
    assert 1 <= len(steps) <= 2
    for s in steps:  # each step is a checked candidate or an endpoint fault, nothing else
        assert s["status"] in CANDIDATE | {ENDPOINT_FAULT}, s
        if s["status"] == ENDPOINT_FAULT:
            assert s["verified_on"] == "none" and s["correct"] is None and s["params"].get("fault"), s
        else:
            assert s["verified_on"] in ("interpreter", "compile-only") and s["candidate_path"], s

    # every reply that came back is accounted for: checked (a candidate, or its absence reported), or refused
    log = [json.loads(line) for line in (out / "llm.jsonl").read_text().splitlines()]
    events = [r["event"] for r in log]
    if events.count("reply") == 0:  # the endpoint never answered in time (a busy machine): all faults, no record
        assert steps and all(s["status"] == ENDPOINT_FAULT for s in steps), steps
        assert events.count("error") == events.count("request"), events
    for i, ev in enumerate(events):
        if ev == "reply":
            assert i + 1 < len(events) and events[i + 1] in ("check", "parse_error", "error"), events
    made = [s for s in steps if s["status"] != ENDPOINT_FAULT]
    assert events.count("check") >= len(made)

    # the memory holds exactly the steps that had a candidate; endpoint faults are never recorded
    with open_store(mem) as st:
        records = list(st.records())
    assert sorted(r.step for r in records) == sorted(s["strategy"] for s in made)
    assert all(r.outcome.status != ENDPOINT_FAULT for r in records)
    usage = [r for r in log if r["event"] == "reply"]
    assert all(r["status"] == 200 for r in usage)
    # tokens in and out are recorded for every reply (a real server always reports its usage)
    assert all(isinstance(r["prompt_tokens"], int) and r["prompt_tokens"] > 0 for r in usage), usage
    assert all(isinstance(r["completion_tokens"], int) and r["completion_tokens"] > 0 for r in usage), usage
    # a repeat (a reply whose kernel was already evaluated) is checked, makes no candidate and spends one step
    repeats = [m for m in report.get("not_made", []) if "already evaluated" in m.get("reason", "")]
    assert events.count("check") >= len(made) + len(repeats)
