#include <cuda_runtime.h>
#include <cuda_fp16.h>
// y = 1 / (1 + exp(-x)) in half precision (math in float).
__global__ void sigmoid_h(const __half* x, __half* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __half2float(x[i]);
        y[i] = __float2half(1.0f / (1.0f + expf(-v)));
    }
}

int main()
{
    const int n = 1 << 26;
    __half *x, *y;
    cudaMalloc(&x, n * sizeof(__half));
    cudaMalloc(&y, n * sizeof(__half));
    cudaMemset(x, 0, n * sizeof(__half));
    sigmoid_h<<<(n + 255) / 256, 256>>>(x, y, n);
    cudaDeviceSynchronize();
    return 0;
}
