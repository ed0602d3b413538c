#include <cuda_runtime.h>
#include <cuda_fp16.h>

// y[r][c] = max(x[r][c] + bias[c], 0) in half precision; rows x cols row-major, one half per thread.
__global__ void bias_relu(const __half* x, const __half* bias, __half* y, int rows, int cols) {
    unsigned i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= (unsigned)(rows * cols)) return;
    __half v = __hadd(x[i], bias[i % cols]);
    y[i] = __hgt(v, __float2half(0.f)) ? v : __float2half(0.f);
}

void bias_relu_forward(const __half* x, const __half* bias, __half* y, int rows, int cols, cudaStream_t s) {
    unsigned n = (unsigned)(rows * cols);
    bias_relu<<<(n + 255) / 256, 256, 0, s>>>(x, bias, y, rows, cols);
}

__global__ void fill_half(__half* p, unsigned n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        p[i] = __float2half((float)(i % 17) - 8.f);
}

int main() {
    const int rows = 8192, cols = 4096;
    __half *x, *bias, *y;
    cudaMalloc(&x, (size_t)rows * cols * sizeof(__half));
    cudaMalloc(&y, (size_t)rows * cols * sizeof(__half));
    cudaMalloc(&bias, cols * sizeof(__half));
    fill_half<<<512, 256>>>(x, rows * cols);
    fill_half<<<16, 256>>>(bias, cols);
    cudaStream_t s;
    cudaStreamCreate(&s);
    bias_relu_forward(x, bias, y, rows, cols, s);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFree(x);
    cudaFree(y);
    cudaFree(bias);
    return 0;
}
