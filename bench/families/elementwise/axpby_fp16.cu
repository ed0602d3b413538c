// axpby_fp16.cu -- out = alpha * x + beta * y on fp16 storage with fp32 math, one thread per element.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void axpby_fp16(__half *out, const __half *x, const __half *y, float alpha, float beta, int n)
{
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx < n) {
        float a = __half2float(x[idx]);
        float b = __half2float(y[idx]);
        out[idx] = __float2half(alpha * a + beta * b);
    }
}

extern "C" void launch_axpby_fp16(__half *out, const __half *x, const __half *y, float alpha, float beta, int n)
{
    axpby_fp16<<<(n + 255) / 256, 256>>>(out, x, y, alpha, beta, n);
}
