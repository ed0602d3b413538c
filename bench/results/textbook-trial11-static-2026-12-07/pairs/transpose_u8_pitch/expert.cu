#include <cstdio>
#include <vector>

#define TILE 32
#define ROWS 8

// Same result through a 32x32 shared tile (padded rows against bank conflicts); each thread moves 4 pixels.
__global__ void transpose_u8(const unsigned char* __restrict__ src, size_t src_pitch,
                             unsigned char* __restrict__ dst, size_t dst_pitch, int w, int h) {
    __shared__ unsigned char tile[TILE][TILE + 4];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        int y = y0 + j;
        if (x < w && y < h) tile[threadIdx.y + j][threadIdx.x] = src[y * src_pitch + x];
    }
    __syncthreads();
    int ox = blockIdx.y * TILE + threadIdx.x;  // column of dst = row of src
    int oy0 = blockIdx.x * TILE + threadIdx.y;  // row of dst = column of src
    for (int j = 0; j < TILE; j += ROWS) {
        int oy = oy0 + j;
        if (ox < h && oy < w) dst[oy * dst_pitch + ox] = tile[threadIdx.x][threadIdx.y + j];
    }
}

int main() {
    const int w = 3000, h = 2000;
    std::vector<unsigned char> himg((size_t)w * h), hout((size_t)w * h);
    for (size_t i = 0; i < himg.size(); ++i) himg[i] = (unsigned char)((i * 73) & 0xff);
    unsigned char *src, *dst;
    size_t sp, dp;
    cudaMallocPitch((void**)&src, &sp, w, h);
    cudaMallocPitch((void**)&dst, &dp, h, w);
    cudaMemcpy2D(src, sp, himg.data(), w, w, h, cudaMemcpyHostToDevice);
    dim3 block(TILE, ROWS);
    dim3 grid((w + TILE - 1) / TILE, (h + TILE - 1) / TILE);
    transpose_u8<<<grid, block>>>(src, sp, dst, dp, w, h);
    cudaMemcpy2D(hout.data(), h, dst, dp, h, w, cudaMemcpyDeviceToHost);
    unsigned long long sum = 0;
    for (size_t i = 0; i < hout.size(); ++i) sum += hout[i] * (unsigned long long)(i % 7 + 1);
    printf("checksum = %llu\n", sum);
    cudaFree(src);
    cudaFree(dst);
    return 0;
}
