// dot_main.cu -- dot product of two fp32 vectors: per-block shared-memory tree (interleaved), per-block
// partial sums written out, finished on the host. A stand-alone program: htam reads the launch from main().
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define N (1 << 24)
#define TPB 128

__global__ void dot_partial(float *partial, float *a, float *b, int n)
{
    __shared__ float cache[TPB];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    cache[tid] = (i < n) ? a[i] * b[i] : 0.0f;
    __syncthreads();
    for (int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) cache[tid] += cache[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = cache[0];
}

int main()
{
    int blocks = (N + TPB - 1) / TPB;
    float *ha = (float *)malloc(N * sizeof(float)), *hb = (float *)malloc(N * sizeof(float));
    float *hp = (float *)malloc(blocks * sizeof(float));
    for (int i = 0; i < N; i++) { ha[i] = (float)rand() / RAND_MAX; hb[i] = (float)rand() / RAND_MAX; }
    float *da, *db, *dp;
    cudaMalloc(&da, N * sizeof(float));
    cudaMalloc(&db, N * sizeof(float));
    cudaMalloc(&dp, blocks * sizeof(float));
    cudaMemcpy(da, ha, N * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb, N * sizeof(float), cudaMemcpyHostToDevice);
    dot_partial<<<blocks, TPB>>>(dp, da, db, N);
    cudaMemcpy(hp, dp, blocks * sizeof(float), cudaMemcpyDeviceToHost);
    double gpu = 0.0, cpu = 0.0;
    for (int k = 0; k < blocks; k++) gpu += hp[k];
    for (int i = 0; i < N; i++) cpu += (double)ha[i] * hb[i];
    printf("%s (gpu %f cpu %f)\n", fabs(gpu - cpu) < 1e-3 * cpu ? "ok" : "FAIL", gpu, cpu);
    cudaFree(da); cudaFree(db); cudaFree(dp); free(ha); free(hb); free(hp);
    return 0;
}
