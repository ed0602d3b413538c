#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <vector>

namespace act {

__device__ __forceinline__ float silu_f(float v) { return v / (1.0f + __expf(-v)); }

// Two bfloat16 per thread through __nv_bfloat162 (32-bit loads and stores); an odd tail by the last thread.
static __global__ void silu_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ g,
                                 __nv_bfloat16* __restrict__ y, int n) {
    int i2 = blockIdx.x * blockDim.x + threadIdx.x;
    int n2 = n / 2;
    if (i2 < n2) {
        __nv_bfloat162 a = reinterpret_cast<const __nv_bfloat162*>(x)[i2];
        __nv_bfloat162 b = reinterpret_cast<const __nv_bfloat162*>(g)[i2];
        float2 af = __bfloat1622float2(a);
        float2 bf = __bfloat1622float2(b);
        reinterpret_cast<__nv_bfloat162*>(y)[i2] =
            __floats2bfloat162_rn(silu_f(af.x) * bf.x, silu_f(af.y) * bf.y);
    } else if (i2 == n2 && (n & 1)) {
        y[n - 1] = __float2bfloat16(silu_f(__bfloat162float(x[n - 1])) * __bfloat162float(g[n - 1]));
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
    int threads = n / 2 + 1;
    act::silu_bf16<<<(threads + 255) / 256, 256>>>(x, g, y, n);
    cudaMemcpy(hy.data(), y, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(g);
    cudaFree(y);
    return 0;
}
