#include <cstdio>
#include <vector>

#define TS 32   // G tile is TS x TS
#define TK 16   // k-slab staged per step
#define RM 4    // rows of G per thread

// Same result: both operand panels of A staged in shared memory (A-rows i.. and j..), 4 outputs per thread.
__global__ void gram(const float* __restrict__ A, float* __restrict__ G, int n, int k) {
    __shared__ float Ai[TS][TK + 1];
    __shared__ float Aj[TS][TK + 1];
    int tx = threadIdx.x;            // 0..TS-1, column of G in the tile
    int ty = threadIdx.y;            // 0..TS/RM-1
    int i0 = blockIdx.y * TS;
    int j0 = blockIdx.x * TS;
    int tid = ty * TS + tx;          // 0..255
    float acc[RM] = {0.f, 0.f, 0.f, 0.f};
    for (int p0 = 0; p0 < k; p0 += TK) {
        for (int e = tid; e < TS * TK; e += TS * (TS / RM)) {
            int r = e / TK, c = e % TK;
            int p = p0 + c;
            Ai[r][c] = (i0 + r < n && p < k) ? A[(i0 + r) * k + p] : 0.f;
            Aj[r][c] = (j0 + r < n && p < k) ? A[(j0 + r) * k + p] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < TK; ++c) {
            float b = Aj[tx][c];
#pragma unroll
            for (int m = 0; m < RM; ++m) acc[m] += Ai[ty * RM + m][c] * b;
        }
        __syncthreads();
    }
    int j = j0 + tx;
#pragma unroll
    for (int m = 0; m < RM; ++m) {
        int i = i0 + ty * RM + m;
        if (i < n && j < n) G[i * n + j] = acc[m];
    }
}

struct GramLauncher {
    dim3 block;
    void operator()(const float* A, float* G, int n, int k) const {
        dim3 grid((n + TS - 1) / TS, (n + TS - 1) / TS);
        gram<<<grid, block>>>(A, G, n, k);
    }
};

int main() {
    const int n = 2048, k = 512;
    std::vector<float> hA((size_t)n * k), hG((size_t)n * n);
    for (size_t i = 0; i < hA.size(); ++i) hA[i] = (float)((i * 31) % 17) / 17.f - 0.5f;
    float *A, *G;
    cudaMalloc(&A, hA.size() * sizeof(float));
    cudaMalloc(&G, hG.size() * sizeof(float));
    cudaMemcpy(A, hA.data(), hA.size() * sizeof(float), cudaMemcpyHostToDevice);
    GramLauncher launch{dim3(TS, TS / RM)};
    launch(A, G, n, k);
    cudaMemcpy(hG.data(), G, hG.size() * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (size_t i = 0; i < hG.size(); i += 3) sum += hG[i];
    printf("checksum = %.4f\n", sum);
    cudaFree(A);
    cudaFree(G);
    return 0;
}
