"""The harness of a CUDA kernel held in a Python string and launched through cupy in the same file: the template
launches the kernel itself with the cupy call's grid and block (a cupy launcher takes cupy arrays, not the torch
tensors a harness passes); the recording finds the launcher function, and a launcher passed cupy arrays gets one
clear line; the harness compiles the file's CUDA string (not the Python file). On a GPU with cupy the template's
table, with its reference written, verifies the kernel."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

from htam_core.harness import HarnessError, find_harness, write_template
from htam_core.harness.infer_py import _launcher_params, _NoHarness
from htam_core.harness.pywrapper import wrapper_def, wrapper_function
from htam_core.harness.runner import embedded_cuda
from htam_core.source import load
from tests.support.workspace_fixtures import CUPY_TRANSPOSE_PY, CUPY_VADD_PY, workspace


def _table(path: Path) -> dict:
    model = load(path)
    return tomllib.loads(write_template(model, model.kernels[0]))["kernel"][model.kernels[0].name]


def test_the_template_launches_with_the_cupy_calls_grid_and_block(tmp_path):
    ws = workspace(tmp_path, {"t.py": CUPY_TRANSPOSE_PY})
    table = _table(ws / "t.py")
    assert "launcher" not in table
    assert table["block"] == "(16, 16)" and table["grid"] == "(cdiv(COLS, 16), cdiv(ROWS, 16))"
    text = write_template(load(ws / "t.py"), load(ws / "t.py").kernels[0])
    assert "# as launched" in text


def test_a_cupy_launch_not_read_leaves_a_guess(tmp_path):
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY.replace("((n + BLOCK - 1) // BLOCK,)", "(math.ceil(n / 256),)")})
    model = load(ws / "vadd.py")
    text = write_template(model, model.kernels[0])
    assert 'block = "256"' in text  # the call's block is still read
    assert "# TODO: the cupy call at line 17 of vadd.py (grid (math.ceil(n / 256),)) is not read" in text


def test_the_recording_runs_the_cupy_launcher(tmp_path):
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY})
    model = load(ws / "vadd.py")
    assert wrapper_function(model, model.kernels[0]) == ("add", ["a", "b"])
    assert wrapper_def(model, model.kernels[0]) is None  # the template launches the kernel itself


def test_a_launcher_passed_cupy_arrays_gets_one_line():
    sig = [{"name": "a", "kind": "POSITIONAL_OR_KEYWORD", "default": None}]
    calls = [{"params": {"a": {"kind": "other", "type": "ndarray", "module": "cupy", "repr": "array([1.])"}}}]
    with pytest.raises(_NoHarness, match=r"add\(\) parameter 'a' was passed a cupy array; an inferred harness "
                                         r"passes torch tensors and numbers only: write the htam.toml table below"):
        _launcher_params("add", sig, calls)


def test_the_harness_compiles_the_cuda_string(tmp_path):
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY})
    src = embedded_cuda(str(ws / "vadd.py"), "vadd")
    assert src.lstrip().startswith('extern "C" __global__ void vadd(') and "import" not in src
    with pytest.raises(HarnessError, match="holds no CUDA string that defines other"):
        embedded_cuda(str(ws / "vadd.py"), "other")


def _with_table(tmp_path: Path) -> Path:
    """A workspace with the cupy vadd and the template's table, its reference written."""
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY})
    model = load(ws / "vadd.py")
    (ws / "htam.toml").write_text(write_template(model, model.kernels[0]).replace('reference = ""',
                                                                                   'reference = "a + b"'))
    return ws


def test_the_template_table_is_a_harness(tmp_path):
    """Regression: a grid table for a kernel in a Python string was refused as needing a @triton.jit kernel."""
    ws = _with_table(tmp_path)
    h = find_harness(ws / "vadd.py", "vadd")
    assert h.language == "cuda-in-python" and h.grid == "(cdiv(N, 256),)" and h.block == "256"
    assert h.args == ["a", "b", "c", "n"] and not h.launcher


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="cupy is not installed")
def test_the_template_table_verifies_the_kernel_on_the_gpu(tmp_path):
    from htam_core.verify.run import verify_in_worker  # the verifier's worker: only this GPU test needs it

    ws = _with_table(tmp_path)
    r = verify_in_worker(find_harness(ws / "vadd.py", "vadd"), timeout_s=300)
    assert r.correct and r.verified_on == "gpu", r


CU_KERNEL = """extern "C" __global__ void vscale(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""

CU_LAUNCHER_PY = """import cupy as cp

mod = cp.RawModule(path="vscale.cu")
vscale = mod.get_function("vscale")


def scale(x):
    n = x.size
    y = cp.empty_like(x)
    threads = 64
    vscale(((n + threads - 1) // threads,), (threads,), (x, y, cp.int32(n)))
    return y
"""


@pytest.mark.parametrize("launcher", ["run.py", "host.cpp"])
def test_a_cu_kernel_launched_from_another_file_gets_that_launch_in_its_template(tmp_path, launcher):
    """A ``.cu`` kernel launched only from another workspace file (a cupy ``RawModule(path=...)`` call, a C++
    launcher): the template writes that launch's block and grid, not the default guess of 256 threads."""
    other = CU_LAUNCHER_PY if launcher.endswith(".py") else (
        'extern "C" __global__ void vscale(const float *x, float *y, int n);\n'
        "void scale(const float *x, float *y, int n) { vscale<<<(n + 63) / 64, 64>>>(x, y, n); }\n")
    ws = workspace(tmp_path, {"vscale.cu": CU_KERNEL, launcher: other})
    table = _table(ws / "vscale.cu")
    assert table["block"] == "64" and table["grid"] == "(cdiv(N, 64),)", table


def test_a_load_inline_kernel_launched_by_its_cpp_function_names_that_function(tmp_path):
    """Regression (a new user's trial): the refusal gave the Triton hint `kernel[grid](...)` for a kernel that a
    C++ function of the file's ``load_inline`` string launches; it now names that function and the way out."""
    from htam_core.harness.infer_py import infer

    text = '''from torch.utils.cpp_extension import load_inline

src = r"""
__global__ void twice(const float *x, float *y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
torch::Tensor run_twice(torch::Tensor x) {
    auto y = torch::empty_like(x);
    twice<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""
mod = load_inline(name="tw", cpp_sources="torch::Tensor run_twice(torch::Tensor x);", cuda_sources=src,
                  functions=["run_twice"])


def twice(x):
    return mod.run_twice(x)
'''
    path = tmp_path / "tw.py"
    path.write_text(text)
    res = infer(path, "twice", run_code=False)
    assert res.harness is None
    assert "launched by the C++ function run_twice() in the CUDA string of tw.py (line 10)" in res.reason
    assert "kernel[grid]" not in res.reason
