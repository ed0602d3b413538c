// Naive transpose: TILE macro for the 32x32 block, the block size hard-coded in the index.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define TILE 32

__global__ void transpose_rows(float* odata, const float* idata, int width, int height) {
    // 32x32 tiles, 32x8 threads each moving 4 rows: rows of idata read coalesced into a padded tile (+1
    // column: no shared-memory bank conflicts), then written out transposed with coalesced rows
    __shared__ float htam_tile[32][33];
    const int htam_rows = height, htam_cols = width;
    const int htam_tiles_x = (htam_cols + 31) / 32, htam_tiles_y = (htam_rows + 31) / 32;
    const int htam_x = threadIdx.x, htam_y = threadIdx.y;
    for (int htam_ty = blockIdx.y + gridDim.y * blockIdx.z; htam_ty < htam_tiles_y; htam_ty += gridDim.y * gridDim.z) {
        for (int htam_tx = blockIdx.x; htam_tx < htam_tiles_x; htam_tx += gridDim.x) {
            const int htam_c = htam_tx * 32 + htam_x, htam_r0 = htam_ty * 32 + htam_y;  // in: column, first row
            #pragma unroll
            for (int htam_k = 0; htam_k < 32; htam_k += 8)
                if (htam_r0 + htam_k < htam_rows && htam_c < htam_cols)
                    htam_tile[htam_y + htam_k][htam_x] = idata[(htam_r0 + htam_k) * htam_cols + htam_c];
            __syncthreads();
            const int htam_oc = htam_ty * 32 + htam_x, htam_or0 = htam_tx * 32 + htam_y;  // out: column, first row
            #pragma unroll
            for (int htam_k = 0; htam_k < 32; htam_k += 8)
                if (htam_or0 + htam_k < htam_cols && htam_oc < htam_rows)
                    odata[(htam_or0 + htam_k) * htam_rows + htam_oc] = htam_tile[htam_x][htam_y + htam_k];
            __syncthreads();  // the tile is refilled by the block's next tile
        }
    }
}

int main() {
  const int width = 2048, height = 777;
  float* h = (float*)malloc(width * height * sizeof(float));
  for (int i = 0; i < width * height; ++i) h[i] = (float)(i % 1000);
  float *di, *dout;
  cudaMalloc(&di, width * height * sizeof(float));
  cudaMalloc(&dout, width * height * sizeof(float));
  cudaMemcpy(di, h, width * height * sizeof(float), cudaMemcpyHostToDevice);
  dim3 threads(32, 8);
  dim3 blocks((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
  transpose_rows<<<blocks, threads>>>(dout, di, width, height);
  cudaMemcpy(h, dout, width * height * sizeof(float), cudaMemcpyDeviceToHost);
  printf("o[1] = %f\n", h[1]);
  cudaFree(di); cudaFree(dout); free(h);
  return 0;
}
