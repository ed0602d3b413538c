#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <vector>

namespace act {

// SiLU in float, on a bfloat16 value.
__device__ __forceinline__ float silu_f(float v) { return v / (1.0f + __expf(-v)); }

// y[i] = silu(x[i]) * g[i] (SwiGLU gate) on bfloat16 data; one element per thread.
static __global__ void silu_bf16(const __nv_bfloat16* x, const __nv_bfloat16* g, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float a = __bfloat162float(x[i]);
        float b = __bfloat162float(g[i]);
        y[i] = __float2bfloat16(silu_f(a) * b);
    } else {
        return;
    }
}

}  // namespace act

int main() {
    const int n = 1 << 24;
    std::vector<__nv_bfloat16> hx(n), hg(n), hy(n);
    for (int i = 0; i < n; ++i) {
        hx[i] = __float2bfloat16((float)((i % 401) - 200) * 0.02f);
        hg[i] = __float2bfloat16((float)(i % 7) * 0.25f);
    }
    __nv_bfloat16 *x, *g, *y;
    cudaMalloc(&x, n * sizeof(__nv_bfloat16));
    cudaMalloc(&g, n * sizeof(__nv_bfloat16));
    cudaMalloc(&y, n * sizeof(__nv_bfloat16));
    cudaMemcpy(x, hx.data(), n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice);
    cudaMemcpy(g, hg.data(), n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice);
    act::silu_bf16<<<(n + 255) / 256, 256>>>(x, g, y, n);
    cudaMemcpy(hy.data(), y, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(g);
    cudaFree(y);
    return 0;
}
