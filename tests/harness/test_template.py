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
    if fname == "transpose_naive.cu":  # launched from main(): a direct launch, with main()'s 2-D block and grid
        assert table["args"] == [p.name + ("_" if p.name == "in" else "") for p in k.params]
        assert table["block"] == "(32, 32)" and table["grid"] == "(cdiv(COLS, 32), cdiv(ROWS, 32))"  # not 1-D
    if fname.endswith(".cu"):
        assert table["outputs"]
    if fname == "sgemm_naive.cu":  # its host launcher run_sgemm_naive is called with the launcher's parameters
        assert table["launcher"] == "run_sgemm_naive" and "args" not in table and "grid" not in table
        shapes = {i["name"]: i.get("shape") for i in table["inputs"]}
        assert shapes["dA"] == ["M", "K"] and shapes["dC"] == ["M", "N"]


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


# -- the template reads annotations, defaults, strides and the launch: checked by running it ------------------
TPL = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "template"


@pytest.mark.parametrize(("fname", "kernel", "reference", "expect"), [
    # a launch straight from __main__ (no launcher function): eps is a float scalar with the launch's value,
    # X/Y are row-major matrices (their address adds the stride), W a vector, stride = N, M as launched
    ("rms_direct.py", "rms_kernel", "X * torch.rsqrt((X * X).mean(-1, keepdim=True) + eps) * W",
     {"X": ["M", "N"], "Y": ["M", "N"], "W": ["N"], "eps": 1e-6, "stride": "N"}),
    # a launcher: negative_slope: float = 0.01 is the scalar 0.01, out=None and activation="leaky" are left out,
    # x's shape comes from `n_rows, n_cols = x.shape`, bias is a vector over the last dimension
    ("bias_leaky.py", "_fused_bias_act", "torch.nn.functional.leaky_relu(x + bias, negative_slope)",
     {"x": ["N_ROWS", "N_COLS"], "bias": ["N_COLS"], "negative_slope": 0.01}),
])
def test_template_guesses_run_once_the_reference_is_written(tmp_path, monkeypatch, fname, kernel, reference, expect):
    from htam_core.verify.run import verify_in_worker

    monkeypatch.setenv("HTAM_INFER", "0")  # the template path: nothing inferred
    src = tmp_path / fname
    shutil.copy(TPL / fname, src)
    model = load(str(src))
    text = write_template(model, model.kernel(kernel))
    table = tomllib.loads(text)["kernel"][kernel]
    got = {i["name"]: i.get("shape", i.get("value")) for i in table["inputs"]}
    assert {k: got.get(k) for k in expect} == expect, text
    assert "out" not in got and "activation" not in got
    # small sizes for the interpreter, then the user's only job: the reference
    small = {k: (8 if k in ("M", "N_ROWS") else 64) for k in table["sizes"][0]}
    (tmp_path / "htam.toml").write_text(text.replace('reference = ""', f"reference = {reference!r}").replace(
        "# interpret_sizes = [{ ... }]", "interpret_sizes = [{ " + ", ".join(f"{k} = {v}" for k, v in small.items())
        + " }]").replace("BLOCK = 512", "BLOCK = 64"))
    h = find_harness(src, kernel)
    assert h.kind == "spec"
    v = verify_in_worker(h, timeout_s=300)
    assert v.correct, v.messages
