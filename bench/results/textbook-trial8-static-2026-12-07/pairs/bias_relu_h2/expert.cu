#include <cuda_runtime.h>
#include <cuda_fp16.h>

// y = relu(x + bias) in half; each thread handles 4 halves (two half2) with paired arithmetic (cols even).
__global__ void bias_relu(const __half* x, const __half* bias, __half* y, int rows, int cols) {
    unsigned i = (threadIdx.x + blockIdx.x * blockDim.x) * 4;
    unsigned n = (unsigned)(rows * cols);
    if (i >= n) return;
    const __half2 zero = __float2half2_rn(0.f);
    const __half2* x2 = reinterpret_cast<const __half2*>(x + i);
    const __half2* b2 = reinterpret_cast<const __half2*>(bias + i % cols);
    __half2* y2 = reinterpret_cast<__half2*>(y + i);
    y2[0] = __hmax2(__hadd2(x2[0], b2[0]), zero);
    y2[1] = __hmax2(__hadd2(x2[1], b2[1]), zero);
}

void bias_relu_forward(const __half* x, const __half* bias, __half* y, int rows, int cols, cudaStream_t s) {
    unsigned n = (unsigned)(rows * cols) / 4;
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
