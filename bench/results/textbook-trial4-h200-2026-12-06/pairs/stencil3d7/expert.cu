// 7-point 3-D stencil, 2.5-D blocking: an (BX+2) x (BY+2) shared plane with halo, marching along z,
// the z neighbours kept in registers (each input point read from DRAM about once).
#include <cuda_runtime.h>

#define NX 256
#define NY 256
#define NZ 256
#define IDX(x, y, z) (((size_t)(z) * NY + (y)) * NX + (x))
#define BX 32
#define BY 8

__global__ void __launch_bounds__(BX * BY)
stencil3d7(const float* __restrict__ in, float* __restrict__ out, float c0, float c1) {
  __shared__ float plane[BY + 2][BX + 2];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * BX + tx;
  const int y = blockIdx.y * BY + ty;
  const bool inner_xy = x > 0 && x < NX - 1 && y > 0 && y < NY - 1;
  float below = in[IDX(x, y, 0)];
  float cur = in[IDX(x, y, 1)];
  for (int z = 1; z < NZ - 1; ++z) {
    const float above = in[IDX(x, y, z + 1)];
    __syncthreads();
    plane[ty + 1][tx + 1] = cur;
    if (tx == 0) plane[ty + 1][0] = x > 0 ? in[IDX(x - 1, y, z)] : 0.f;
    if (tx == BX - 1) plane[ty + 1][BX + 1] = x < NX - 1 ? in[IDX(x + 1, y, z)] : 0.f;
    if (ty == 0) plane[0][tx + 1] = y > 0 ? in[IDX(x, y - 1, z)] : 0.f;
    if (ty == BY - 1) plane[BY + 1][tx + 1] = y < NY - 1 ? in[IDX(x, y + 1, z)] : 0.f;
    __syncthreads();
    if (inner_xy)
      out[IDX(x, y, z)] = c0 * cur + c1 * (plane[ty + 1][tx] + plane[ty + 1][tx + 2] +
                                           plane[ty][tx + 1] + plane[ty + 2][tx + 1] + below + above);
    below = cur;
    cur = above;
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
  dim3 block(BX, BY);
  dim3 grid(NX / BX, NY / BY);
  stencil3d7<<<grid, block>>>(in, out, 0.4f, 0.1f);
  cudaDeviceSynchronize();
  cudaFree(in); cudaFree(out);
  return 0;
}
