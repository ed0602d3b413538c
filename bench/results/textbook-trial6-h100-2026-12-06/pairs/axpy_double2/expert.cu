#include <cuda_runtime.h>
#define N_ELEMS (1 << 25)
#define THREADS 256
#define CDIV(a, b) (((a) + (b) - 1) / (b))
// y = alpha * x + y; 16-byte double2 accesses, grid-stride, scalar tail.
__global__ void daxpy(int n, double alpha, const double* __restrict__ x, double* __restrict__ y)
{
    int n2 = n / 2;
    const double2* x2 = reinterpret_cast<const double2*>(x);
    double2* y2 = reinterpret_cast<double2*>(y);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += gridDim.x * blockDim.x) {
        double2 a = x2[i], b = y2[i];
        b.x = alpha * a.x + b.x;
        b.y = alpha * a.y + b.y;
        y2[i] = b;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0 && (n & 1))
        y[n - 1] = alpha * x[n - 1] + y[n - 1];
}

int main()
{
    double *x, *y;
    cudaMalloc(&x, N_ELEMS * sizeof(double));
    cudaMalloc(&y, N_ELEMS * sizeof(double));
    cudaMemset(x, 0, N_ELEMS * sizeof(double));
    cudaMemset(y, 0, N_ELEMS * sizeof(double));
    daxpy<<<132 * 8, THREADS>>>(N_ELEMS, 2.5, x, y);
    cudaDeviceSynchronize();
    return 0;
}
