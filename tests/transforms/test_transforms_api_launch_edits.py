"""Steps that read or change a kernel's launch work on launches through the CUDA runtime API.

``__launch_bounds__`` reads the block size from a ``cudaLaunchKernel``/``cudaLaunchCooperativeKernel``/
``cudaLaunchKernelEx`` launch; the block size, the grid-stride loop's capped grid and a histogram's dynamic shared
memory edit the launch's slot expressions (a ``dim3`` temporary, a variable where it is defined, a config field's
assigned value). Each candidate compiles with nvcc. Programs written for these tests (tests/support/api_launches.py).
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source.api import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose
from tests.support.api_launches import SPELLINGS, program


def _propose(text: str, tid: str, kernel: str = "scale"):
    model = parse_text(text, "cuda", "/tmp/api_launch_edits.cu")
    return propose(tid, model, model.kernel(kernel))


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_launch_bounds_reads_the_block_of_the_launch(name: str) -> None:
    cands = _propose(program(name), "cuda.launch_bounds")
    assert not isinstance(cands, NotApplicable), cands.reason
    block = SPELLINGS[name][2]
    assert f"__launch_bounds__({block}) scale(" in cands[0].new_text


#: The spellings whose launch a step may change (a cooperative grid must stay resident at once: not changed).
CHANGEABLE = [n for n in SPELLINGS if n != "cooperative"]


@pytest.mark.parametrize("name", CHANGEABLE)
def test_the_block_size_step_edits_the_launch(name: str) -> None:
    text = program(name)
    cands = _propose(text, "cuda.block_size")
    assert not isinstance(cands, NotApplicable), cands.reason
    new = cands[0].new_text
    old_block = SPELLINGS[name][2]
    changed = [ln for ln in new.splitlines() if ln not in text.splitlines()]
    assert changed and all(str(old_block) not in ln for ln in changed if "__launch_bounds__" not in ln)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", CHANGEABLE)
def test_every_edit_of_the_launch_compiles(tmp_path, name: str) -> None:
    text = program(name)
    for k, tid in enumerate(("cuda.block_size", "cuda.launch_bounds", "cuda.grid_stride")):
        cands = _propose(text, tid)
        assert isinstance(cands, list) and cands, tid
        assert_nvcc_compiles(cands[0].new_text, tmp_path, f"c{k}.cu")


@pytest.mark.parametrize("tid", ["cuda.block_size", "cuda.grid_stride", "cuda.grid_size"])
def test_a_cooperative_launch_is_not_changed(tid: str) -> None:
    cands = _propose(program("cooperative"), tid)
    made = cands if isinstance(cands, list) else []  # a launch-independent form may stand, the launch as written
    assert all("cudaLaunchCooperativeKernel((void*)scale, nb, tpb, cargs);" in c.new_text
               and "int tpb = 256;" in c.new_text and "int nb = (n + tpb - 1) / tpb;" in c.new_text for c in made)
    if tid == "cuda.block_size":
        assert isinstance(cands, NotApplicable) and "cooperative" in cands.reason, cands


def test_the_grid_stride_grid_goes_into_the_slot() -> None:
    c = _propose(program("variables"), "cuda.grid_stride")[0]
    assert ("cudaLaunchKernel((void*)&scale, dim3(htam_sm_grid(blocks.x, 8), blocks.y, blocks.z), threads, kargs, 0, "
            "nullptr);") in c.new_text
    c = _propose(program("ex config"), "cuda.grid_stride")[0]
    assert "config.gridDim = dim3(htam_sm_grid((n + 511) / 512, 8));" in c.new_text


HIST = """#include <cuda_runtime.h>
__global__ void hist(const int* d, int* h, int n, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[d[i] % nb], 1);
}

int main()
{
    int n = 1 << 16, nb = 64;
    int *d, *h;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&h, nb * sizeof(int));
    void* args[] = {&d, &h, &n, &nb};
LAUNCH
    cudaDeviceSynchronize();
    return 0;
}
"""

#: the launch -> what it becomes with the privatized histogram's dynamic shared memory (None: no size slot)
HIST_LAUNCHES = {
    "cudaLaunchKernel((const void*)hist, dim3((n + 255) / 256), dim3(256), args, 0, 0);":
        "cudaLaunchKernel((const void*)hist, dim3(htam_sm_grid((n + 255) / 256, 8)), dim3(256), args, (nb) * sizeof(int), 0);",
    "cudaLaunchKernel(hist, dim3((n + 255) / 256), dim3(256), args);":
        "cudaLaunchKernel(hist, dim3(htam_sm_grid((n + 255) / 256, 8)), dim3(256), args, (nb) * sizeof(int));",
    "cudaLaunchConfig_t c = {.gridDim = dim3((n + 255) / 256), .blockDim = dim3(256), .dynamicSmemBytes = 0};\n"
    "    cudaLaunchKernelEx(&c, hist, (const int*)d, h, n, nb);":
        "cudaLaunchConfig_t c = {.gridDim = dim3(htam_sm_grid((n + 255) / 256, 8)), .blockDim = dim3(256), "
        ".dynamicSmemBytes = (nb) * sizeof(int)};",
    "cudaLaunchConfig_t c = {};\n    c.gridDim = dim3((n + 255) / 256);\n    c.blockDim = dim3(256);\n"
    "    cudaLaunchKernelEx(&c, hist, (const int*)d, h, n, nb);": None,
}


@pytest.mark.parametrize("launch", list(HIST_LAUNCHES))
def test_dynamic_shared_memory_goes_into_the_shared_bytes_slot(tmp_path, launch: str) -> None:
    (c,) = _propose(HIST.replace("LAUNCH", "    " + launch), "cuda.smem_histogram", "hist")
    want = HIST_LAUNCHES[launch]
    if want is None:  # a config without dynamicSmemBytes: the launch-independent form, saying why
        assert c.params["shared"] == "capped" and "sets no dynamicSmemBytes" in c.description
    else:
        assert c.params["shared"] == "dynamic" and want in c.new_text
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(c.new_text, tmp_path)


@pytest.mark.parametrize("size", ["int n = 4096;", "const int n = 1 << 14;", "int n = 1000;"])
def test_a_ceil_division_over_a_constant_local_follows_the_block(size: str) -> None:
    """Regression: ``(n + 255) / 256`` after ``int n = 4096;`` folded to a number, was read as no ceil-division,
    and the block size was refused."""
    text = program("dim3 temporaries").replace("int n = 1 << 14;", size)
    text = text.replace("    void* args[] = {&x, &f, &n};\n    cudaLaunchKernel((const void*)scale, dim3((n + 255) / 256), "
                        "dim3(256), args, 0, 0);", "    scale<<<(n + 255) / 256, 256>>>(x, f, n);")
    cands = _propose(text, "cuda.block_size")
    assert not isinstance(cands, NotApplicable), cands.reason
    assert "scale<<<(n + 255) / 256, 256>>>" not in cands[0].new_text


def test_a_block_variable_shared_with_another_api_launch_is_refused_in_one_line() -> None:
    text = program("cooperative").replace("int main()", "__global__ void other(float* x, int n)\n{\n"
                                          "    if (blockIdx.x * blockDim.x + threadIdx.x < n) x[0] = 1.0f;\n}\n\nint main()")
    text = text.replace("    cudaDeviceSynchronize();", "    void* oargs[] = {&x, &n};\n"
                        "    cudaLaunchKernel((const void*)other, nb, tpb, oargs, 0, 0);\n    cudaDeviceSynchronize();")
    r = _propose(text, "cuda.block_size")
    assert isinstance(r, NotApplicable)
    assert "also configures the launch other" in r.reason and "\n" not in r.reason
