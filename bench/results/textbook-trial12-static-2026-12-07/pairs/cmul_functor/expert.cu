// Elementwise complex multiply out[i] = a[i] * b[i] of float2 arrays. Expert: the grid-stride loop moves two
// complex numbers per float4 load/store, and a scalar tail handles an odd count.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

struct ComplexMul {
    __device__ __forceinline__ float2 operator()(float2 x, float2 y) const {
        return make_float2(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
    }
};

template <typename T, typename Op>
__global__ void binary_map_kernel(const T* a, const T* b, T* out, size_t n, Op op) {
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t n2 = n / 2;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (size_t i = tid; i < n2; i += stride) {
        float4 x = a4[i], y = b4[i];
        float2 lo = op(make_float2(x.x, x.y), make_float2(y.x, y.y));
        float2 hi = op(make_float2(x.z, x.w), make_float2(y.z, y.w));
        o4[i] = make_float4(lo.x, lo.y, hi.x, hi.y);
    }
    for (size_t i = 2 * n2 + tid; i < n; i += stride) out[i] = op(a[i], b[i]);
}

int main() {
    const size_t n = (size_t)(1 << 24) + 3;   // not a multiple of 2
    std::vector<float2> ha(n), hb(n), ho(n);
    for (size_t i = 0; i < n; ++i) {
        ha[i] = make_float2((float)(i % 17) * 0.5f, (float)(i % 5) - 2.0f);
        hb[i] = make_float2((float)(i % 3) - 1.0f, (float)(i % 11) * 0.25f);
    }
    float2 *da, *db, *dout;
    cudaMalloc(&da, n * sizeof(float2));
    cudaMalloc(&db, n * sizeof(float2));
    cudaMalloc(&dout, n * sizeof(float2));
    cudaMemcpy(da, ha.data(), n * sizeof(float2), cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb.data(), n * sizeof(float2), cudaMemcpyHostToDevice);
    const int threads = 256;
    const int blocks = 1024;
    binary_map_kernel<float2, ComplexMul><<<blocks, threads>>>(da, db, dout, n, ComplexMul());
    cudaMemcpy(ho.data(), dout, n * sizeof(float2), cudaMemcpyDeviceToHost);
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += ho[i].x * (double)((i % 7) + 1) + ho[i].y;
    printf("checksum = %.4f\n", sum);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dout);
    return 0;
}
