// 7-point 3-D Jacobi stencil (heat equation step), macro-heavy style: one thread per grid point.
#include <cuda_runtime.h>

#define NX 256
#define NY 256
#define NZ 256
#define IDX(x, y, z) (((size_t)(z) * NY + (y)) * NX + (x))
#define BX 32
#define BY 4
#define BZ 4

__global__ void stencil3d7(const float* in, float* out, float c0, float c1) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x > 0 && x < NX - 1 && y > 0 && y < NY - 1 && z > 0 && z < NZ - 1) {
    out[IDX(x, y, z)] = c0 * in[IDX(x, y, z)] +
                        c1 * (in[IDX(x - 1, y, z)] + in[IDX(x + 1, y, z)] +
                              in[IDX(x, y - 1, z)] + in[IDX(x, y + 1, z)] +
                              in[IDX(x, y, z - 1)] + in[IDX(x, y, z + 1)]);
  }
}

__global__ void init_grid(float* p) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (size_t)NX * NY * NZ) p[i] = (float)(i % 13) * 0.5f;
}

int main() {
  const size_t n = (size_t)NX * NY * NZ;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemset(out, 0, n * sizeof(float));
  init_grid<<<(unsigned)((n + 255) / 256), 256>>>(in);
  dim3 block(BX, BY, BZ);
  dim3 grid(NX / BX, NY / BY, NZ / BZ);
  stencil3d7<<<grid, block>>>(in, out, 0.4f, 0.1f);
  cudaDeviceSynchronize();
  cudaFree(in); cudaFree(out);
  return 0;
}
