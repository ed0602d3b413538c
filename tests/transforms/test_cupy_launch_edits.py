"""A CUDA kernel held in a Python string and launched through cupy in the same file (``kern((grid,), (block,),
args)``): the launch is found and read (block size known), and a step that changes the launch edits the kernel's
string and the Python call as one edit of the file, in Python (``//``), the string's quoting and indentation kept.
A step whose launch change Python cannot hold falls back to its launch-independent form and says so. The edited
string compiles with nvcc (``sm_90``); on a GPU with cupy the edited module runs and matches the start."""

from __future__ import annotations

import ast
import difflib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.source.workspace import find_launches
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, apply_edits
from tests.support.nvcc_check import assert_compiles
from tests.support.workspace_fixtures import (
    CUPY_PY,
    CUPY_TRANSPOSE_PY,
    CUPY_VADD_PY,
    LOAD_INLINE_TWO_STRINGS_PY,
    VADD,
    needs_nvcc_mark,
    propose_first,
    workspace,
)

needs_nvcc = needs_nvcc_mark()
_propose = propose_first


def _pick(cands: list[Candidate], **params: object) -> Candidate:
    return next(c for c in cands if all(c.params.get(k) == v for k, v in params.items()))


def _changed(old: str, new: str) -> list[str]:
    """The lines ``new`` has that ``old`` has not."""
    return [ln[1:] for ln in difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm="")
            if ln.startswith("+") and not ln.startswith("+++")]


def _cuda_string(text: str, var: str) -> str:
    """The value of the module-level string ``var`` of Python file ``text``."""
    tree = ast.parse(text)
    return next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == var and isinstance(n.value, ast.Constant))


def _nvcc(tmp: Path, name: str, cuda: str) -> None:
    assert_compiles(cuda, flags=("-x", "cu"), tmp=tmp, name=name)


def test_the_cupy_launch_is_found_and_editable(tmp_path):
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY})
    model = load(ws / "vadd.py")
    (la,) = find_launches(model, model.kernels[0])
    assert la.style == "cupy" and la.path == str(ws / "vadd.py") and la.line == 17 and la.editable
    assert la.block == "(BLOCK,)" and la.block_value == (256,) and la.grid_value is None


def test_a_cupy_launch_not_read_is_found_but_left_as_is(tmp_path):
    text = CUPY_VADD_PY.replace("((n + BLOCK - 1) // BLOCK,)", "(math.ceil(n / BLOCK),)")
    ws = workspace(tmp_path, {"vadd.py": text})
    model = load(ws / "vadd.py")
    (la,) = find_launches(model, model.kernels[0])
    assert not la.editable and la.block_value == (256,)
    (c,) = _propose(ws / "vadd.py", "cuda.vectorize_float4")
    assert c.params["launch"] == "independent" and c.title_note == "launch in vadd.py line 17 left as is: correct " \
        "for any grid"


def test_block_size_edits_the_module_constant(tmp_path):
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY})
    c = _pick(_propose(ws / "vadd.py", "cuda.block_size"), block=[128])
    assert not c.file_edits and _changed(CUPY_VADD_PY, c.new_text) == ["BLOCK = 128"]


def test_a_constant_read_elsewhere_is_not_changed(tmp_path):
    text = CUPY_VADD_PY.replace("    return c\n", "    print(BLOCK)\n    return c\n")
    ws = workspace(tmp_path, {"vadd.py": text})
    model = load(ws / "vadd.py")
    why = registry.propose("cuda.block_size", model, model.kernels[0]).reason
    assert "BLOCK is read elsewhere in the file too" in why and "(line 10)" in why
    (v,) = _propose(ws / "vadd.py", "cuda.vectorize_float4")  # the call's grid is the launch's own: it shrinks
    assert "    kern(((((n + BLOCK - 1) // BLOCK) + 3) // 4,), (BLOCK,), (a, b, c, cp.int32(n)))" in v.new_text
    assert "BLOCK = 256" in v.new_text


@needs_nvcc
def test_vectorize_shrinks_the_python_grid(tmp_path):
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY})
    (c,) = _propose(ws / "vadd.py", "cuda.vectorize_float4")
    changed = _changed(CUPY_VADD_PY, c.new_text)
    assert "    kern(((((n + BLOCK - 1) // BLOCK) + 3) // 4,), (BLOCK,), (a, b, c, cp.int32(n)))" in changed
    compile(c.new_text, "vadd.py", "exec")
    assert 'SRC = r"""\nextern "C" __global__ void vadd(' in c.new_text  # the string's quoting kept
    cuda = _cuda_string(c.new_text, "SRC")
    assert "float4" in cuda and "htam_cupy" not in cuda  # the joint unit's host function is not written
    _nvcc(tmp_path, "vadd4.cu", cuda)


def test_grid_stride_without_a_python_cap_is_launch_independent(tmp_path):
    """The grid cap is a C helper Python cannot call: the launch-independent loop is offered, the call kept."""
    ws = workspace(tmp_path, {"vadd.py": CUPY_VADD_PY})
    (c,) = _propose(ws / "vadd.py", "cuda.grid_stride")
    assert c.params["launch"] == "independent"
    assert c.title_note == "launch in vadd.py line 17 left as is: correct for any grid"
    assert "kern(((n + BLOCK - 1) // BLOCK,), (BLOCK,)" in c.new_text


def test_2d_block_size_recomputes_both_grid_components(tmp_path):
    ws = workspace(tmp_path, {"t.py": CUPY_TRANSPOSE_PY})
    c = _pick(_propose(ws / "t.py", "cuda.block_size"), block=[32, 8])
    assert _changed(CUPY_TRANSPOSE_PY, c.new_text) == [
        "    tr(((cols + 31) // 32, (rows + 7) // 8), (32, 8), (a, out, cp.int32(rows), cp.int32(cols)))"]


def test_block_size_through_names_holding_the_tuples(tmp_path):
    text = CUPY_TRANSPOSE_PY.replace(
        "    tr(((cols + 15) // 16, (rows + 15) // 16), (16, 16),",
        "    threads = (16, 16)\n    blocks = ((cols + 15) // 16, (rows + 15) // 16)\n    tr(blocks, threads,")
    ws = workspace(tmp_path, {"t.py": text})
    c = _pick(_propose(ws / "t.py", "cuda.block_size"), block=[32, 8])
    assert _changed(text, c.new_text) == ["    threads = (32, 8)", "    blocks = ((cols + 31) // 32, (rows + 7) // 8)"]


@needs_nvcc
def test_transpose_tile_changes_the_block_with_the_kernel(tmp_path):
    ws = workspace(tmp_path, {"t.py": CUPY_TRANSPOSE_PY})
    c = _pick(_propose(ws / "t.py", "cuda.transpose_smem_tile"), block=[32, 8])
    assert c.params["rows_per_thread"] == 4  # the coarsened tile: its grid sized to one 32x32 tile per block too
    changed = _changed(CUPY_TRANSPOSE_PY, c.new_text)
    assert "    tr(((cols + 31) // 32, (rows + 31) // 32), (32, 8), (a, out, cp.int32(rows), cp.int32(cols)))" \
        in changed
    assert "code = '''\nextern" in c.new_text and "__shared__ float htam_tile[32][33];" in c.new_text
    _nvcc(tmp_path, "t.cu", _cuda_string(c.new_text, "code"))


def test_a_load_inline_launcher_in_another_string_of_the_file(tmp_path):
    """``cuda_sources=KERNEL + LAUNCHER``: the launcher string's ``<<<>>>`` is read with the kernel's string."""
    ws = workspace(tmp_path, {"ext.py": LOAD_INLINE_TWO_STRINGS_PY})
    model = load(ws / "ext.py")
    (la,) = find_launches(model, model.kernels[0])
    assert la.style == "python-string" and la.line == 15 and la.block_value == (256,) and la.editable
    c = _pick(_propose(ws / "ext.py", "cuda.block_size"), block=[128])
    assert _changed(LOAD_INLINE_TWO_STRINGS_PY, c.new_text) == ["    const int threads = 128;"]
    (v,) = _propose(ws / "ext.py", "cuda.vectorize_float4")
    assert "    scale_kernel<<<(((n + threads - 1) / threads) + 3) / 4, threads>>>(x.data_ptr<float>(), " \
        "y.data_ptr<float>(), (float)s, n);" in _changed(LOAD_INLINE_TWO_STRINGS_PY, v.new_text)
    compile(v.new_text, "ext.py", "exec")


CUPY_KERNELS_PY = '''import cupy as cp

SRC = r"""
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
kern = cp.RawKernel(SRC, "vadd")
'''

CUPY_IMPORTER_PY = """import cupy as cp
{imp}

THREADS = 128


def add(a, b):
    n = a.size
    c = cp.empty_like(a)
    {call}(((n + THREADS - 1) // THREADS,), (THREADS,), (a, b, c, cp.int32(n)))
    return c
"""


@pytest.mark.parametrize(("imp", "call"), [("import kernels", "kernels.kern"), ("from kernels import kern", "kern"),
                                           ("import kernels as K", "K.kern")])
def test_a_cupy_launch_in_a_module_that_imports_the_kernel(imp, call, tmp_path):
    main = CUPY_IMPORTER_PY.format(imp=imp, call=call)
    ws = workspace(tmp_path, {"kernels.py": CUPY_KERNELS_PY, "main.py": main})
    model = load(ws / "kernels.py")
    (la,) = find_launches(model, model.kernels[0])
    assert la.path == str(ws / "main.py") and la.line == 10 and la.block_value == (128,) and la.editable
    c = _pick(_propose(ws / "kernels.py", "cuda.block_size"), block=[256])
    assert c.new_text == CUPY_KERNELS_PY and c.title_note == "launch in main.py edited too"
    (edits,) = c.file_edits.values()
    assert _changed(main, apply_edits(main, edits)) == ["THREADS = 256"]


def test_a_module_that_does_not_import_the_kernel_is_not_a_launcher(tmp_path):
    main = CUPY_IMPORTER_PY.format(imp="from other import kern", call="kern")
    ws = workspace(tmp_path, {"kernels.py": CUPY_KERNELS_PY, "main.py": main})
    model = load(ws / "kernels.py")
    assert find_launches(model, model.kernels[0]) == []


_RUN_VADD = """
import cupy as cp, vadd
a = cp.arange(1000003, dtype=cp.float32) * 0.5
b = 2.0 - cp.arange(1000003, dtype=cp.float32)
assert bool(cp.all(vadd.add(a, b) == a + b))
print("OK")
"""

_RUN_TRANSPOSE = """
import cupy as cp, t
a = cp.arange(1000 * 777, dtype=cp.float32).reshape(1000, 777)
assert bool(cp.all(t.transpose(a) == a.T))
print("OK")
"""


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="cupy is not installed")
@pytest.mark.parametrize(("name", "text", "tid", "run"), [
    ("vadd.py", CUPY_VADD_PY, "cuda.block_size", _RUN_VADD),
    ("vadd.py", CUPY_VADD_PY, "cuda.vectorize_float4", _RUN_VADD),
    ("vadd.py", CUPY_VADD_PY, "cuda.grid_stride", _RUN_VADD),
    ("t.py", CUPY_TRANSPOSE_PY, "cuda.block_size", _RUN_TRANSPOSE),
    ("t.py", CUPY_TRANSPOSE_PY, "cuda.transpose_smem_tile", _RUN_TRANSPOSE),
])
def test_edited_cupy_module_runs_on_the_gpu(name, text, tid, run, tmp_path):
    ws = workspace(tmp_path / "ws", {name: text})
    for i, c in enumerate(_propose(ws / name, tid)):
        out = tmp_path / f"cand{i}"
        out.mkdir()
        (out / name).write_text(c.new_text)
        p = subprocess.run([sys.executable, "-c", run], cwd=out, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "OK" in p.stdout, c.description + p.stderr[-3000:]


_RUN_LAUNCHER = """
import cupy as cp, launch
n = 1000003
a = cp.arange(n, dtype=cp.float32) * 0.5
b = 2.0 - cp.arange(n, dtype=cp.float32)
c = cp.zeros(n, dtype=cp.float32)
launch.run(a, b, c, cp.int32(n))
assert bool(cp.all(c == a + b))
print("OK")
"""


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="cupy is not installed")
@pytest.mark.parametrize("tid", ["cuda.block_size", "cuda.vectorize_float4", "cuda.grid_stride"])
def test_a_cu_kernel_and_its_edited_cupy_launcher_run_on_the_gpu(tid, tmp_path):
    """A ``.cu`` kernel compiled by a cupy launcher (``RawModule(code=open("k.cu").read())``): both files edited."""
    ws = workspace(tmp_path / "ws", {"k.cu": VADD.replace("__global__", 'extern "C" __global__'), "launch.py": CUPY_PY})
    for i, c in enumerate(_propose(ws / "k.cu", tid)):
        out = tmp_path / f"cand{i}"
        out.mkdir()
        (out / "k.cu").write_text(c.new_text)
        launcher = CUPY_PY
        for p, edits in c.file_edits.items():
            assert Path(p).name == "launch.py"
            launcher = apply_edits(CUPY_PY, edits)
        (out / "launch.py").write_text(launcher)
        p = subprocess.run([sys.executable, "-c", _RUN_LAUNCHER], cwd=out, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0 and "OK" in p.stdout, c.description + p.stderr[-3000:]
