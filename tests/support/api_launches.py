"""Programs that launch kernels through the CUDA runtime API instead of ``<<<...>>>``, written for htam's tests.

Each spelling is one kernel and a ``main()`` that allocates its buffer and launches it once: ``cudaLaunchKernel`` with
a ``void* args[]`` array and ``dim3`` temporaries, with the grid and block in variables, through
``cudaLaunchCooperativeKernel``, through ``cudaLaunchKernelEx`` with a config whose fields are assigned or given by
a designated initializer, a template instance, and a ``reinterpret_cast``. Every program compiles with
``nvcc -arch=sm_90 -c``.
"""

from __future__ import annotations

import re

KERNEL = """#include <cuda_runtime.h>

TEMPLATE__global__ void scale(T* x, T f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * f;
}

int main()
{
    int n = 1 << 14;
    T f = 2;
    T* x;
    cudaMalloc(&x, n * sizeof(T));
LAUNCH
    cudaDeviceSynchronize();
    cudaFree(x);
    return 0;
}
"""

#: name -> (launch statements, grid, block (blocks and threads, for n = 16384), whether the kernel is a template)
SPELLINGS: dict[str, tuple[str, int, int, bool]] = {
    "dim3 temporaries": ("""    void* args[] = {&x, &f, &n};
    cudaLaunchKernel((const void*)scale, dim3((n + 255) / 256), dim3(256), args, 0, 0);""", 64, 256, False),
    "variables": ("""    dim3 threads(128);
    dim3 blocks((n + threads.x - 1) / threads.x);
    void* kargs[] = {&x, &f, &n};
    cudaLaunchKernel((void*)&scale, blocks, threads, kargs, 0, nullptr);""", 128, 128, False),
    "cooperative": ("""    int tpb = 256;
    int nb = (n + tpb - 1) / tpb;
    void* cargs[] = {&x, &f, &n};
    cudaLaunchCooperativeKernel((void*)scale, nb, tpb, cargs);""", 64, 256, False),
    "ex config": ("""    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((n + 511) / 512);
    config.blockDim = dim3(512);
    config.dynamicSmemBytes = 0;
    config.stream = 0;
    cudaLaunchKernelEx(&config, scale, x, f, n);""", 32, 512, False),
    "ex designated": ("""    cudaLaunchConfig_t cfg = {.gridDim = dim3((n + 63) / 64), .blockDim = dim3(64), .dynamicSmemBytes = 0};
    cudaLaunchKernelEx(&cfg, scale, x, f, n);""", 256, 64, False),
    "template instance": ("""    void* args[] = {&x, &f, &n};
    cudaLaunchKernel((const void*)scale<float>, dim3((n + 255) / 256), dim3(256), args, 0, 0);""", 64, 256, True),
    "reinterpret_cast": ("""    void* args[] = {&x, &f, &n};
    cudaLaunchKernel(reinterpret_cast<const void*>(&scale), dim3((n + 127) / 128), dim3(128), args);""",
                         128, 128, False),
}


def program(name: str) -> str:
    """The program of spelling ``name`` (a key of :data:`SPELLINGS`), on ``float`` data."""
    launch, _, _, template = SPELLINGS[name]
    kernel, _, main = KERNEL.replace("LAUNCH", launch).partition("int main()")
    kernel = kernel.replace("TEMPLATE", "template <typename T>\n" if template else "")
    if not template:
        kernel = re.sub(r"\bT\b", "float", kernel)
    return kernel + "int main()" + re.sub(r"\bT\b", "float", main)
