#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
#define GROUP 128

// out[i] = (q[i] - zero[g]) * scale[g], g = i / GROUP; 16 bytes per thread (uint4 load, float4 stores).
template <typename OutT>
__global__ void dequant_u8(const uint8_t* __restrict__ q, const float* __restrict__ scale,
                           const uint8_t* __restrict__ zero, OutT* __restrict__ out, int64_t n) {
    int64_t base = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 16;
    if (base >= n) return;
    if (base + 16 <= n) {
        uint4 packed = *reinterpret_cast<const uint4*>(q + base);
        const uint8_t* b = reinterpret_cast<const uint8_t*>(&packed);
        int64_t g = base / GROUP;  // 16 divides GROUP: one group per thread
        float s = scale[g], z = (float)zero[g];
        float4* o = reinterpret_cast<float4*>(out + base);
#pragma unroll
        for (int k = 0; k < 4; ++k)
            o[k] = make_float4(((float)b[4 * k] - z) * s, ((float)b[4 * k + 1] - z) * s,
                               ((float)b[4 * k + 2] - z) * s, ((float)b[4 * k + 3] - z) * s);
    } else {
        for (int64_t i = base; i < n; ++i) out[i] = (OutT)(((float)q[i] - (float)zero[i / GROUP]) * scale[i / GROUP]);
    }
}

int main() {
    const int64_t n = (int64_t)1 << 26;
    const int64_t groups = n / GROUP;
    uint8_t *q, *zero;
    float *scale, *out;
    CHECK(cudaMalloc(&q, n));
    CHECK(cudaMalloc(&zero, groups));
    CHECK(cudaMalloc(&scale, groups * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMemset(q, 3, n));
    CHECK(cudaMemset(zero, 1, groups));
    CHECK(cudaMemset(scale, 0, groups * sizeof(float)));
    dequant_u8<float><<<(unsigned)((n / 16 + 255) / 256), 256>>>(q, scale, zero, out, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(q)); CHECK(cudaFree(zero)); CHECK(cudaFree(scale)); CHECK(cudaFree(out));
    return 0;
}
