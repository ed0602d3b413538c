"""KernelBench pairs in every command, and a torch header the machine lacks reported as the environment's.

Cases from a user trial: `htam harness infer kb_rowsum.py` ignored the sibling `kb_rowsum_ref.py` (which
`htam verify` uses) and said no launcher was found; with a CPU build of torch that lacks
`c10/cuda/CUDAMacros.h`, verify and optimize reported "the starting kernel failed" with a stray `:;`.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.harness.base import Harness
from htam_core.harness.find import find_harness, kernelbench_pair
from htam_core.verify import run as verify_run

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
PAIRS = {"kb_rowsum.py": "sum_over_dim_kernel", "kb_swish.py": "swish_fwd_kernel"}


@pytest.fixture(autouse=True)
def _private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_INFER", "1")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))


def _pair(tmp_path: Path, name: str) -> Path:
    for f in (name, name.replace(".py", "_ref.py")):
        shutil.copy(CORPUS / f, tmp_path / f)
    return tmp_path / name


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_harness_infer_prints_the_pair_verify_uses(tmp_path: Path, name: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    f = _pair(tmp_path, name)
    assert main(["harness", "infer", str(f)]) == 0
    out = capsys.readouterr().out
    table = tomllib.loads(out)["kernelbench"][name]
    assert table == {"reference": name.replace(".py", "_ref.py")}
    # the same discovery as verify/optimize
    h = find_harness(f, PAIRS[name])
    assert h.kind == "kernelbench" and h.reference_path == kernelbench_pair(f, PAIRS[name]).reference_path
    assert main(["harness", "infer", str(f), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["harness"]
    assert got["kind"] == "kernelbench" and Path(got["reference_path"]).name == name.replace(".py", "_ref.py")


def test_harness_infer_without_the_reference_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "kb_rowsum.py"
    shutil.copy(CORPUS / "kb_rowsum.py", f)
    assert main(["harness", "infer", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "kb_rowsum_ref.py" in err and "launches" not in err


def _fake_nvcc(tmp_path: Path, stderr: str) -> str:
    nvcc = tmp_path / "fake-cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\ncat >&2 <<'EOF'\n" + stderr + "\nEOF\nexit 1\n")
    nvcc.chmod(0o755)
    return str(nvcc)


_MISSING_MACROS = ("In file included from /site/torch/include/c10/cuda/CUDAStream.h:6,\n"
                   "/site/torch/include/c10/cuda/CUDAException.h:5:10: fatal error: c10/cuda/CUDAMacros.h: No such "
                   "file or directory\ncompilation terminated.")


def test_a_header_the_local_torch_lacks_is_an_environment_problem(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    f = _pair(tmp_path, "kb_rowsum.py")
    monkeypatch.setattr(verify_run, "find_nvcc", lambda: _fake_nvcc(tmp_path, _MISSING_MACROS))
    res = verify_run.compile_check(find_harness(f, PAIRS["kb_rowsum.py"]))
    assert res.status == "unverified" and not res.refused_by, res.messages
    [msg] = res.messages
    assert "c10/cuda/CUDAMacros.h" in msg and "CUDA build of torch" in msg and "environment" in msg
    assert "failed" not in msg and ":;" not in msg


def test_a_compile_error_of_the_code_is_one_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "k.cu"
    f.write_text("__global__ void k(float *x) { x[0] = y; }\n")
    monkeypatch.setattr(verify_run, "find_nvcc", lambda: _fake_nvcc(tmp_path, 'k.cu(1): error: identifier "y" is '
                                                                              "undefined"))
    res = verify_run.compile_check(Harness(kind="spec", path=str(f), kernel="k", language="cuda"))
    assert res.status == "error" and res.refused_by == ["compile"]
    assert len(res.messages) == 1 and res.messages[0].startswith("nvcc could not compile the CUDA code: k.cu(1)")


@pytest.mark.parametrize(("stderr", "header"), [
    (_MISSING_MACROS, "c10/cuda/CUDAMacros.h"),
    ('k.cu(3): catastrophic error: cannot open source file "cutlass/gemm.h"', "cutlass/gemm.h"),
    ("k.cu(3): error: expected a ;", None),
])
def test_missing_header(stderr: str, header: str | None) -> None:
    assert verify_run.missing_header(stderr) == header
