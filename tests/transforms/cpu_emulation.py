"""Run a 1-D CUDA kernel on the CPU, to compare a transform's output with its input numerically on a machine
without a GPU: one thread at a time (:func:`run_main`, kernels without cooperation), or one block at a time with a
host thread per CUDA thread (:func:`run_block_main`: ``__syncthreads``, ``__shared__``, ``atomicAdd`` and warp
shuffles: ``__shfl_sync``, ``__shfl_down_sync``, ``__shfl_up_sync``, ``__shfl_xor_sync``).

The kernel's own definition (from the source model) is compiled with the host C++ compiler behind a small shim:
``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` are globals, ``__global__``/``__restrict__`` vanish, and the
launch becomes a loop over blocks and threads. Only kernels without ``__syncthreads``, shared memory, warp
shuffles or atomics can be run this way (:func:`run_rows` refuses the others), which is the thread-per-row form
of the row kernels. Used by the transform tests only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from htam_core.source import parse_text

SHIM = """#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
struct htam_dim3 { unsigned x = 1, y = 1, z = 1; };
static htam_dim3 threadIdx, blockIdx, blockDim, gridDim;
struct alignas(16) float4 { float x, y, z, w; };  // the CUDA vector type, for float4-vectorized loops
struct alignas(8) float2 { float x, y; };  // and float2, for loops over pairs of floats
template <class T> static T __ldg(const T *p) { return *p; }  // the read-only load (float and float4 overloads)
#define __global__
#define __device__
#define __restrict__
// the launch k<<<dim3(gx, gy), dim3(bx, by)>>>(...) as loops, one thread at a time
#define HTAM_LAUNCH(gx, gy, bx, by, CALL) do { \
    gridDim.x = (gx); gridDim.y = (gy); blockDim.x = (bx); blockDim.y = (by); \
    for (unsigned htam_by = 0; htam_by < gridDim.y; ++htam_by) \
    for (unsigned htam_bx = 0; htam_bx < gridDim.x; ++htam_bx) \
    for (unsigned htam_ty = 0; htam_ty < blockDim.y; ++htam_ty) \
    for (unsigned htam_tx = 0; htam_tx < blockDim.x; ++htam_tx) { \
        blockIdx.x = htam_bx; blockIdx.y = htam_by; threadIdx.x = htam_tx; threadIdx.y = htam_ty; CALL; } \
} while (0)
"""

_COOPERATIVE = ("__syncthreads", "__shared__", "__shfl", "atomic")


BLOCK_SHIM = """#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
struct htam_dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local htam_dim3 threadIdx, blockIdx;
static thread_local unsigned htam_lane, htam_warp;
static htam_dim3 blockDim, gridDim;
static const int warpSize = 32;
static std::barrier<> *htam_bar;
static std::vector<std::unique_ptr<std::barrier<>>> htam_warp_bar;
static double htam_xchg[32][32];
static std::mutex htam_atomic;
#define __global__
#define __device__
#define __restrict__
#define __shared__ static
static void __syncthreads() { htam_bar->arrive_and_wait(); }
// __syncthreads_or: two slots used in turn; each call clears the slot of the call before it (all threads read it
// before that call's second barrier), and every block starts with both cleared
static std::atomic<int> htam_or[2];
static thread_local unsigned htam_or_gen;
static int __syncthreads_or(int p) {
    const unsigned g = htam_or_gen++ & 1u;
    if (p) htam_or[g].fetch_add(1);
    htam_bar->arrive_and_wait();
    const int r = htam_or[g].load() != 0;
    htam_or[g ^ 1u].store(0);
    htam_bar->arrive_and_wait();
    return r;
}
static float atomicAdd(float *p, float v) { std::lock_guard<std::mutex> g(htam_atomic); float o = *p; *p += v; return o; }
static int atomicAdd(int *p, int v) { std::lock_guard<std::mutex> g(htam_atomic); int o = *p; *p += v; return o; }
static unsigned atomicAdd(unsigned *p, unsigned v) { std::lock_guard<std::mutex> g(htam_atomic); unsigned o = *p; *p += v; return o; }
static double atomicAdd(double *p, double v) { std::lock_guard<std::mutex> g(htam_atomic); double o = *p; *p += v; return o; }
template <class T> static T atomicMax(T *p, T v) { std::lock_guard<std::mutex> g(htam_atomic); T o = *p; if (v > o) *p = v; return o; }
template <class T> static T atomicMin(T *p, T v) { std::lock_guard<std::mutex> g(htam_atomic); T o = *p; if (v < o) *p = v; return o; }
// a warp shuffle: every lane of the warp must call it (as on the GPU with a full mask)
template <class T> static T __shfl_sync(unsigned, T v, int src) {
    htam_xchg[htam_warp][htam_lane] = (double)v; htam_warp_bar[htam_warp]->arrive_and_wait();
    T r = (T)htam_xchg[htam_warp][src & 31]; htam_warp_bar[htam_warp]->arrive_and_wait(); return r;
}
template <class T> static T __shfl_xor_sync(unsigned m, T v, int d) { return __shfl_sync(m, v, (int)(htam_lane ^ d)); }
template <class T> static T __shfl_down_sync(unsigned m, T v, unsigned d) {
    return __shfl_sync(m, v, htam_lane + d < 32 ? (int)(htam_lane + d) : (int)htam_lane);
}
template <class T> static T __shfl_up_sync(unsigned m, T v, unsigned d) {
    return __shfl_sync(m, v, htam_lane >= d ? (int)(htam_lane - d) : (int)htam_lane);
}
struct alignas(16) float4 { float x, y, z, w; };  // the CUDA vector type (float4 shared-fragment loads)
// one block at a time; each of its threads is a host thread (so __syncthreads is a barrier); a 3-D grid
static void htam_launch3(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         const std::function<void()> &k, unsigned bz = 1) {
    gridDim.x = gx; gridDim.y = gy; gridDim.z = gz; blockDim.x = bx; blockDim.y = by; blockDim.z = bz;
    const unsigned n = bx * by * bz;
    for (unsigned b = 0; b < gx * gy * gz; ++b) {
        std::barrier<> bar(n); htam_bar = &bar;
        htam_or[0].store(0); htam_or[1].store(0);
        htam_warp_bar.clear();
        for (unsigned w = 0; w * 32 < n; ++w) htam_warp_bar.push_back(std::make_unique<std::barrier<>>(n - w * 32 < 32 ? n - w * 32 : 32));
        std::vector<std::thread> ts;
        for (unsigned tz = 0; tz < bz; ++tz)
        for (unsigned ty = 0; ty < by; ++ty)
            for (unsigned tx = 0; tx < bx; ++tx)
                ts.emplace_back([=, &k] { blockIdx.x = b % gx; blockIdx.y = b / gx % gy; blockIdx.z = b / (gx * gy);
                                          threadIdx.x = tx; threadIdx.y = ty; threadIdx.z = tz;
                                          const unsigned r = (tz * by + ty) * bx + tx;
                                          htam_lane = r % 32; htam_warp = r / 32; k(); });
        for (auto &t : ts) t.join();
    }
}
static void htam_launch2(unsigned gx, unsigned gy, unsigned bx, unsigned by, const std::function<void()> &k) {
    htam_launch3(gx, gy, 1, bx, by, k);
}
static void htam_launch(unsigned gx, unsigned bx, unsigned by, const std::function<void()> &k) {
    htam_launch2(gx, 1, bx, by, k);
}
"""


def compiler() -> str | None:
    """The host C++ compiler (``g++``/``c++``/``clang++``), or ``None``."""
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def run_rows(text: str, kernel: str, rows: int, cols: int, block: int, tmp: Path, *, neg_inf_cols: int = 0,
             extra_args: str = "") -> list[float]:
    """Launch ``kernel(in, out, rows, cols[, extra])`` of CUDA source ``text`` on the CPU over a 1-D grid.

    Args:
        text: the CUDA file text; only the kernel's definition is compiled.
        kernel: its name; its parameters must be ``(const float *in, float *out, int rows, int cols, ...)``.
        rows, cols: the matrix shape; the input is a fixed deterministic pattern.
        block: threads per block (the grid is ``ceil(rows / block)`` blocks).
        tmp: a scratch folder.
        neg_inf_cols: the first ``neg_inf_cols`` entries of every row are ``-inf`` (masked entries).
        extra_args: further launch arguments as C text (``", 0.5f"``).

    Returns:
        ``out`` after the launch, row-major.

    Raises:
        ValueError: the kernel uses thread cooperation, so it cannot run one thread at a time.
        AssertionError: the shim does not compile (the compiler's message is in it).
    """
    main = f"""
int main() {{
    const int rows = {rows}, cols = {cols};
    std::vector<float> x((size_t)rows * cols), y((size_t)rows * cols, 0.0f);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            x[(size_t)r * cols + c] = c < {neg_inf_cols} ? -INFINITY
                : 6.0f * std::sin(0.37f * (float)(r * 31 + c)) + 0.05f * (float)((r + 3 * c) % 11);
    HTAM_LAUNCH((rows + {block} - 1) / {block}, 1, {block}, 1, {kernel}(x.data(), y.data(), rows, cols{extra_args}));
    for (float v : y) std::printf("%.9g\\n", v);
    return 0;
}}
"""
    return run_main(text, kernel, main, tmp)


def run_main(text: str, kernel: str, main: str, tmp: Path, prelude: str = "") -> list[float]:
    """Compile ``kernel``'s definition from ``text`` with ``main`` (C++ that launches it with ``HTAM_LAUNCH(gx,
    gy, bx, by, call)`` and prints numbers) and return the printed numbers; ``prelude`` (C++ text: host stand-ins
    for device types and functions the kernel names, such as ``__half``) comes before the definition.

    Raises:
        ValueError: the kernel uses thread cooperation, so it cannot run one thread at a time.
        AssertionError: the program does not compile (the compiler's message is in it).
    """
    model = parse_text(text, "cuda")
    k = model.kernel(kernel)
    src = text.encode()[k.span.start : k.span.end].decode()
    if any(word in src for word in _COOPERATIVE):
        raise ValueError(f"{kernel} uses thread cooperation; it cannot run one thread at a time")
    cxx = compiler()
    assert cxx is not None, "no host C++ compiler"
    (tmp / "emu.cpp").write_text(SHIM + prelude + src + main)
    p = subprocess.run([cxx, "-O1", "-std=c++17", "-o", str(tmp / "emu"), str(tmp / "emu.cpp")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    out = subprocess.run([str(tmp / "emu")], capture_output=True, text=True, timeout=60, check=True).stdout
    return [float(v) for v in out.split()]


def run_block_main(text: str, kernel: str, main: str, tmp: Path, helpers: tuple[str, ...] = (),
                   prelude: str = "", flags: tuple[str, ...] = ()) -> list[float]:
    """Compile ``kernel``'s definition from ``text`` behind :data:`BLOCK_SHIM` with ``main`` (C++ that launches it
    with ``htam_launch(grid_x, block_x, block_y, [&] { kernel(...); })``, or ``htam_launch2(grid_x, grid_y, ...)``
    for a 2-D grid, ``htam_launch3(grid_x, grid_y, grid_z, ..., block_z)`` for a 3-D one, and prints numbers) and return the
    printed numbers; ``prelude`` (C text: the file's ``#define`` lines the kernel reads) and the definitions of the
    ``__device__`` functions named in ``helpers`` come first. Dynamic shared memory (``extern __shared__ T a[];``) becomes a static array of 8192 elements; an
    ``alignas`` after ``__shared__`` moves before it. ``flags`` are added to the compiler's (``-fsanitize=address``:
    a read outside a host allocation aborts the run).

    Raises:
        AssertionError: no host compiler, or the program does not compile (the compiler's message is in it).
    """
    model = parse_text(text, "cuda")
    k = model.kernel(kernel)
    data = text.encode()
    defs = [data[d.span.start:d.span.end].decode() for h in helpers for d in model.device_functions if d.name == h]
    assert len(defs) == len(helpers), f"not every helper of {helpers} is defined"
    src = re.sub(r"extern\s+__shared__\s+(\w+(?:\s+\w+)*?)\s+(\w+)\s*\[\s*\]", r"static \1 \2[8192]",
                 "\n".join([*defs, data[k.span.start:k.span.end].decode()]))
    # `__shared__ alignas(16) float t[..]`: host C++ wants the attribute first (`alignas(16) static float`)
    src = re.sub(r"__shared__\s+(alignas\s*\(\s*\d+\s*\))", r"\1 __shared__", src)
    cxx = compiler()
    assert cxx is not None, "no host C++ compiler"
    (tmp / "emu.cpp").write_text(BLOCK_SHIM + prelude + "\n" + src + main)
    p = subprocess.run([cxx, "-O1", "-std=c++20", "-pthread", *flags, "-o", str(tmp / "emu"), str(tmp / "emu.cpp")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    out = subprocess.run([str(tmp / "emu")], capture_output=True, text=True, timeout=60, check=True).stdout
    return [float(v) for v in out.split()]


_LANES_MAIN = """
int main() {
    const int rows = ROWS, cols = COLS, block = BLOCK;
    std::vector<float> x((size_t)rows * cols), out(cols, 0.0f);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) x[(size_t)r * cols + c] = (float)((r * 7 + c * 3) % 13) - 6.0f;
    htam_launch(((cols) + 31) / 32, 32, ((block) + 31) / 32, [&] { KERNEL(out.data(), x.data(), rows, cols); });
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}
"""


def run_lane_columns(text: str, kernel: str, rows: int, cols: int, block: int, tmp: Path) -> list[float]:
    """Run a column sum ``kernel(out, x, rows, cols)`` in the launch ``cuda.lane_columns`` writes (``(cols + 31) /
    32`` blocks of ``dim3(32, (block + 31) / 32)``) on the CPU (:func:`run_block_main`) and return ``out``; ``x``
    holds small integers (``(r * 7 + c * 3) % 13 - 6``), so every summation order gives the exact sums."""
    main = _LANES_MAIN.replace("ROWS", str(rows)).replace("COLS", str(cols)).replace("BLOCK", str(block)).replace(
        "KERNEL", kernel)
    return run_block_main(text, kernel, main, tmp)


#: ``htam_sm_grid(blocks, per_sm)`` (the grid cap the launch steps write) on a device of 2 SMs, as a ``prelude`` of
#: :func:`run_block_main`: a small cap, so that a grid-stride loop over the capped grid runs several times.
SM_GRID_PRELUDE = """
static unsigned htam_sm_grid(long long blocks, int per_sm) {
    const long long cap = 2LL * per_sm;  // a device of 2 SMs
    return (unsigned)(blocks < cap ? blocks : cap);
}
"""
