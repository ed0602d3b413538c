#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <vector>

__device__ __forceinline__ float h2f(__half v) { return __half2float(v); }

// RMSNorm on half rows: y[r][j] = x[r][j] / sqrt(mean_j x[r][j]^2 + eps) * w[j]; one thread per row.
__global__ void rmsnorm_h(const __half* x, const __half* w, __half* y, int rows, int dim, float eps) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const __half* xr = x + (int64_t)r * dim;
        __half* yr = y + (int64_t)r * dim;
        float ss = 0.0f;
        for (int j = 0; j < dim; ++j) {
            float v = h2f(xr[j]);
            ss += v * v;
        }
        float inv = rsqrtf(ss / dim + eps);
        for (int j = 0; j < dim; ++j) yr[j] = __float2half(h2f(xr[j]) * inv * h2f(w[j]));
    } else {
        return;
    }
}

int main() {
    const int rows = 16384, dim = 2048;
    const int64_t total = (int64_t)rows * dim;
    std::vector<__half> hx(total), hw(dim), hy(total);
    for (int64_t i = 0; i < total; ++i) hx[i] = __float2half((float)(i % 41) * 0.05f - 1.0f);
    for (int j = 0; j < dim; ++j) hw[j] = __float2half(1.0f + (float)(j % 9) * 0.01f);
    __half *x, *w, *y;
    cudaMalloc(&x, total * sizeof(__half));
    cudaMalloc(&w, dim * sizeof(__half));
    cudaMalloc(&y, total * sizeof(__half));
    cudaMemcpy(x, hx.data(), total * sizeof(__half), cudaMemcpyHostToDevice);
    cudaMemcpy(w, hw.data(), dim * sizeof(__half), cudaMemcpyHostToDevice);
    rmsnorm_h<<<(rows + 127) / 128, 128>>>(x, w, y, rows, dim, 1e-6f);
    cudaMemcpy(hy.data(), y, total * sizeof(__half), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    return 0;
}
