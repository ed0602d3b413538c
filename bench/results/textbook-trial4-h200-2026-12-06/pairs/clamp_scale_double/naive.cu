// Clamp then scale a double vector: y = min(max(x, lo), hi) * s. Early-return style.
#include <cuda_runtime.h>

__global__ void clamp_scale_double(const double* x, double* y, double lo, double hi, double s, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = fmin(fmax(x[i], lo), hi) * s;
}

__global__ void init_d(double* p, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (double)(i % 201) * 0.01 - 1.0;
}

int main() {
  const long n = 1L << 23;  // 64 MB per array
  double *x, *y;
  cudaMalloc(&x, n * sizeof(double));
  cudaMalloc(&y, n * sizeof(double));
  init_d<<<(unsigned)((n + 255) / 256), 256>>>(x, n);
  clamp_scale_double<<<(unsigned)((n + 255) / 256), 256>>>(x, y, -0.5, 0.5, 3.0, n);
  cudaDeviceSynchronize();
  cudaFree(x); cudaFree(y);
  return 0;
}
