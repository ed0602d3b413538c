// transpose_batched_main.cu -- batched transpose of `batch` fp32 matrices of n x n, the batch on
// blockIdx.z, checked on the CPU in main(). A stand-alone program: htam reads the launch from main().
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define BATCH 16
#define DIM 1024

__global__ void transpose_batched(float *out, float *in, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    size_t base = (size_t)blockIdx.z * n * n;
    if (x < n && y < n)
        out[base + x * n + y] = in[base + y * n + x];
}

int main()
{
    size_t total = (size_t)BATCH * DIM * DIM;
    float *h_in = (float *)malloc(total * sizeof(float)), *h_out = (float *)malloc(total * sizeof(float));
    for (size_t i = 0; i < total; i++) h_in[i] = (float)(i % 1000);
    float *d_in, *d_out;
    cudaMalloc(&d_in, total * sizeof(float));
    cudaMalloc(&d_out, total * sizeof(float));
    cudaMemcpy(d_in, h_in, total * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(32, 32);
    dim3 grid(DIM / 32, DIM / 32, BATCH);
    transpose_batched<<<grid, block>>>(d_out, d_in, DIM);
    cudaMemcpy(h_out, d_out, total * sizeof(float), cudaMemcpyDeviceToHost);
    int bad = h_out[1] != h_in[DIM];
    printf("%s\n", bad ? "FAIL" : "ok");
    cudaFree(d_in); cudaFree(d_out); free(h_in); free(h_out);
    return bad;
}
