#include <cuda_runtime.h>
// L1 norm of every column of a row-major rows x cols matrix; one block per column.
__global__ void col_l1norm(const float* x, float* out, int rows, int cols)
{
    __shared__ float buf[256];
    int col = blockIdx.x;
    float s = 0.0f;
    for (int i = threadIdx.x; i < rows; i += blockDim.x)
        s += fabsf(x[(size_t)i * cols + col]);
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[col] = buf[0];
}

__global__ void init_kernel(float* p, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = (float)((i * 7) % 13) - 6.0f;
}

int main()
{
    const int rows = 8192, cols = 4096;
    float *x, *out;
    cudaMalloc(&x, (size_t)rows * cols * sizeof(float));
    cudaMalloc(&out, cols * sizeof(float));
    size_t n = (size_t)rows * cols;
    init_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, n);
    col_l1norm<<<cols, 256>>>(x, out, rows, cols);
    cudaDeviceSynchronize();
    cudaFree(x); cudaFree(out);
    return 0;
}
