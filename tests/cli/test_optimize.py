"""``htam optimize``: the Triton suite kernels, a CUDA kernel without a GPU, errors, the LLM flags
(``--apply``: test_optimize_apply.py).

Every run uses ``--static`` (so the tests mean the same with or without a GPU), a private memory store
(``--memory``) and ``HTAM_CACHE_DIR`` in tmp, on copies of the bundled files.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.profile.static_cuda import find_nvcc
from tests.optimize.report_checks import CORPUS, SUITE, check_report, copy_example, snapshot, timing_values
from tests.support.openai_server import OpenAIServer, Scripted


def _suite_kernels() -> list[tuple[str, str]]:
    """``(file, kernel)`` of every Triton harness in bench/suite/htam.toml."""
    spec = tomllib.loads((SUITE / "htam.toml").read_text())
    return sorted((t["file"], name) for name, t in spec["kernel"].items() if t["file"].endswith(".py"))


pytestmark = pytest.mark.usefixtures("private_htam_env")


def _optimize(file: Path, kernel: str, tmp_path: Path, *extra: str) -> int:
    return main(["optimize", str(file), "--kernel", kernel, "--static", "--out", str(tmp_path / "out"),
                 "--memory", str(tmp_path / "mem.sqlite3"), *extra])


def test_suite_lists_the_five_triton_kernels() -> None:
    kernels = _suite_kernels()
    assert len(kernels) == 5 and all(f.endswith(".py") for f, _ in kernels)


@pytest.mark.parametrize(("file", "kernel"), _suite_kernels(), ids=[k for _, k in _suite_kernels()])
def test_suite_kernel_within_budget(file: str, kernel: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    src_dir = tmp_path / "suite"
    shutil.copytree(SUITE, src_dir)
    before = snapshot(src_dir)
    src = src_dir / file
    assert _optimize(src, kernel, tmp_path, "--budget", "3") == 0
    out = capsys.readouterr().out
    assert "nothing was timed" in out and str(tmp_path / "out" / "report.md") in out
    data = check_report(tmp_path / "out", before[file].decode())
    steps = data["steps"]
    assert 1 <= len(steps) <= 3
    if len(steps) < 3:
        assert any(w.startswith(f"stopped after {len(steps)} candidates") for w in data["warnings"])
    assert data["mode"] == "static" and data["measured"] is False
    for s in steps:
        if s["accepted"]:
            assert s["correct"] is True and s["verified_on"] == "interpreter", s
        if s["correct"] is True:
            assert s["verified_on"] == "interpreter"
    assert timing_values(data) == []
    assert snapshot(src_dir) == before  # no --apply: the user's folder is byte-identical


def test_default_budget_on_the_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    start = src.read_bytes()
    assert _optimize(src, "add_kernel", tmp_path) == 0
    data = check_report(tmp_path / "out", start.decode())
    assert data["task"]["budget"] == 8
    assert 1 <= len(data["steps"]) <= 8
    if len(data["steps"]) < 8:
        assert any(w.startswith("stopped after") for w in data["warnings"])
    assert all(s["correct"] is True for s in data["steps"] if s["accepted"])
    assert src.read_bytes() == start
    # regression (new-user trial): the header said "...: not measured (3 kept)" next to "none is kept"
    md = (tmp_path / "out" / "report.md").read_text()
    header = next(ln for ln in md.splitlines() if ln.startswith("- every kept step's gain exceeds"))
    assert "none is kept" in data["summary"]
    followed = sum(1 for s in data["steps"] if s["accepted"])
    assert followed >= 1, data["steps"]  # the example's static chain: otherwise this check means nothing
    assert header == ("- every kept step's gain exceeds its measured spread: not measured (static mode: no step is "
                      f"kept; the loop followed {followed} step(s) of the static ranking)"), header
    assert " kept)" not in md
    # regression (new-user trial): report.json's reproduction said kept_steps 4 beside "none is kept"
    rep = data["reproduction"]
    assert rep["kept_steps"] == 0 and rep["followed_steps"] == followed, rep
    # regression (new-user trial): the static report said nothing of input sets, launch-bound sets or the win rule
    assert "- on a GPU: every input set is timed" in md and "launch-bound" in md and "1 + spread" in md


def test_json_output_and_default_out_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    src = copy_example(tmp_path / "src")
    monkeypatch.chdir(tmp_path)
    assert main(["optimize", str(src), "--kernel", "add_kernel", "--static", "--budget", "1", "--json",
                 "--memory", str(tmp_path / "mem.sqlite3")]) == 0
    result = json.loads(capsys.readouterr().out)
    out = tmp_path / "htam-out" / "vector_add-add_kernel"
    assert Path(result["report_dir"]) == Path("htam-out/vector_add-add_kernel")
    data = check_report(out, src.read_text())
    assert result["steps"] == data["steps"] and result["best_speedup"] is None


@pytest.mark.skipif(find_nvcc() is None, reason="needs nvcc (CUDA candidates are compile-checked)")
def test_cuda_without_gpu_is_unverified_and_untimed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src" / "sgemm_naive.cu"
    src.parent.mkdir()
    shutil.copy(CORPUS / "sgemm_naive.cu", src)
    start = src.read_bytes()
    assert _optimize(src, "sgemm_naive", tmp_path, "--budget", "2") == 0
    stdout = capsys.readouterr().out
    assert "nothing was timed" in stdout
    data = check_report(tmp_path / "out", start.decode(), ext=".cu")
    assert data["mode"] == "static" and data["measured"] is False and "nothing was timed" in data["summary"]
    assert data["steps"]
    for s in data["steps"]:
        assert s["correct"] is not True, s  # never "correct" without running it
        if s["status"] not in ("failed", "incorrect"):
            assert s["correct"] is None and s["verified_on"] == "compile-only"
            assert any("unverified" in m for m in s["messages"]), s["messages"]
        if s["accepted"]:
            assert not s["params"].get("changes_numerics")
    assert timing_values(data) == []
    md = (tmp_path / "out" / "report.md").read_text()
    assert "unverified (compile-only)" in md and "yes (" not in md and "×" not in md
    assert src.read_bytes() == start


@pytest.mark.parametrize(("argv", "needle"), [
    (["optimize", "{tmp}/missing.py", "--kernel", "k"], "missing.py does not exist"),
    (["optimize", "{src}", "--kernel", "nope"], "vector_add.py (kernels: add_kernel)"),
    (["optimize", "{src}", "--kernel", "add_kernel", "--budget", "0"], "--budget must be at least 1"),
    (["optimize", "{src}", "--kernel", "add_kernel", "--engine", "llm"], "--engine llm needs --llm-model"),
    (["optimize", "{tmp}/src/htam.toml", "--kernel", "add_kernel"], "unsupported file type"),
])
def test_usage_errors_exit_2_with_one_line(argv: list[str], needle: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    args = [a.format(tmp=tmp_path, src=src) for a in argv]
    assert main([*args, "--static", "--memory", str(tmp_path / "m.sqlite3"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("htam: error: ") and needle in lines[0], err
    assert "Traceback" not in err


NO_HARNESS_KERNEL = """import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
"""


def test_no_harness_stops_before_any_candidate_like_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (new-user trial): a Triton file with no ``__main__``, no test and no htam.toml ran the loop,
    exited 0 and wrote ``best.py`` from unverified candidates, said only in a ``note:``. With no harness (only
    the template guess) optimize now stops with exit 2 and the same message and template as ``htam verify``."""
    src = tmp_path / "src" / "nomain.py"
    src.parent.mkdir()
    src.write_text(NO_HARNESS_KERNEL)
    assert main(["verify", str(src), "--kernel", "scale_kernel"]) == 2
    verify_err = capsys.readouterr().err
    assert _optimize(src, "scale_kernel", tmp_path, "--budget", "2") == 2
    cap = capsys.readouterr()
    assert cap.err == verify_err and cap.out == ""
    first = cap.err.splitlines()[0]
    assert first.startswith("htam: error: no harness for kernel 'scale_kernel' in nomain.py"), cap.err
    assert "[kernel.scale_kernel]" in cap.err and "Traceback" not in cap.err
    assert not (tmp_path / "out").exists()  # no best.py, no report: nothing was tried
    assert src.read_text() == NO_HARNESS_KERNEL


def test_unknown_policy_is_one_usage_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    assert main(["optimize", str(src), "--kernel", "add_kernel", "--policy", "greedy"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("htam: error: htam optimize: argument --policy")
    assert "invalid choice: 'greedy'" in err and "Traceback" not in err and "usage:" not in err


def test_no_record_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    assert _optimize(src, "add_kernel", tmp_path, "--budget", "1", "--no-record") == 0
    from htam_core.memory import open_store

    with open_store(tmp_path / "mem.sqlite3") as st:
        assert st.count() == 0
    assert not (tmp_path / "default-memory.sqlite3").exists()


def test_llm_engine_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_TEST_CLI_LLM_KEY", "sk-loopback-CLI-0123456789")
    src = copy_example(tmp_path / "src")
    start = src.read_text()
    good = start.replace("BLOCK_SIZE = 64", "BLOCK_SIZE = 256")
    with OpenAIServer([Scripted.content(f"```python\n{good}```")]) as srv:
        rc = _optimize(src, "add_kernel", tmp_path, "--budget", "1", "--engine", "llm", "--llm-base-url",
                       srv.base_url, "--llm-model", "loopback-model", "--llm-api-key-env", "HTAM_TEST_CLI_LLM_KEY")
        assert rc == 0 and len(srv.requests) == 1
    data = check_report(tmp_path / "out", start)
    (step,) = data["steps"]
    assert step["correct"] is True and step["verified_on"] == "interpreter"
    assert data["task"]["llm"]["model"] == "loopback-model"
    assert data["task"]["llm"]["api_key_env"] == "HTAM_TEST_CLI_LLM_KEY"
    assert "sk-loopback-CLI" not in (tmp_path / "out" / "report.json").read_text()
    assert (tmp_path / "out" / "best.py").read_text() == good and src.read_text() == start


def test_bad_llm_settings_are_a_usage_error_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: a bad --llm-* value (LLMConfigError) escaped the CLI as a traceback."""
    src = copy_example(tmp_path / "src")
    rc = main(["optimize", str(src), "--kernel", "add_kernel", "--engine", "llm", "--llm-model", "m",
               "--llm-timeout", "-1", "--out", str(tmp_path / "out")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "timeout must be positive" in err and "Traceback" not in err


def test_hung_llm_endpoint_prints_waiting_lines_and_one_note(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--llm-timeout is the total per request: an endpoint dripping one byte a second is cut at 3 s, the
    wait is printed every second, and the run ends with one note naming the endpoint and the limit."""
    monkeypatch.setenv("HTAM_TEST_CLI_LLM_KEY", "sk-loopback-CLI-0123456789")
    src = copy_example(tmp_path / "src")
    with OpenAIServer([Scripted.drip(1.0, Scripted.content("```python\nx = 1\n```"))]) as srv:
        rc = _optimize(src, "add_kernel", tmp_path, "--budget", "1", "--engine", "llm", "--llm-base-url",
                       srv.base_url, "--llm-model", "loopback-model", "--llm-api-key-env", "HTAM_TEST_CLI_LLM_KEY",
                       "--llm-timeout", "3")
        assert rc == 0 and len(srv.requests) == 1
    out = capsys.readouterr()
    assert f"waiting for loopback-model at {srv.base_url}: 1 s of 3 s" in out.err
    assert f"waiting for loopback-model at {srv.base_url}: 2 s of 3 s" in out.err
    notes = [ln for ln in out.err.splitlines() if ln.startswith("note:")]
    assert len(notes) == 1 and "LLM endpoint fault" in notes[0] and "within 3 s" in notes[0], out.err
    assert "Traceback" not in out.err
    (step,) = check_report(tmp_path / "out", src.read_text())["steps"]
    assert step["status"] == "endpoint_fault"
