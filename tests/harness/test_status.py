"""The editor's view of a kernel's harness (htam_core.harness.status): one origin line for each source, the
template when there is none, one clear line for a broken htam.toml, and the save rule (a new table only)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.harness.status import harness_status

ZC = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf"


@pytest.fixture(autouse=True)
def _infer_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_INFER", "1")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))


def _copy(tmp_path: Path, *names: str) -> Path:
    for n in names:
        shutil.copy(ZC / n, tmp_path / n)
    return tmp_path / names[0]


@pytest.mark.parametrize(("names", "kernel", "origin"), [
    (("print_only.py",), "square_kernel", "inferred from __main__"),
    (("add_relu.py", "test_add_relu.py"), "add_relu_kernel", "inferred from a test"),
    (("cu_saxpy_define.cu",), "saxpy", "inferred from main()"),
])
def test_each_inferred_source_names_its_origin_and_can_be_saved(tmp_path: Path, names, kernel, origin) -> None:
    src = _copy(tmp_path, *names)
    st = harness_status(str(src), kernel)
    assert st.origin == origin and st.line.startswith("inferred from ") and "\n" not in st.line, st
    assert st.save_text and st.spec_path == str(tmp_path / "htam.toml")
    table = tomllib.loads(st.save_text)["kernel"][kernel]
    assert table["file"] == src.name and table["inputs"] and table["sizes"]
    # saved: htam.toml wins, and nothing more is offered
    (tmp_path / "htam.toml").write_text(st.save_text)
    after = harness_status(str(src), kernel)
    assert after.origin == "htam.toml" and after.save_text is None and after.snippet is None


def test_no_harness_is_the_template(tmp_path: Path) -> None:
    src = tmp_path / "scale.cu"
    src.write_text("__global__ void scale(float* x, float a, int n) {\n  int i = threadIdx.x;\n"
                   "  if (i < n) x[i] = a * x[i];\n}\n")
    st = harness_status(str(src), "scale")
    assert st.origin == "template" and st.snippet and "[kernel.scale]" in st.snippet
    assert st.line.startswith("none — no harness for kernel 'scale'") and st.save_text is None


def test_a_same_named_table_for_another_file_blocks_the_save(tmp_path: Path) -> None:
    src = _copy(tmp_path, "cu_saxpy_define.cu")
    (tmp_path / "other.cu").write_text("__global__ void saxpy(float* x) {}\n")
    (tmp_path / "htam.toml").write_text('[kernel.saxpy]\nversion = 1\nfile = "other.cu"\ngrid = "1"\nblock = "1"\n'
                                        'args = ["x"]\ninputs = [{ name = "x", shape = ["N"], dtype = "float32" }]\n'
                                        'sizes = [{ N = 4 }]\noutputs = ["x"]\n')
    st = harness_status(str(src), "saxpy")
    assert st.origin == "inferred from main()" and st.save_text is None  # never over the existing section


@pytest.mark.parametrize("content", [b"\x00\xff\xfe\x89PNG garbage", b"[kernel.saxpy\nversion = ",
                                     b'[kernel.saxpy]\nversion = 1\ninputs = "x"\n'])
def test_a_broken_htam_toml_is_one_clear_line(tmp_path: Path, content: bytes) -> None:
    src = _copy(tmp_path, "cu_saxpy_define.cu")
    (tmp_path / "htam.toml").write_bytes(content)
    st = harness_status(str(src), "saxpy")
    assert st.origin == "error" and st.line.strip() and "\n" not in st.line.strip(), st
    assert "htam.toml" in st.line and st.save_text is None
