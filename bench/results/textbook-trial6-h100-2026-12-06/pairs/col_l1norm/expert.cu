#include <cuda_runtime.h>
// Lanes take 32 consecutive columns, the 8 warps of a block split the rows.
__global__ void col_l1norm(const float* __restrict__ x, float* __restrict__ out, int rows, int cols)
{
    __shared__ float part[8][33];
    int col = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (col < cols)
        for (int i = threadIdx.y; i < rows; i += blockDim.y)
            s += fabsf(x[(size_t)i * cols + col]);
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0) {
        float t = 0.0f;
        for (int w = 0; w < blockDim.y; ++w) t += part[w][threadIdx.x];
        if (col < cols) out[col] = t;
    }
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
    col_l1norm<<<(cols + 31) / 32, dim3(32, 8)>>>(x, out, rows, cols);
    cudaDeviceSynchronize();
    cudaFree(x); cudaFree(out);
    return 0;
}
