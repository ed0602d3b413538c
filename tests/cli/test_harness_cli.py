"""`htam harness infer FILE [--write]`: prints the inferred harness as htam.toml, writes it once, exits 1 with the
reason when nothing can be inferred, 2 on bad usage."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.cli.main import main

ZC = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf"


@pytest.fixture(autouse=True)
def _infer_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_INFER", "1")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))


def test_infer_prints_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(ZC / "print_only.py", tmp_path / "print_only.py")
    assert main(["harness", "infer", str(tmp_path / "print_only.py"), "--write"]) == 0
    out = capsys.readouterr()
    table = tomllib.loads(out.out)["kernel"]["square_kernel"]
    assert table["launcher"] == "square" and table["oracle"] is True
    assert "wrote [kernel.square_kernel]" in out.err
    assert tomllib.loads((tmp_path / "htam.toml").read_text())["kernel"]["square_kernel"] == table
    assert main(["harness", "infer", str(tmp_path / "print_only.py"), "--write"]) == 2  # a table is there now
    assert "already has a [kernel.square_kernel] table" in capsys.readouterr().err


def test_nothing_inferred_exits_1_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["harness", "infer", str(ZC / "direct_launch.py")]) == 1
    err = capsys.readouterr().err
    assert "no function of direct_launch.py launches neg_kernel" in err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["harness", "infer", str(tmp_path / "nope.py")]) == 2
    assert main(["harness", "infer", str(ZC / "gelu.py"), "--kernel", "nope"]) == 2
    assert "no kernel named 'nope'" in capsys.readouterr().err  # the one message of every command


def test_cuda_main_harness_is_saved_with_save_and_parses_back(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A .cu program's main() launch: printed and saved (--save is --write) as a direct-launch table that the
    spec reads back; the existing htam.toml text is kept (a new table is appended)."""
    from htam_core.harness.find import find_harness

    src = tmp_path / "cu_matadd_2d.cu"
    shutil.copy(ZC / "cu_matadd_2d.cu", src)
    (tmp_path / "htam.toml").write_text('[program."other.cu"]\nargs = ["1"]\n')
    assert main(["harness", "infer", str(src), "--save"]) == 0
    table = tomllib.loads(capsys.readouterr().out)["kernel"]["mat_add"]
    assert table["grid"] and table["block"] and table["args"][:3] == ["A", "B", "C"] and table["oracle"] is True
    text = (tmp_path / "htam.toml").read_text()
    assert text.startswith('[program."other.cu"]\nargs = ["1"]\n')
    h = find_harness(src, "mat_add")
    assert h.kind == "spec" and h.uses_oracle and h.outputs == ["C"]


def test_binary_htam_toml_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(ZC / "print_only.py", tmp_path / "print_only.py")
    (tmp_path / "htam.toml").write_bytes(b"\x00\xff\xfe garbage \x89PNG\r\n")
    assert main(["harness", "infer", str(tmp_path / "print_only.py"), "--write"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "htam.toml" in err[0] and "Traceback" not in err[0], err
    assert (tmp_path / "htam.toml").read_bytes() == b"\x00\xff\xfe garbage \x89PNG\r\n"


def test_a_file_that_does_not_parse_is_named_as_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: a syntax error was reported as 'no function launches the kernel'."""
    text = (ZC / "print_only.py").read_text().splitlines()
    line = next(i for i, ln in enumerate(text) if "square_kernel[" in ln)
    text[line] = text[line].rstrip().rstrip(")")  # an unclosed call, as while typing
    (tmp_path / "broken.py").write_text("\n".join(text) + "\n")
    assert main(["harness", "infer", str(tmp_path / "broken.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"htam: error: broken.py:{line + 1}:"), err
    assert ": syntax error: " in err[0] and "fix it there, then" in err[0] and "harness infer" in err[0]
    assert "launches" not in err[0] and "Traceback" not in err[0]


def test_inference_itself_names_the_syntax_error(tmp_path: Path) -> None:
    from htam_core.harness.infer_py import infer

    (tmp_path / "k.py").write_text("import triton\n\n@triton.jit\ndef k(x):\n    pass\n\ndef run(x:\n    k[(1,)](x)\n")
    inf = infer(tmp_path / "k.py", "k")
    # the `(` of `def run(x:` left open (line 7), where Python says so too; not the end of the file
    assert inf.harness is None and inf.reason.startswith("k.py:7:8: syntax error: `(` is never closed")
    assert "Python: '(' was never closed" in inf.reason


def test_a_cu_file_without_main_gets_the_host_launcher_template(capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: a .cu file with a host launcher and no main() got only "no main()"; the template to start
    from names the launcher (stdout stays empty: nothing was inferred)."""
    cu = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "template" / "host_2d.cu"
    assert main(["harness", "infer", str(cu)]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("no harness could be inferred for matmul_kernel from host_2d.cu: no main() in host_2d.cu "
                              "or in a file of its workspace launches matmul_kernel")
    table = tomllib.loads(out.err.split("write the reference):", 1)[1])["kernel"]["matmul_kernel"]
    assert table["launcher"] == "launch_matmul"
