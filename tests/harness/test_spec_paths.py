"""Paths in htam.toml stay inside its folder; errors name the key, the file and the line; binary files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.spec import key_line, load_toml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _project(tmp_path: Path, toml: str) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    shutil.copy(EXAMPLES / "vector_add.py", d / "vector_add.py")
    (d / "htam.toml").write_text(toml)
    return d


def test_key_line_finds_quoted_headers_and_dotted_keys(tmp_path: Path) -> None:
    f = tmp_path / "htam.toml"
    f.write_text('# c\n[kernel."k1"]\nversion = 1\n  file = "a.py"\n\n[kernel.k2] # two\nfile="b.py"\n')
    assert key_line(f, ("kernel", "k1"), "file") == 4
    assert key_line(f, ("kernel", "k2"), "file") == 7
    assert key_line(f, ("kernel", "k3"), "file") is None
    f.write_text('kernel.k1.file = "a.py"\n')
    assert key_line(f, ("kernel", "k1"), "file") == 1


@pytest.mark.parametrize("value", ["../../etc/passwd", "/etc/passwd", "sub/../../x.py"])
def test_kernel_file_outside_the_folder_is_an_error(tmp_path: Path, value: str) -> None:
    toml = (EXAMPLES / "htam.toml").read_text().replace('file = "vector_add.py"', f'file = "{value}"')
    d = _project(tmp_path, toml)
    with pytest.raises(HarnessError, match="points outside the folder of htam.toml") as info:
        find_harness(d / "vector_add.py", "add_kernel")
    line = toml.splitlines().index(f'file = "{value}"') + 1
    assert info.value.message.startswith(f"{d / 'htam.toml'}:{line}: [kernel.add_kernel] file = {value!r}")


def test_kernel_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    toml = (EXAMPLES / "htam.toml").read_text().replace('file = "vector_add.py"', 'file = "vector_ad.py"')
    d = _project(tmp_path, toml)
    with pytest.raises(HarnessError, match="which does not exist"):
        find_harness(d / "vector_add.py", "add_kernel")


def test_function_reference_outside_the_folder_is_an_error(tmp_path: Path) -> None:
    toml = (EXAMPLES / "htam.toml").read_text().replace('reference = "x + y"', 'reference = "../ref.py:add"')
    d = _project(tmp_path, toml)
    with pytest.raises(HarnessError, match=r"\[kernel.add_kernel\] reference = '../ref.py' points outside"):
        find_harness(d / "vector_add.py", "add_kernel")


def test_kernelbench_reference_outside_the_folder_is_an_error(tmp_path: Path) -> None:
    d = tmp_path / "kb"
    d.mkdir()
    (d / "cand.py").write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                               "        return x\n")
    (d / "htam.toml").write_text('[kernelbench."cand.py"]\nreference = "../../ref.py"\n')
    with pytest.raises(HarnessError, match=r"htam.toml:2: \[kernelbench.cand.py\] reference = '../../ref.py'"):
        find_harness(d / "cand.py", "ModelNew")


def test_binary_toml_is_a_harness_error(tmp_path: Path) -> None:
    f = tmp_path / "htam.toml"
    f.write_bytes(b"version = 1\n\xff\xfe")
    with pytest.raises(HarnessError, match=r"is not a UTF-8 text file \(byte 0xff at line 2"):
        load_toml(f)


# -- every malformed htam.toml: one line naming the file, the line and the key --------------------------------
_SAXPY = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf" / "cu_saxpy_define.cu"
_HEAD = '[kernel.saxpy]\nversion = 1\ngrid = "1"\nblock = "1"\nargs = ["x"]\n'
_IN = 'inputs = [{ name = "x", shape = ["N"], dtype = "float32" }]\noutputs = ["x"]\n'


@pytest.mark.parametrize(("text", "line", "key"), [
    ('[kernel.saxpy]\nversion = 1\ninputs = "x"\n', 3, "inputs"),
    (_HEAD + 'inputs = [{ name = "x", shape = ["N"], dtype = "float33" }]\n', 6, "dtype"),
    (_HEAD + _IN + 'sizes = [{ N = "a" }]\n', 8, "sizes"),
    (_HEAD + _IN + 'sizes = [{ N = 4 }]\nreference = "x +"\n', 9, "reference"),
    (_HEAD + _IN + 'sizes = [{ N = 4 }]\natol = "a"\n', 9, "atol"),
    (_HEAD + _IN + 'sizes = [{ N = 4 }]\noracle = "yes"\n', 9, "oracle"),
    ('\n[kernel.saxpy]\nversion = 2\n', 3, "version"),
    ('[kernel.saxpy]\nversion = 1\nfoo = 2\n', 3, "foo"),
    ('\n\n[kernel.saxpy]\n', 3, "version"),
    ('kernel = 3\n', 1, "kernel"),
    ('[kernel]\nsaxpy = 3\n', 2, "kernel.saxpy"),
    ('[kernel.saxpy\nversion = ', 1, "table declaration"),
])
def test_malformed_htam_toml_names_key_file_and_line(tmp_path: Path, text: str, line: int, key: str) -> None:
    src = tmp_path / "cu_saxpy_define.cu"
    src.write_text(_SAXPY.read_text())
    (tmp_path / "htam.toml").write_text(text)
    with pytest.raises(HarnessError) as ei:
        find_harness(src, "saxpy")
    msg = ei.value.message
    assert msg.strip() and "\n" not in msg, msg
    assert f"htam.toml:{line}" in msg or f"line {line}" in msg, msg
    assert key in msg, msg


def test_a_binary_htam_toml_is_one_warning_line_in_profile_and_suggest(tmp_path: Path, capsys) -> None:
    """A binary htam.toml was silently ignored by profile/suggest: now each says so, in one line."""
    from htam_core.cli.main import main

    src = tmp_path / "cu_saxpy_define.cu"
    src.write_text(_SAXPY.read_text())
    (tmp_path / "htam.toml").write_bytes(b"\x00\xff\xfe\x89PNG garbage")
    for cmd in (["profile", str(src), "--kernel", "saxpy", "--static"], ["suggest", str(src), "--kernel", "saxpy"]):
        assert main(cmd) == 0
        out = capsys.readouterr().out
        hits = [ln for ln in out.splitlines() if "htam.toml is not a UTF-8 text file" in ln]
        assert len(hits) == 1 and "harness not used" in hits[0], out
