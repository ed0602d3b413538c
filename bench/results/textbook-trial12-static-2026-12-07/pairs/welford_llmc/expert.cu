// Per-row mean and reciprocal std (Welford), llm.c style. Expert: one warp (cg::thread_block_tile<32>) per row;
// each lane runs Welford over a strided slice, then the lanes merge (count, mean, M2) with shuffles (Chan et al.).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

typedef float floatX;
#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))
#define cudaCheck(err) (cuda_check((err), __FILE__, __LINE__))
static void cuda_check(cudaError_t error, const char* file, int line) {
    if (error != cudaSuccess) {
        printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
        exit(EXIT_FAILURE);
    }
}

__global__ void welford_stats_kernel(float* mean, float* rstd, const floatX* inp, int N, int C) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (idx >= N) return;
    const floatX* x = inp + idx * C;
    float n = 0.0f, m = 0.0f, m2 = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        float v = (float)x[i];
        n += 1.0f;
        float d = v - m;
        m += d / n;
        m2 += d * (v - m);
    }
    for (int off = 16; off > 0; off >>= 1) {
        float nb = warp.shfl_xor(n, off);
        float mb = warp.shfl_xor(m, off);
        float m2b = warp.shfl_xor(m2, off);
        float nt = n + nb;
        if (nt > 0.0f) {
            float d = mb - m;
            m2 = m2 + m2b + d * d * n * nb / nt;
            m = m + d * nb / nt;
        }
        n = nt;
    }
    if (warp.thread_rank() == 0) {
        mean[idx] = m;
        rstd[idx] = 1.0f / sqrtf(m2 / (float)C + 1e-5f);
    }
}

int main() {
    int B = 8, T = 1024, C = 768;
    int N = B * T;
    floatX* h_inp = (floatX*)malloc((size_t)N * C * sizeof(floatX));
    for (size_t i = 0; i < (size_t)N * C; i++) h_inp[i] = (floatX)((float)((i * 37) % 101) / 101.0f - 0.5f);
    floatX* d_inp;
    float *d_mean, *d_rstd;
    cudaCheck(cudaMalloc(&d_inp, (size_t)N * C * sizeof(floatX)));
    cudaCheck(cudaMalloc(&d_mean, N * sizeof(float)));
    cudaCheck(cudaMalloc(&d_rstd, N * sizeof(float)));
    cudaCheck(cudaMemcpy(d_inp, h_inp, (size_t)N * C * sizeof(floatX), cudaMemcpyHostToDevice));
    const int block_size = 256;
    const int grid_size = CEIL_DIV(N * 32, block_size);
    welford_stats_kernel<<<grid_size, block_size>>>(d_mean, d_rstd, d_inp, N, C);
    cudaCheck(cudaGetLastError());
    float* h_mean = (float*)malloc(N * sizeof(float));
    float* h_rstd = (float*)malloc(N * sizeof(float));
    cudaCheck(cudaMemcpy(h_mean, d_mean, N * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(h_rstd, d_rstd, N * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (int i = 0; i < N; i++) sum += h_mean[i] * 1000.0 + h_rstd[i];
    printf("checksum = %.6f\n", sum);
    cudaCheck(cudaFree(d_inp));
    cudaCheck(cudaFree(d_mean));
    cudaCheck(cudaFree(d_rstd));
    free(h_inp);
    free(h_mean);
    free(h_rstd);
    return 0;
}
