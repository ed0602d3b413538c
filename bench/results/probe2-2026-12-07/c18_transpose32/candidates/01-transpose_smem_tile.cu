// Naive transpose launched with a 32x32 block.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
    // 32x32 tiles, 32x8 threads each moving 4 rows: rows of in read coalesced into a padded tile (+1
    // column: no shared-memory bank conflicts), then written out transposed with coalesced rows
    __shared__ float htam_tile[32][33];
    const int htam_rows = rows, htam_cols = cols;
    const int htam_tiles_x = (htam_cols + 31) / 32, htam_tiles_y = (htam_rows + 31) / 32;
    const int htam_x = threadIdx.x, htam_y = threadIdx.y;
    for (int htam_ty = blockIdx.y + gridDim.y * blockIdx.z; htam_ty < htam_tiles_y; htam_ty += gridDim.y * gridDim.z) {
        for (int htam_tx = blockIdx.x; htam_tx < htam_tiles_x; htam_tx += gridDim.x) {
            const int htam_c = htam_tx * 32 + htam_x, htam_r0 = htam_ty * 32 + htam_y;  // in: column, first row
            #pragma unroll
            for (int htam_k = 0; htam_k < 32; htam_k += 8)
                if (htam_r0 + htam_k < htam_rows && htam_c < htam_cols)
                    htam_tile[htam_y + htam_k][htam_x] = in[(htam_r0 + htam_k) * htam_cols + htam_c];
            __syncthreads();
            const int htam_oc = htam_ty * 32 + htam_x, htam_or0 = htam_tx * 32 + htam_y;  // out: column, first row
            #pragma unroll
            for (int htam_k = 0; htam_k < 32; htam_k += 8)
                if (htam_or0 + htam_k < htam_cols && htam_oc < htam_rows)
                    out[(htam_or0 + htam_k) * htam_rows + htam_oc] = htam_tile[htam_x][htam_y + htam_k];
            __syncthreads();  // the tile is refilled by the block's next tile
        }
    }
}

int main() {
  const int rows = 1000, cols = 1500;
  float* h = (float*)malloc(rows * cols * sizeof(float));
  for (int i = 0; i < rows * cols; ++i) h[i] = (float)i;
  float *di, *dout;
  cudaMalloc(&di, rows * cols * sizeof(float));
  cudaMalloc(&dout, rows * cols * sizeof(float));
  cudaMemcpy(di, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
  dim3 block(32, 8);
  dim3 grid((cols + 31) / 32, (rows + 31) / 32);
  transpose_naive<<<grid, block>>>(di, dout, rows, cols);
  cudaMemcpy(h, dout, rows * cols * sizeof(float), cudaMemcpyDeviceToHost);
  printf("out[1] = %f\n", h[1]);
  cudaFree(di); cudaFree(dout); free(h);
  return 0;
}
