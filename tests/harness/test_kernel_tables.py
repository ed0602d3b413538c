"""``htam.toml`` tables for kernels that share a name: ``[kernel."f64::scale"]`` and
``[kernel."scale(double*, double, int)"]`` select their kernel, a table keyed by a kernel's qualified name serves a
kernel whose plain name is its own, a plain-name table on a file where the name is shared is refused in one line
naming the keys to write, and ``htam harness infer --kernel f64::scale --write`` writes a table that reads back as
that kernel's."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.harness import HarnessError, find_harness
from htam_core.harness.spec import table_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "identity"

TABLE = """
{header}
version = 1
file = "{file}"
grid = "(n + 255) // 256"
block = 256
args = ["x", "a", "n"]
inputs = [
  {{ name = "x", shape = ["n"], dtype = "{dtype}", init = "randn" }},
  {{ name = "a", dtype = "{dtype}", value = 3.0 }},
  {{ name = "n", dtype = "int32", value = "n" }},
]
outputs = ["x"]
sizes = [{{ n = 1024 }}]
oracle = true
"""


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))


def _copy(tmp_path: Path, name: str) -> Path:
    shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path / name


def _spec(tmp_path: Path, *tables: tuple[str, str, str]) -> None:
    (tmp_path / "htam.toml").write_text("".join(TABLE.format(header=table_header(k), file=f, dtype=d)
                                                for k, f, d in tables))


@pytest.mark.parametrize(("key", "header"), [
    ("vadd", "[kernel.vadd]"), ("add-2", "[kernel.add-2]"), ("f64::scale", '[kernel."f64::scale"]'),
    ("scale(double*, double, int)", '[kernel."scale(double*, double, int)"]'), ('we"ird', '[kernel."we\\"ird"]')])
def test_table_header_is_a_toml_key_that_reads_back(key, header):
    assert table_header(key) == header
    assert list(tomllib.loads(header + "\nversion = 1\n")["kernel"]) == [key]


def test_qualified_tables_select_their_kernel(tmp_path):
    path = _copy(tmp_path, "namespaces.cu")
    _spec(tmp_path, ("f64::scale", path.name, "float64"), ("f32::scale", path.name, "float32"))
    h64, h32 = find_harness(path, "f64::scale"), find_harness(path, "f32::scale")
    assert (h64.kind, h32.kind) == ("spec", "spec")
    assert h64.source.endswith('[kernel."f64::scale"]') and h32.source.endswith('[kernel."f32::scale"]')
    assert [i.dtype for i in h64.inputs][:2] == ["float64", "float64"]
    assert [i.dtype for i in h32.inputs][:2] == ["float32", "float32"]


def test_one_qualified_table_is_not_the_other_kernels(tmp_path):
    path = _copy(tmp_path, "namespaces.cu")
    _spec(tmp_path, ("f64::scale", path.name, "float64"))
    assert find_harness(path, "f64::scale").kind == "spec"
    assert "f64" not in find_harness(path, "f32::scale").source  # inferred from main(), not f64's table


def test_overload_tables_select_by_signature_spaces_ignored(tmp_path):
    path = _copy(tmp_path, "overloads.cu")
    _spec(tmp_path, ("scale(double*,double,int)", path.name, "float64"))
    h = find_harness(path, "scale(double*, double, int)")
    assert h.kind == "spec" and h.inputs[0].dtype == "float64"
    assert find_harness(path, "scale(float*, float, int)").kind != "spec"


def test_a_qualified_table_serves_a_kernel_whose_name_is_its_own(tmp_path):
    path = _copy(tmp_path, "namespaces.cu")
    _spec(tmp_path, ("other::only", path.name, "float32"))
    h = find_harness(path, "only")
    assert h.kind == "spec" and h.source.endswith('[kernel."other::only"]')


@pytest.mark.parametrize(("name", "keys"), [
    ("namespaces.cu", ['[kernel."f32::scale"]', '[kernel."f64::scale"]']),
    ("overloads.cu", ['[kernel."scale(float*, float, int)"]', '[kernel."scale(double*, double, int)"]'])])
def test_a_plain_table_on_a_shared_name_says_which_keys_to_write(tmp_path, name, keys):
    path = _copy(tmp_path, name)
    _spec(tmp_path, ("scale", path.name, "float32"))
    with pytest.raises(HarnessError) as exc:
        find_harness(path, keys[1][len('[kernel."'):-2])
    msg = exc.value.message
    assert "\n" not in msg and "[kernel.scale] names 2 kernels" in msg
    assert all(k in msg for k in keys)


def test_a_plain_table_for_another_file_is_not_this_files(tmp_path):
    path = _copy(tmp_path, "namespaces.cu")
    shutil.copy(FIXTURES / "overloads.cu", tmp_path / "other.cu")
    _spec(tmp_path, ("scale", "other.cu", "float32"))
    assert "htam.toml" not in find_harness(path, "f64::scale").source


@pytest.mark.parametrize(("name", "key", "dtype"), [
    ("namespaces.cu", "f64::scale", "float64"), ("overloads.cu", "scale(double*, double, int)", "float64"),
    ("namespaces.cu", "f32::scale", "float32")])
def test_infer_writes_a_quoted_table_that_reads_back(tmp_path, capsys, name, key, dtype):
    path = _copy(tmp_path, name)
    assert main(["harness", "infer", str(path), "--kernel", key, "--write"]) == 0
    err = capsys.readouterr().err
    assert f"wrote {table_header(key)}" in err
    tables = tomllib.loads((tmp_path / "htam.toml").read_text())["kernel"]
    assert list(tables) == [key]
    h = find_harness(path, key)
    assert h.kind == "spec" and h.kernel == key and h.inputs[0].dtype == dtype


def test_infer_keeps_the_plain_key_of_a_kernel_whose_name_is_its_own(tmp_path, capsys):
    path = _copy(tmp_path, "namespaces.cu")
    assert main(["harness", "infer", str(path), "--kernel", "other::only", "--write"]) == 0
    assert "wrote [kernel.only]" in capsys.readouterr().err
    assert find_harness(path, "only").kind == "spec"
