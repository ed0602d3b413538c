"""The compile-only verdict is cached by content: a kernel version nvcc compiled once is not compiled again (in
another candidate folder, another run or the editor); an edit, or a failure, compiles again."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from htam_core.harness.base import Harness
from htam_core.verify import run as verify_run


def _counting_nvcc(tmp_path: Path, fail: bool = False) -> tuple[str, Path]:
    """A fake nvcc that appends a line to a log per run and succeeds (or fails with an error line)."""
    log = tmp_path / "nvcc.log"
    exe = tmp_path / "nvcc"
    body = 'echo "k.cu(1): error: bad" >&2; exit 1' if fail else "exit 0"
    exe.write_text(f"#!/bin/sh\necho run >> {log}\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe), log


def _runs(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def _harness(folder: Path, text: str) -> Harness:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "k.cu"
    f.write_text(text)
    return Harness(kind="spec", path=str(f), kernel="k", language="cuda")


def test_a_compiled_version_is_not_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  private_htam_env: None) -> None:
    nvcc, log = _counting_nvcc(tmp_path)
    monkeypatch.setattr(verify_run, "find_nvcc", lambda: nvcc)
    text = "__global__ void k(float *x) { x[0] = 1.0f; }\n"
    first = verify_run.compile_check(_harness(tmp_path / "a", text))
    assert first.status == "unverified" and _runs(log) == 1
    again = verify_run.compile_check(_harness(tmp_path / "b", text))  # another folder, same version
    assert again.status == "unverified" and "(cached)" in again.messages[0] and _runs(log) == 1
    edited = verify_run.compile_check(_harness(tmp_path / "c", text.replace("1.0f", "2.0f")))
    assert edited.status == "unverified" and _runs(log) == 2


def test_a_failure_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_htam_env: None) -> None:
    nvcc, log = _counting_nvcc(tmp_path, fail=True)
    monkeypatch.setattr(verify_run, "find_nvcc", lambda: nvcc)
    h = _harness(tmp_path / "a", "__global__ void k(float *x) { x[0] = y; }\n")
    assert verify_run.compile_check(h).status == "error"
    assert verify_run.compile_check(h).status == "error" and _runs(log) == 2
