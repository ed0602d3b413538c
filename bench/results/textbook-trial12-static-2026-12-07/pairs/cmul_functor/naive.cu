// Elementwise complex multiply out[i] = a[i] * b[i] of float2 arrays. Templated C++: the kernel is generic in the
// element type and a functor, instantiated at the launch; a grid-stride loop with a size_t index.
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
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        out[i] = op(a[i], b[i]);
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
