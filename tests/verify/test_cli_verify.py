"""``htam verify``: verdict JSON, exit codes 0 (accepted) / 1 (refused or unverified) / 2 (usage error)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from htam_core.cli.main import main  # noqa: E402

RUNTIME = Path(__file__).resolve().parents[1] / "fixtures" / "hacks" / "runtime"
KEYS = {"correct", "verified_on", "refused_by", "messages", "labels"}


@pytest.fixture(autouse=True)
def _cpu(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _run(capsys, *argv: str) -> tuple[int, dict | str]:
    code = main(["verify", *argv])
    out = capsys.readouterr()
    if "--json" in argv and code != 2:
        return code, json.loads(out.out)
    return code, out.out + out.err


def test_accepted_is_exit_0_with_the_verdict(capsys):
    code, v = _run(capsys, str(RUNTIME / "correct__swish.py"), "--json")
    assert code == 0 and KEYS <= set(v)
    assert v["correct"] is True and v["verified_on"] == "interpreter" and v["refused_by"] == []


def test_refused_is_exit_1_naming_the_rule(capsys):
    code, v = _run(capsys, str(RUNTIME / "unwritten-output__half.py"), "--json")
    assert code == 1 and v["correct"] is False and v["refused_by"] == ["unwritten-output"]
    code, text = _run(capsys, str(RUNTIME / "side-stream__stream.py"))
    assert code == 1 and "REFUSED" in text and "side-stream" in text


def test_reference_and_harness_options_for_a_candidate_elsewhere(capsys, tmp_path):
    cand = tmp_path / "my_candidate.py"
    shutil.copy(RUNTIME / "correct__swish.py", cand)
    code, v = _run(capsys, str(cand), "--reference", str(RUNTIME / "ref_swish.py"), "--json")
    assert code == 0 and v["correct"] and "--reference" in v["harness"]
    hack = tmp_path / "hack.py"
    shutil.copy(RUNTIME / "scaled-inputs__constant.py", hack)
    code, v = _run(capsys, str(hack), "--harness", str(RUNTIME), "--json")  # [kernel.row_mean_kernel] table
    assert code == 1 and "scaled-inputs" in v["refused_by"]


def test_compile_only_cuda_is_exit_1_unverified_not_wrong(capsys):
    if shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists():
        pytest.skip("needs nvcc")
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU runs the kernel: not compile-only")
    except ImportError:
        pass
    code, v = _run(capsys, str(RUNTIME / "cuda" / "correct__scale.cu"), "--json")
    assert code == 1 and v["correct"] is False and v["verified_on"] == "compile-only" and v["refused_by"] == []
    assert v["status"] == "unverified" and any("not wrong" in m for m in v["messages"])


def test_usage_errors_are_exit_2(capsys, tmp_path):
    code, text = _run(capsys, str(tmp_path / "missing.py"))
    assert code == 2 and "does not exist" in text
    orphan = tmp_path / "orphan.py"
    shutil.copy(RUNTIME / "correct__swish.py", orphan)  # a ModelNew with no reference anywhere
    code, text = _run(capsys, str(orphan))
    assert code == 2 and "htam: error:" in text and "reference" in text and "Traceback" not in text
    code, text = _run(capsys, str(orphan), "--harness", str(tmp_path / "nope.toml"))
    assert code == 2 and "no such file" in text
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    assert _run(capsys, str(bad))[0] == 2


def test_no_harness_but_statically_refused_is_exit_1(capsys, tmp_path):
    hack = tmp_path / "cand.py"
    shutil.copy(RUNTIME / "timing-monkeypatch__elapsed.py", hack)
    code, v = _run(capsys, str(hack), "--json")
    assert code == 1 and v["refused_by"] == ["timing-monkeypatch"] and v["verified_on"] is None
    assert any("no harness" in m for m in v["messages"])


def test_unknown_kernel_is_named_not_a_missing_harness(tmp_path: Path, capsys) -> None:
    """Regression (new-user trial): ``verify --kernel nope`` said "no harness for kernel 'nope'" with a template,
    where profile/suggest say the kernel does not exist."""
    src = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "sgemm_naive.cu"
    cand = tmp_path / "sgemm_naive.cu"
    shutil.copy(src, cand)
    assert main(["verify", str(cand), "--kernel", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no kernel named 'nope' in sgemm_naive.cu (kernels: sgemm_naive)" in err
    assert "no harness" not in err and "Traceback" not in err


ZEROCONF = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf"


def test_reference_takes_a_function_or_an_expression_like_htam_toml(capsys, tmp_path, monkeypatch):
    """Regression (new-user trial): ``verify out/best.py --reference refs.py:fn`` said "pass a file with class
    Model, get_inputs() and get_init_inputs()" although ``reference = "refs.py:fn"`` works in htam.toml. It now
    takes ``file.py:function`` (the file from the current folder) and a torch expression, replacing the
    reference of the candidate's own harness, and that reference decides the verdict."""
    monkeypatch.setenv("HTAM_INFER", "1")  # the candidate's harness is inferred from its __main__
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "out").mkdir()
    shutil.copy(ZEROCONF / "print_only.py", tmp_path / "out" / "best.py")  # a launcher and a __main__ calling it
    (tmp_path / "refs.py").write_text("def square(x):\n    return x * x\n\n\ndef cube(x):\n    return x * x * x\n")
    monkeypatch.chdir(tmp_path)
    base = ["out/best.py", "--kernel", "square_kernel", "--json", "--reference"]
    code, v = _run(capsys, *base, "refs.py:square")
    assert code == 0 and v["correct"] is True, v
    assert v["harness"].endswith("recorded; reference from --reference refs.py:square"), v["harness"]
    code, v = _run(capsys, *base, "refs.py:cube")  # a wrong reference refuses: it is really the one used
    assert code == 1 and v["refused_by"] == ["mismatch"], v
    code, v = _run(capsys, *base, "x * x")
    assert code == 0 and v["correct"] is True, v
    for bad, needle in (("nope.py:f", f"{tmp_path / 'nope.py'} does not exist"),
                        ("x *", "is not a valid Python expression")):
        code, text = _run(capsys, *base, bad)
        assert code == 2 and text.startswith("htam: error: --reference ") and needle in text, text
        assert len(text.strip().splitlines()) == 1 and "Traceback" not in text


def test_reordered_sums_loosens_only_the_float32_tolerance(capsys, tmp_path, monkeypatch):
    """``--reordered-sums`` checks at the loop's reordered-sum tolerance (1e-3): a hand-written tree reduction
    differs from a serial sum in the 4th digit. An output off by 5e-4 (relative) is refused by default and
    accepted with the flag; one off by 5e-3 stays refused."""
    monkeypatch.setenv("HTAM_INFER", "1")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copy(ZEROCONF / "print_only.py", tmp_path / "best.py")
    monkeypatch.chdir(tmp_path)
    base = ["best.py", "--kernel", "square_kernel", "--json", "--reference"]
    code, v = _run(capsys, *base, "x * x * 1.0005")
    assert code == 1 and v["refused_by"] == ["mismatch"], v
    code, v = _run(capsys, *base, "x * x * 1.0005", "--reordered-sums")
    assert code == 0 and v["correct"] is True, v
    code, v = _run(capsys, *base, "x * x * 1.005", "--reordered-sums")
    assert code == 1 and v["refused_by"] == ["mismatch"], v
