#include <cstdio>
#include <vector>

// y = alpha * A x + beta * y in double; A is m x n, row-major with leading dimension lda >= n. One thread per row.
__global__ void dgemv_n(int m, int n, double alpha, const double* A, int lda, const double* x, double beta,
                        double* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        double dot = 0.0;
        for (int j = 0; j < n; ++j) dot += A[(size_t)row * lda + j] * x[j];
        y[row] = alpha * dot + beta * y[row];
    }
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
        dgemv_n<<<(m + threads - 1) / threads, threads>>>(m, n, alpha, A, lda, x, beta, y);
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
