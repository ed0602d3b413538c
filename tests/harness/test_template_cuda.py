"""The harness template of a ``.cu`` kernel launched by a host function: ``launcher = "<that function>"``.

Regression (a new user's trial): a ``.cu`` file with a host launcher and no ``main()`` got a guessed 1-D
``grid``/``block`` and wrong shapes (a 2-D ``dim3`` matmul launched as ``cdiv(M, 256)``, a row sum's
output shaped like its input). Each fixture is a different launch shape.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.harness import HarnessError, find_harness, write_template
from htam_core.source import load

TPL = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "template"


def _table(fname: str, tmp_path: Path | None = None) -> tuple[str, dict]:
    path = TPL / fname
    if tmp_path is not None:
        shutil.copy(path, tmp_path / fname)
        path = tmp_path / fname
    model = load(str(path))
    text = write_template(model, model.kernels[0])
    return text, tomllib.loads(text)["kernel"][model.kernels[0].name]


def _inputs(table: dict) -> dict[str, list | str | float | int]:
    return {i["name"]: i.get("shape", i.get("value")) for i in table["inputs"]}


@pytest.mark.parametrize(("fname", "launcher", "expect", "outputs", "sizes"), [
    # 1-D: blocks = (n + threads - 1) / threads through two locals
    ("host_1d.cu", "vadd", {"a": ["n"], "b": ["n"], "c": ["n"], "n": "n"}, ["c"], {"n": 1 << 20}),
    # 2-D dim3 grid over (N, M) with a #define tile: A[row * K + k] is M x K, B[k * N + col] is K x N
    ("host_2d.cu", "launch_matmul", {"A": ["M", "K"], "B": ["K", "N"], "C": ["M", "N"], "K": "K"}, ["C"],
     {"M": 1024, "N": 1024, "K": 1024}),
    # a stream parameter (left out: htam passes the default stream); `in` is renamed; out is one per row
    ("host_stream.cu", "rowsum", {"in_": ["rows", "cols"], "out": ["rows"], "rows": "rows"}, ["out"],
     {"rows": 1024, "cols": 1024}),
    # a template launcher with no defaults: the template arguments are guessed and marked
    ("host_template.cu", "run_scale<float, 256>", {"x": ["n"], "y": ["n"], "alpha": 1.0, "n": "n"}, ["y"],
     {"n": 1 << 20}),
    # batched (blockIdx.z), a namespace, CEIL_DIV in the grid, a defaulted float; table[idx[r]] has no shape
    ("host_batched.cu", "ops::launch_bscale",
     {"x": ["B", "rows", "cols"], "y": ["B", "rows", "cols"], "idx": ["rows"], "eps": 1e-5}, ["y"],
     {"B": 64, "rows": 64, "cols": 64}),
    # a templated kernel instantiated at the launch: one output per block of the grid (n + 255) / 256
    ("host_reduce.cu", "block_sum_f32", {"in_": ["n"], "out": ["cdiv(n, 256)"], "n": "n"}, ["out"], {"n": 1 << 20}),
])
def test_host_launcher_template(fname, launcher, expect, outputs, sizes):
    text, table = _table(fname)
    assert table["launcher"] == launcher, text
    assert "grid" not in table and "block" not in table and "args" not in table  # the launch stays in the code
    got = _inputs(table)
    assert {k: got.get(k) for k in expect} == expect, text
    assert table["outputs"] == outputs
    assert table["sizes"] == [sizes]


def test_the_stream_is_left_out_and_said():
    text, table = _table("host_stream.cu")
    assert "stream" not in _inputs(table)
    assert "stream (cudaStream_t) is left out: htam passes the default stream" in text


def test_guesses_are_marked_todo():
    text, _ = _table("host_template.cu")
    assert "# TODO: run_scale is a template: set its template arguments" in text
    assert text.count("TODO: element type guessed (a template type)") == 2
    text, table = _table("host_batched.cu")
    line = next(ln for ln in text.splitlines() if 'name = "table"' in ln)
    assert "TODO: placeholder shape: htam could not read the extent of `table`" in line
    line = next(ln for ln in text.splitlines() if 'name = "idx"' in ln)
    # indices into table: drawn inside its (placeholder) length, marked to follow it
    assert 'init = "randint", low = 0, high = 64 }' in line and "TODO: its shape is a placeholder" in line
    assert "TODO" not in next(ln for ln in text.splitlines() if 'name = "x"' in ln)


@pytest.mark.parametrize("fname", ["host_1d.cu", "host_2d.cu", "host_stream.cu", "host_batched.cu"])
def test_template_is_a_valid_harness_once_the_reference_is_written(tmp_path, fname):
    text, table = _table(fname, tmp_path)
    (tmp_path / "htam.toml").write_text(text)
    kernel = next(iter(tomllib.loads(text)["kernel"]))
    with pytest.raises(HarnessError, match="reference"):
        find_harness(tmp_path / fname, kernel)
    (tmp_path / "htam.toml").write_text(text.replace('reference = ""', 'reference = "torch.zeros(1)"'))
    h = find_harness(tmp_path / fname, kernel)
    assert h.kind == "spec" and h.launcher == table["launcher"]
    assert [i.name for i in h.inputs] == [i["name"] for i in table["inputs"]]


def test_the_missing_harness_message_offers_the_launcher(tmp_path):
    shutil.copy(TPL / "host_2d.cu", tmp_path / "mm.cu")
    with pytest.raises(HarnessError) as exc:
        find_harness(tmp_path / "mm.cu", "matmul_kernel")
    assert 'launcher = "launch_matmul"' in (exc.value.snippet or "")


def test_a_launch_in_main_keeps_the_direct_launch(tmp_path):
    """A host function that allocates is no plain launcher: the template stays a direct launch."""
    (tmp_path / "k.cu").write_text(
        "__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1; }\n"
        "void run(int n) { float* y; cudaMalloc(&y, n * 4); k<<<(n + 255) / 256, 256>>>(y, n); cudaFree(y); }\n")
    model = load(str(tmp_path / "k.cu"))
    table = tomllib.loads(write_template(model, model.kernel("k")))["kernel"]["k"]
    assert "launcher" not in table and table["args"] == ["y", "n"]


def test_an_in_out_buffer_is_named_for_the_reference():
    """The reference sees an in-out buffer's initial value (``beta * C``): the TODO names it."""
    corpus = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "sgemm_naive.cu"
    model = load(str(corpus))
    text = write_template(model, model.kernel("sgemm_naive"))
    todo = next(ln for ln in text.splitlines() if ln.startswith("# TODO: a torch expression over"))
    assert "dC" in todo and "dA" in todo and "in-out: the kernel reads it too" in text


def test_a_main_the_inference_cannot_use_still_gets_the_launcher_template(tmp_path):
    """main() needs argv[1]: it is run whole (timed, unchecked); the status (the editor's *Create a profiling
    harness* action) carries the launcher template, and none once htam.toml has the table."""
    from htam_core.harness.status import harness_status

    shutil.copy(TPL / "host_main_argv.cu", tmp_path / "k.cu")
    st = harness_status(str(tmp_path / "k.cu"), "scale_kernel")
    assert st.origin == "main() run whole" and "argv[1]" in st.line
    table = tomllib.loads(st.snippet)["kernel"]["scale_kernel"]
    assert table["launcher"] == "run_scale" and st.spec_path == str(tmp_path / "htam.toml")
    (tmp_path / "htam.toml").write_text(st.snippet.replace('reference = ""', 'reference = "2 * x"'))
    st = harness_status(str(tmp_path / "k.cu"), "scale_kernel")
    assert st.origin == "htam.toml" and st.snippet is None
