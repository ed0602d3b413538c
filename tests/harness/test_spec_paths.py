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
