"""The compiler decides what is incomplete: a kernel the parser cannot read in a file the compiler accepts is "not
read" (htam's limit, never the user's to fix); a half-typed one stays incomplete."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.runtime.compiler import compiler_verdict, settle_incomplete
from htam_core.source import incomplete_reason, load, parse_text

FIX = Path(__file__).resolve().parents[1] / "fixtures"
HALF_TRITON = "import triton\n\n@triton.jit\ndef gather(src, index, dst\n"


def test_python_compiler_decides_for_triton_files() -> None:
    m = settle_incomplete(parse_text(HALF_TRITON, "python", "g.py"))
    assert [(k.name, k.incomplete, k.compiles) for k in m.kernels] == [("gather", True, False)]
    assert "finish or fix it there first" in (incomplete_reason(m.kernels[0]) or "")
    assert compiler_verdict("import triton\n", "python") is True


def test_a_kernel_the_compiler_accepts_is_not_blamed() -> None:
    m = parse_text(HALF_TRITON, "python", "g.py")
    k = m.kernels[0]
    k.compiles = True
    why = incomplete_reason(k, "steps are ranked") or ""
    assert why.startswith("htam could not read gather (its parser stops at line 4, column ")
    assert "though Python accepts the file: steps are ranked once htam can read it" in why
    assert "fix" not in why and "finish" not in why
    assert k.to_json().get("unreadable") is True and "incomplete" not in k.to_json()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_decides_for_cuda_files() -> None:
    valid = settle_incomplete(load(FIX / "preproc" / "brace_macros.cu"))  # a body closed by a macro: valid CUDA
    assert [(k.name, k.incomplete, k.compiles) for k in valid.kernels] == [("fill", True, True)]
    assert (incomplete_reason(valid.kernels[0]) or "").startswith("htam could not read fill")
    half = settle_incomplete(load(FIX / "corpus" / "broken_partial_kernels.cu"))
    assert [(k.name, k.compiles) for k in half.kernels if k.incomplete] == [("row_l2_normalize", False)]


def test_without_nvcc_the_verdict_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_core.runtime import compiler

    monkeypatch.setattr(compiler, "find_nvcc", lambda: None)
    compiler._nvcc.cache_clear()
    assert compiler_verdict("__global__ void k(float* x) {\n", "cuda", "k.cu") is None
