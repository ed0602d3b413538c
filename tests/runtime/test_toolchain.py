"""One rule finds nvcc for every command: ``$CUDA_HOME``/``$CUDA_PATH`` first, then ``PATH``."""

from __future__ import annotations

import os
import stat

from htam_core.harness import cu_main
from htam_core.profile import static_cuda
from htam_core.runtime import compiler
from htam_core.runtime.toolchain import find_nvcc


def _fake_nvcc(folder):
    (folder / "bin").mkdir(parents=True)
    exe = folder / "bin" / "nvcc"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def test_cuda_home_wins_over_path(tmp_path, monkeypatch):
    home = _fake_nvcc(tmp_path / "toolkit")
    other = _fake_nvcc(tmp_path / "other")
    monkeypatch.setenv("PATH", os.path.dirname(other))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "toolkit"))
    assert find_nvcc() == home
    monkeypatch.delenv("CUDA_HOME")
    assert find_nvcc() == other


def test_every_caller_uses_the_one_rule():
    assert cu_main.find_nvcc is find_nvcc
    assert static_cuda.find_nvcc is find_nvcc
    assert compiler.find_nvcc is find_nvcc
