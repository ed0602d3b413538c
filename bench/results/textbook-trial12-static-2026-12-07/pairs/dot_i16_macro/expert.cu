// Dot product of two int16 vectors accumulated in int. Expert (the reduction ladder): each thread adds two
// elements during the load (a block covers 2 * BLOCK_SIZE), sequential addressing down to 32, then a warp-shuffle
// finish.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#define N_ELEMS (1 << 24)
#define BLOCK_SIZE 256
#define NUM_BLOCKS ((N_ELEMS + 2 * BLOCK_SIZE - 1) / (2 * BLOCK_SIZE))
#define TID (threadIdx.x)
#define GIDX2 (blockIdx.x * (2 * blockDim.x) + threadIdx.x)
#define CUDA_OK(x) if ((x) != cudaSuccess) { printf("cuda failure line %d\n", __LINE__); return 1; }

__global__ void dot_i16(const int16_t* a, const int16_t* b, int* partial, int n) {
    __shared__ int sdata[BLOCK_SIZE];
    unsigned int i = GIDX2;
    int v = (i < n) ? (int)a[i] * (int)b[i] : 0;
    if (i + blockDim.x < n) v += (int)a[i + blockDim.x] * (int)b[i + blockDim.x];
    sdata[TID] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (TID < s) sdata[TID] += sdata[TID + s];
        __syncthreads();
    }
    if (TID < 32) {
        v = sdata[TID] + sdata[TID + 32];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (TID == 0) partial[blockIdx.x] = v;
    }
}

int main() {
    int16_t* ha = (int16_t*)malloc(N_ELEMS * sizeof(int16_t));
    int16_t* hb = (int16_t*)malloc(N_ELEMS * sizeof(int16_t));
    for (int i = 0; i < N_ELEMS; i++) { ha[i] = (int16_t)(i % 23 - 11); hb[i] = (int16_t)(i % 17 - 8); }
    int16_t *da, *db;
    int* dp;
    CUDA_OK(cudaMalloc(&da, N_ELEMS * sizeof(int16_t)));
    CUDA_OK(cudaMalloc(&db, N_ELEMS * sizeof(int16_t)));
    CUDA_OK(cudaMalloc(&dp, NUM_BLOCKS * sizeof(int)));
    CUDA_OK(cudaMemcpy(da, ha, N_ELEMS * sizeof(int16_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, hb, N_ELEMS * sizeof(int16_t), cudaMemcpyHostToDevice));
    dot_i16<<<NUM_BLOCKS, BLOCK_SIZE>>>(da, db, dp, N_ELEMS);
    CUDA_OK(cudaGetLastError());
    int* hp = (int*)malloc(NUM_BLOCKS * sizeof(int));
    CUDA_OK(cudaMemcpy(hp, dp, NUM_BLOCKS * sizeof(int), cudaMemcpyDeviceToHost));
    long long dot = 0;
    for (int k = 0; k < NUM_BLOCKS; k++) dot += hp[k];
    printf("checksum = %lld\n", dot);
    cudaFree(da); cudaFree(db); cudaFree(dp);
    free(ha); free(hb); free(hp);
    return 0;
}
