#include <cuda_runtime.h>
#include <cuda_fp16.h>

template <typename T>
__global__ void axpy_half(T alpha, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __hfma(alpha, x[i], y[i]);
    } else {
        return;
    }
}

int main() {
    int n = 1 << 22;
    __half *x, *y;
    cudaMalloc(&x, n * sizeof(__half));
    cudaMalloc(&y, n * sizeof(__half));
    axpy_half<__half><<<(n + 255) / 256, 256>>>(__float2half(2.0f), x, y, n);
    cudaDeviceSynchronize();
    return 0;
}
