// sgemm_naive.cu -- baseline fp32 GEMM C = alpha * A * B + beta * C (naive-kernel suite, matmul).
// Kernel copied from the dev corpus (tests/fixtures/corpus/sgemm_naive.cu); the host launcher is made
// extern "C" so the harness can call it (bench/suite/htam.toml). One thread per element of C, 16x16 blocks,
// rows on x (uncoalesced B loads and C stores).
#include <cuda_runtime.h>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__global__ void sgemm_naive(int M, int N, int K, float alpha,
                            const float *A, const float *B,
                            float beta, float *C)
{
    // x runs over rows of C, y over columns.
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;

    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

// Host-side launcher. Pointers are device pointers.
extern "C" void run_sgemm_naive(int M, int N, int K, float alpha, const float *dA,
                                const float *dB, float beta, float *dC)
{
    dim3 block(16, 16);
    dim3 grid(CEIL_DIV(M, 16), CEIL_DIV(N, 16));
    sgemm_naive<<<grid, block>>>(M, N, K, alpha, dA, dB, beta, dC);
}
