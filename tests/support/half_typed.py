"""Texts of the half-typed-code regression tests, shared by the CLI and LSP tests.

``CUDA`` and ``TRITON`` hold a half-typed definition (``half``) between two complete kernels;
``TRITON_COMPLETE`` is ``TRITON`` without it; ``FORMS`` holds Triton kernels defined in a class
and bound by ``triton.jit(fn)``.
"""

from __future__ import annotations

CUDA = (
    "__global__ void first(float* x, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] = 2.0f * x[i];\n"
    "}\n"
    "\n"
    "__global__ void half(float* y,\n"
    "\n"
    "__global__ void second(float* z, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) z[i] = z[i] + 1.0f;\n"
    "}\n"
)
TRITON = (
    "import triton\n"
    "import triton.language as tl\n"
    "\n"
    "\n"
    "@triton.jit\n"
    "def first(x_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n"
    "\n"
    "\n"
    "@triton.jit\n"
    "def half(x_ptr,\n"
    "\n"
    "\n"
    "@triton.jit\n"
    "def second(y_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=offs < n) + 1, mask=offs < n)\n"
)
FORMS = (
    "import triton\n"
    "import triton.language as tl\n"
    "\n"
    "\n"
    "class Ops:\n"
    "    @staticmethod\n"
    "    @triton.jit\n"
    "    def scale(x_ptr, n, BLOCK: tl.constexpr):\n"
    "        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n"
    "\n"
    "    @triton.jit\n"
    "    def shift(x_ptr, n, BLOCK: tl.constexpr):\n"
    "        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)\n"
    "\n"
    "\n"
    "def _add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)\n"
    "\n"
    "\n"
    "add_kernel = triton.jit(_add_kernel)\n"
    "\n"
    "\n"
    "def run(x, y):\n"
    "    n = x.numel()\n"
    "    add_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)\n"
    "    Ops.scale[(triton.cdiv(n, 256),)](x, n, BLOCK=256)\n"
)
TRITON_COMPLETE = TRITON.replace("@triton.jit\ndef half(x_ptr,\n\n\n", "")
CLASS_ATTRS = (
    "import triton\n"
    "import triton.language as tl\n"
    "\n"
    "\n"
    "def _fn(x_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)\n"
    "\n"
    "\n"
    "class Ops:\n"
    "    triple = triton.jit(_fn)\n"
    "    tuned = triton.autotune(configs=[triton.Config({'BLOCK': 128}, num_warps=2)], key=['n'])(triton.jit(_fn))\n"
)
