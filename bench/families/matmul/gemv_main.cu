// gemv_main.cu -- y = A x in fp32 (A is rows x cols, row-major), one thread per row, checked on the CPU in
// main(). A stand-alone program: htam reads the launch from main().
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define ROWS 8192
#define COLS 4096

__global__ void gemv_rows(float *y, float *A, float *x, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols; c++)
            acc += A[r * cols + c] * x[c];
        y[r] = acc;
    }
}

int main()
{
    size_t na = (size_t)ROWS * COLS;
    float *hA = (float *)malloc(na * sizeof(float)), *hx = (float *)malloc(COLS * sizeof(float));
    float *hy = (float *)malloc(ROWS * sizeof(float));
    for (size_t i = 0; i < na; i++) hA[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < COLS; i++) hx[i] = (float)rand() / RAND_MAX - 0.5f;
    float *dA, *dx, *dy;
    cudaMalloc(&dA, na * sizeof(float));
    cudaMalloc(&dx, COLS * sizeof(float));
    cudaMalloc(&dy, ROWS * sizeof(float));
    cudaMemcpy(dA, hA, na * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dx, hx, COLS * sizeof(float), cudaMemcpyHostToDevice);
    gemv_rows<<<(ROWS + 255) / 256, 256>>>(dy, dA, dx, ROWS, COLS);
    cudaMemcpy(hy, dy, ROWS * sizeof(float), cudaMemcpyDeviceToHost);
    double ref = 0.0;
    for (int c = 0; c < COLS; c++) ref += (double)hA[c] * hx[c];
    printf("%s (row 0: %f vs %f)\n", fabs(ref - hy[0]) < 1e-3 ? "ok" : "FAIL", hy[0], ref);
    cudaFree(dA); cudaFree(dx); cudaFree(dy); free(hA); free(hx); free(hy);
    return 0;
}
