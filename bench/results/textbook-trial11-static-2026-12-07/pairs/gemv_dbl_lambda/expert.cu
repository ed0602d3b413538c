#include <cstdio>
#include <vector>

// Same result: one warp per row, lanes stride the row (coalesced), then a shuffle sum.
__global__ void dgemv_n(int m, int n, double alpha, const double* __restrict__ A, int lda,
                        const double* __restrict__ x, double beta, double* __restrict__ y) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= m) return;
    const double* a = A + (size_t)warp * lda;
    double dot = 0.0;
    for (int j = lane; j < n; j += 32) dot += a[j] * x[j];
    for (int off = 16; off > 0; off >>= 1) dot += __shfl_down_sync(0xffffffffu, dot, off);
    if (lane == 0) y[warp] = alpha * dot + beta * y[warp];
}

int main() {
    const int m = 8192, n = 2048, lda = 2056;
    std::vector<double> hA((size_t)m * lda), hx(n), hy(m);
    for (size_t i = 0; i < hA.size(); ++i) hA[i] = (double)((i * 13) % 97) / 97.0 - 0.5;
    for (int j = 0; j < n; ++j) hx[j] = (double)(j % 11) * 0.1;
    for (int i = 0; i < m; ++i) hy[i] = 1.0;
    double *A, *x, *y;
    cudaMalloc(&A, hA.size() * sizeof(double));
    cudaMalloc(&x, n * sizeof(double));
    cudaMalloc(&y, m * sizeof(double));
    cudaMemcpy(A, hA.data(), hA.size() * sizeof(double), cudaMemcpyHostToDevice);
    cudaMemcpy(x, hx.data(), n * sizeof(double), cudaMemcpyHostToDevice);
    cudaMemcpy(y, hy.data(), m * sizeof(double), cudaMemcpyHostToDevice);
    auto launch = [&](double alpha, double beta) {
        const int threads = 128;
        const int rows_per_block = threads / 32;
        dgemv_n<<<(m + rows_per_block - 1) / rows_per_block, threads>>>(m, n, alpha, A, lda, x, beta, y);
    };
    launch(1.5, 0.5);
    cudaMemcpy(hy.data(), y, m * sizeof(double), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (int i = 0; i < m; ++i) sum += hy[i];
    printf("checksum = %.9f\n", sum);
    cudaFree(A);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
