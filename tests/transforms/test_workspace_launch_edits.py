"""Steps that change the launch of a kernel launched from somewhere else edit both places as one change: the
kernel's file (``Candidate.edits``) and the launcher (``Candidate.file_edits``): a host ``.cpp``, a ``#define``
wrapper, the CUDA string of a ``load_inline`` call, a Triton launcher in another module. With no editable launch
anywhere, the launch-independent form is offered and its note says so. Both edited files compile with nvcc
(``sm_90``); on a GPU the edited pair runs and matches the start."""

from __future__ import annotations

import os
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
    LOAD_INLINE_PY,
    MACRO_CU,
    MAIN_CPP,
    PARTIAL_SUM,
    PARTIAL_SUM_HOST,
    SCALE_CUH,
    TORCH_EXT_CU,
    TRITON_KERNELS,
    TRITON_MAIN,
    VADD,
    needs_nvcc_mark,
    propose_first,
    workspace,
)

needs_nvcc = needs_nvcc_mark()
_propose = propose_first


def _written(path: Path, cand: Candidate) -> dict[str, str]:
    """The files a candidate writes: the kernel's file and each launcher, by name."""
    out = {path.name: cand.new_text}
    for p, edits in cand.file_edits.items():
        out[Path(p).name] = apply_edits(Path(p).read_text(), edits)
    return out


def _nvcc(tmp: Path, name: str, text: str, *extra: str) -> None:
    assert_compiles(text, flags=("-x", "cu", *extra), tmp=tmp / "out", name=name)


def _pick(cands: list[Candidate], **params: object) -> Candidate:
    return next(c for c in cands if all(c.params.get(k) == v for k, v in params.items()))


def test_block_size_edits_the_host_file(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    c = _pick(_propose(ws / "k.cu", "cuda.block_size"), block=[512])
    files = _written(ws / "k.cu", c)
    assert "const int threads = 512;" in files["main.cpp"] and files["k.cu"] == VADD
    assert c.title_note == "launch in main.cpp edited too" and list(c.file_edits) == [str(ws / "main.cpp")]


@needs_nvcc
@pytest.mark.parametrize("tid", ["cuda.block_size", "cuda.grid_stride", "cuda.vectorize_float4"])
def test_both_edited_files_compile(tid, tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    c = _propose(ws / "k.cu", tid)[0]
    assert c.file_edits, c.description
    for name, text in _written(ws / "k.cu", c).items():
        _nvcc(tmp_path, name, text)


def test_grid_stride_caps_the_grid_where_it_is_launched(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    c = _pick(_propose(ws / "k.cu", "cuda.grid_stride"), blocks_per_sm=8)
    files = _written(ws / "k.cu", c)
    assert "htam_sm_grid((n + threads - 1) / threads, 8)" in files["main.cpp"]
    assert "static inline unsigned int htam_sm_grid" in files["main.cpp"]  # declared where it is called
    assert "gridDim.x" in files["k.cu"]


@needs_nvcc
def test_define_wrapper_is_edited_in_place(tmp_path):
    ws = workspace(tmp_path, {"m.cu": MACRO_CU})
    c = _pick(_propose(ws / "m.cu", "cuda.block_size"), block=[128])
    assert not c.file_edits
    assert c.new_text.splitlines()[0] == "#define LAUNCH_VADD(n, ...) vadd<<<((n) + 127) / 128, 128>>>(__VA_ARGS__)"
    _nvcc(tmp_path, "m.cu", c.new_text)
    v = _propose(ws / "m.cu", "cuda.vectorize_float4")[0]
    assert "((((n) + 255) / 256) + 3) / 4" in v.new_text.splitlines()[0]
    _nvcc(tmp_path, "m4.cu", v.new_text)


@needs_nvcc
def test_load_inline_string_is_edited(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "ext.py": LOAD_INLINE_PY})
    c = _pick(_propose(ws / "k.cu", "cuda.block_size"), block=[256])
    files = _written(ws / "k.cu", c)
    assert "vadd<<<(n + 255) / 256, 256>>>(a, b, c, n);" in files["ext.py"]
    compile(files["ext.py"], "ext.py", "exec")
    launcher = files["ext.py"].split('r"""')[1].split('"""')[0]
    _nvcc(tmp_path, "joined.cu", files["k.cu"] + launcher)  # what load_inline compiles


def test_triton_launcher_in_another_module(tmp_path):
    ws = workspace(tmp_path, {"kernels.py": TRITON_KERNELS, "main.py": TRITON_MAIN})
    c = _pick(_propose(ws / "kernels.py", "triton.block_size"), BLOCK=512)
    files = _written(ws / "kernels.py", c)
    assert "add_kernel[(triton.cdiv(n, 512),)](x, y, out, n, BLOCK=512)" in files["main.py"]
    assert files["kernels.py"] == TRITON_KERNELS
    out = tmp_path / "out"
    out.mkdir()
    for name, text in files.items():
        (out / name).write_text(text)
    run = ("import torch, main\nx = torch.arange(3000, dtype=torch.float32)\ny = torch.ones(3000)\n"
           "assert torch.equal(main.add(x, y), x + y)\nprint('ok')\n")
    p = subprocess.run([sys.executable, "-c", run], cwd=out, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TRITON_INTERPRET": "1"})
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]


def test_cupy_launch_is_edited_in_python(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "launch.py": CUPY_PY})
    (c,) = _propose(ws / "k.cu", "cuda.vectorize_float4")
    assert c.title_note == "launch in launch.py edited too"
    assert "    f(((((n + THREADS - 1) // THREADS) + 3) // 4,), (THREADS,), (a, b, c, n))" in \
        _written(ws / "k.cu", c)["launch.py"]


def test_cupy_launch_not_read_is_found_but_left_as_is(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "launch.py": CUPY_PY.replace("(n + THREADS - 1) // THREADS",
                                                                         "math.ceil(n / THREADS)")})
    (c,) = _propose(ws / "k.cu", "cuda.vectorize_float4")
    assert c.params["launch"] == "independent" and not c.file_edits
    assert c.title_note == "launch in launch.py line 9 left as is: correct for any grid"


def test_no_launch_anywhere_gives_the_launch_independent_form(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD})
    (c,) = _propose(ws / "k.cu", "cuda.grid_stride")
    assert c.params["launch"] == "independent" and not c.file_edits
    assert c.title_note == "launch not found: correct for any grid"
    model = load(ws / "k.cu")
    assert "no launch site" in registry.propose("cuda.block_size", model, model.kernels[0]).reason


def test_torch_extension_dispatch_lambda(tmp_path):
    """A templated kernel in a header, launched from a torch extension inside an ``AT_DISPATCH_*`` lambda whose
    block size is a local of the host function: the block size is known and retuned in the extension."""
    ws = workspace(tmp_path, {"kern.cuh": SCALE_CUH, "ext.cu": TORCH_EXT_CU})
    model = load(ws / "kern.cuh")
    (la,) = find_launches(model, model.kernels[0])
    assert la.path == str(ws / "ext.cu") and la.line == 10 and la.template_args == ("scalar_t",)
    assert la.block == "threads" and la.block_value == (256,)
    c = _pick(_propose(ws / "kern.cuh", "cuda.block_size"), block=[512])
    assert "const int threads = 512;" in _written(ws / "kern.cuh", c)["ext.cu"]


def test_output_contract_holds_across_files(tmp_path):
    """One partial sum per block, launched from host.cpp: the block size is not offered (the grid, and so the
    output's length, would change), and a refusal that points at the launch names the launcher's own line."""
    ws = workspace(tmp_path, {"r.cu": PARTIAL_SUM, "host.cpp": PARTIAL_SUM_HOST})
    model = load(ws / "r.cu")
    why = registry.propose("cuda.block_size", model, model.kernels[0]).reason
    assert "writes one output per block" in why and "partials[blockIdx.x]" in why
    why = registry.propose("cuda.coarsen_reduction", model, model.kernels[0]).reason
    assert "line 3 of host.cpp" in why


_DRIVER = """
#include <cstdio>
#include <vector>
int main() {
    const int n = 1000003;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; ++i) { a[i] = 0.5f * i; b[i] = 2.0f - i; }
    float *da, *db, *dc;
    cudaMalloc(&da, n * sizeof(float)); cudaMalloc(&db, n * sizeof(float)); cudaMalloc(&dc, n * sizeof(float));
    cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    run(da, db, dc, n);
    cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) if (c[i] != a[i] + b[i]) { printf("BAD %d\\n", i); return 1; }
    printf("OK\\n");
    return 0;
}
"""


@pytest.mark.gpu
@needs_nvcc
@pytest.mark.parametrize("tid", ["cuda.block_size", "cuda.grid_stride", "cuda.vectorize_float4"])
def test_edited_pair_runs_on_the_gpu(tid, tmp_path):
    exe = _build_pair(tid, tmp_path)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr


@needs_nvcc
@pytest.mark.parametrize("tid", ["cuda.block_size", "cuda.grid_stride", "cuda.vectorize_float4"])
def test_edited_pair_builds_into_one_program(tid, tmp_path):
    """Regression: the grid cap's helper was defined in the kernel's file only, so a launcher whose own includes
    come before its launch (``main.cu`` with a driver) called an undeclared ``htam_sm_grid``; every launcher that
    calls a helper now defines it (built, not run: the run is the gpu-marked test above)."""
    _build_pair(tid, tmp_path)


def _build_pair(tid: str, tmp_path: Path) -> Path:
    """The program nvcc builds from ``k.cu`` and its launcher ``main.cu`` after step ``tid`` (both edited)."""
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cu": MAIN_CPP + _DRIVER})
    c = _propose(ws / "k.cu", tid)[0]
    out = tmp_path / "out"
    out.mkdir()
    for name, text in _written(ws / "k.cu", c).items():
        (out / name).write_text(text)
    b = subprocess.run(["nvcc", "-arch=sm_90", "-rdc=true", str(out / "k.cu"), str(out / "main.cu"),
                        "-o", str(out / "pair")], capture_output=True, text=True, timeout=300)
    assert b.returncode == 0, b.stderr[-3000:]
    return out / "pair"
