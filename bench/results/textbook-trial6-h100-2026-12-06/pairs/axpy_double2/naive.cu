#include <cuda_runtime.h>
#define N_ELEMS (1 << 25)
#define THREADS 256
#define CDIV(a, b) (((a) + (b) - 1) / (b))
// y = alpha * x + y in double precision.
__global__ void daxpy(int n, double alpha, const double* x, double* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = alpha * x[i] + y[i];
}

int main()
{
    double *x, *y;
    cudaMalloc(&x, N_ELEMS * sizeof(double));
    cudaMalloc(&y, N_ELEMS * sizeof(double));
    cudaMemset(x, 0, N_ELEMS * sizeof(double));
    cudaMemset(y, 0, N_ELEMS * sizeof(double));
    daxpy<<<CDIV(N_ELEMS, THREADS), THREADS>>>(N_ELEMS, 2.5, x, y);
    cudaDeviceSynchronize();
    return 0;
}
