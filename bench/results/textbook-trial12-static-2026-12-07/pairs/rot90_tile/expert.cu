// Rotate an H x W image 90 degrees clockwise into a W x H image: out[x][H - 1 - y] = in[y][x].
// Expert: a padded TILE_DIM x (TILE_DIM + 1) shared tile, TILE_DIM x BLOCK_ROWS threads; reads and writes both
// walk rows with threadIdx.x.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(val) __checkCuda((val), #val, __LINE__)
inline void __checkCuda(cudaError_t err, const char* what, int line) {
    if (err != cudaSuccess) { fprintf(stderr, "%s failed at line %d: %s\n", what, line, cudaGetErrorString(err)); exit(1); }
}

template <int TILE_DIM, int BLOCK_ROWS>
__global__ void rotate90_cw(float* odata, const float* idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    int oc = height - 1 - (blockIdx.y * TILE_DIM + threadIdx.x);   // output column (from the input row)
    int orow = blockIdx.x * TILE_DIM + threadIdx.y;                // output row (the input column)
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (orow + j < width && oc >= 0) odata[(orow + j) * height + oc] = tile[threadIdx.x][threadIdx.y + j];
}

int main() {
    const int width = 4096, height = 2048;
    const size_t n = (size_t)width * height;
    float* h_in = (float*)malloc(n * sizeof(float));
    float* h_out = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h_in[i] = (float)(i % 1009);
    float *d_in, *d_out;
    checkCudaErrors(cudaMalloc((void**)&d_in, n * sizeof(float)));
    checkCudaErrors(cudaMalloc((void**)&d_out, n * sizeof(float)));
    checkCudaErrors(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));
    const int TILE = 32, ROWS = 8;
    dim3 threads(TILE, ROWS);
    dim3 grid((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
    rotate90_cw<TILE, ROWS><<<grid, threads>>>(d_out, d_in, width, height);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += h_out[i] * (double)((i % 11) + 1);
    printf("checksum = %.1f\n", sum);
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_out));
    free(h_in);
    free(h_out);
    return 0;
}
