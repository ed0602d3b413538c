// A 32x32 block dim3 shared by a naive transpose and a 2-D copy launched after it.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void transpose_naive(const float* __restrict__ in, float* out, int rows, int cols) {
    // 32x32 tiles: rows of in read coalesced into a padded tile (+1 column: no shared-memory bank
    // conflicts), then written out transposed with coalesced rows; correct for any block shape and grid
    __shared__ float htam_tile[32][33];
    const int htam_rows = rows, htam_cols = cols;
    const int htam_tiles_x = (htam_cols + 31) / 32, htam_tiles = htam_tiles_x * ((htam_rows + 31) / 32);
    const int htam_threads = blockDim.x * blockDim.y * blockDim.z;
    const int htam_tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    for (int htam_t = blockIdx.x + (int)gridDim.x * (blockIdx.y + (int)gridDim.y * blockIdx.z);
         htam_t < htam_tiles; htam_t += (int)gridDim.x * gridDim.y * gridDim.z) {
        const int htam_r0 = htam_t / htam_tiles_x * 32, htam_c0 = htam_t % htam_tiles_x * 32;
        for (int htam_e = htam_tid; htam_e < 32 * 32; htam_e += htam_threads) {
            const int htam_r = htam_r0 + htam_e / 32, htam_c = htam_c0 + htam_e % 32;
            if (htam_r < htam_rows && htam_c < htam_cols)
                htam_tile[htam_e / 32][htam_e % 32] = in[htam_r * htam_cols + htam_c];
        }
        __syncthreads();
        for (int htam_e = htam_tid; htam_e < 32 * 32; htam_e += htam_threads) {
            const int htam_c = htam_c0 + htam_e / 32, htam_r = htam_r0 + htam_e % 32;  // row, column of out
            if (htam_r < htam_rows && htam_c < htam_cols)
                out[htam_c * htam_rows + htam_r] = htam_tile[htam_e % 32][htam_e / 32];
        }
        __syncthreads();  // the tile is refilled by the block's next tile
    }
}

__global__ void copy2d(const float* in, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c];
}

int main() {
  const int rows = 1024, cols = 1024;
  float* h = (float*)malloc(rows * cols * sizeof(float));
  for (int i = 0; i < rows * cols; ++i) h[i] = (float)i;
  float *di, *dt, *dc;
  cudaMalloc(&di, rows * cols * sizeof(float));
  cudaMalloc(&dt, rows * cols * sizeof(float));
  cudaMalloc(&dc, rows * cols * sizeof(float));
  cudaMemcpy(di, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
  dim3 block(32, 32);
  dim3 grid((cols + 31) / 32, (rows + 31) / 32);
  transpose_naive<<<grid, block>>>(di, dt, rows, cols);
  copy2d<<<grid, block>>>(dt, dc, cols, rows);
  cudaMemcpy(h, dc, rows * cols * sizeof(float), cudaMemcpyDeviceToHost);
  printf("c[1] = %f c[last] = %f\n", h[1], h[rows * cols - 1]);
  cudaFree(di); cudaFree(dt); cudaFree(dc); free(h);
  return 0;
}
