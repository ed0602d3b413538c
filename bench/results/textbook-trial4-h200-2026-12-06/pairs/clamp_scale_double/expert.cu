// Clamp then scale a double vector: double2 (16-byte) accesses in a grid-stride loop sized to the SMs,
// scalar tail for an odd n.
#include <cuda_runtime.h>

__global__ void clamp_scale_double(const double* __restrict__ x, double* __restrict__ y, double lo, double hi,
                                   double s, long n) {
  const long n2 = n >> 1;
  const double2* x2 = reinterpret_cast<const double2*>(x);
  double2* y2 = reinterpret_cast<double2*>(y);
  const long stride = (long)blockDim.x * gridDim.x;
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += stride) {
    double2 v = __ldg(x2 + i);
    v.x = fmin(fmax(v.x, lo), hi) * s;
    v.y = fmin(fmax(v.y, lo), hi) * s;
    y2[i] = v;
  }
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) y[n - 1] = fmin(fmax(x[n - 1], lo), hi) * s;
}

__global__ void init_d(double* p, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (double)(i % 201) * 0.01 - 1.0;
}

int main() {
  const long n = 1L << 23;
  double *x, *y;
  cudaMalloc(&x, n * sizeof(double));
  cudaMalloc(&y, n * sizeof(double));
  init_d<<<(unsigned)((n + 255) / 256), 256>>>(x, n);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  clamp_scale_double<<<sms * 16, 256>>>(x, y, -0.5, 0.5, 3.0, n);
  cudaDeviceSynchronize();
  cudaFree(x); cudaFree(y);
  return 0;
}
