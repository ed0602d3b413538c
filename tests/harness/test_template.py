"""write_template: a filled-in, valid htam.toml table guessed from the kernel's parameters."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.harness import HarnessError, find_harness, write_template

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
load = pytest.importorskip("htam_core.source").load


@pytest.mark.parametrize("fname, kernel", [
    ("vector_add_small_block.py", "vadd_kernel"), ("sgemm_naive.cu", "sgemm_naive"),
    ("transpose_naive.cu", "transpose_naive"), ("softmax_rows.py", None),
])
def test_template_is_valid_toml_with_guesses(fname, kernel):
    m = load(str(CORPUS / fname))
    k = m.kernel(kernel) if kernel else m.kernels[0]
    text = write_template(m, k)
    table = tomllib.loads(text)["kernel"][k.name]
    assert table["version"] == 1 and table["file"] == fname and table["inputs"]
    assert table["reference"] == ""  # the developer writes it
    if fname.endswith(".cu"):
        assert table["args"] == [p.name + ("_" if p.name == "in" else "") for p in k.params]
        assert table["outputs"]
    if fname == "sgemm_naive.cu":
        shapes = {i["name"]: i.get("shape") for i in table["inputs"]}
        assert shapes["A"] == ["M", "K"] and shapes["C"] == ["M", "N"]


def test_template_round_trip_asks_for_the_reference_only(tmp_path):
    shutil.copy(CORPUS / "vector_add_small_block.py", tmp_path / "va.py")
    m = load(str(tmp_path / "va.py"))
    (tmp_path / "htam.toml").write_text(write_template(m, m.kernel("vadd_kernel")))
    with pytest.raises(HarnessError, match="needs a reference"):
        find_harness(tmp_path / "va.py", "vadd_kernel")
    text = (tmp_path / "htam.toml").read_text().replace('reference = ""', 'reference = "a + b"')
    (tmp_path / "htam.toml").write_text(text)
    h = find_harness(tmp_path / "va.py", "vadd_kernel")
    assert h.launcher == "vector_add"
