// Dot product of two int16 vectors accumulated in int: partial[b] = sum over block b's slice of a[i] * b[i].
// Macro-heavy: sizes and the global index are macros. Interleaved tree in shared memory.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#define N_ELEMS (1 << 24)
#define BLOCK_SIZE 256
#define NUM_BLOCKS ((N_ELEMS + BLOCK_SIZE - 1) / BLOCK_SIZE)
#define TID (threadIdx.x)
#define GIDX (blockIdx.x * blockDim.x + threadIdx.x)
#define CUDA_OK(x) if ((x) != cudaSuccess) { printf("cuda failure line %d\n", __LINE__); return 1; }

__global__ void dot_i16(const int16_t* a, const int16_t* b, int* partial, int n) {
    __shared__ int sdata[BLOCK_SIZE];
    unsigned int i = GIDX;
    sdata[TID] = (i < n) ? (int)a[i] * (int)b[i] : 0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (TID % (2 * s) == 0) sdata[TID] += sdata[TID + s];
        __syncthreads();
    }
    if (TID == 0) partial[blockIdx.x] = sdata[0];
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
