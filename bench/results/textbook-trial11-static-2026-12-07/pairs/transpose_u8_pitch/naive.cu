#include <cstdio>
#include <vector>

// dst (w rows x h cols) = transpose of src (h rows x w cols), 8-bit pixels, both images pitched (bytes per row).
__global__ void transpose_u8(const unsigned char* src, size_t src_pitch, unsigned char* dst, size_t dst_pitch,
                             int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;  // column of src
    int y = blockIdx.y * blockDim.y + threadIdx.y;  // row of src
    if (x < w && y < h) {
        const unsigned char* srow = src + y * src_pitch;
        unsigned char* drow = dst + x * dst_pitch;
        drow[y] = srow[x];
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
    dim3 block(16, 16);
    dim3 grid((w + 15) / 16, (h + 15) / 16);
    transpose_u8<<<grid, block>>>(src, sp, dst, dp, w, h);
    cudaMemcpy2D(hout.data(), h, dst, dp, h, w, cudaMemcpyDeviceToHost);
    unsigned long long sum = 0;
    for (size_t i = 0; i < hout.size(); ++i) sum += hout[i] * (unsigned long long)(i % 7 + 1);
    printf("checksum = %llu\n", sum);
    cudaFree(src);
    cudaFree(dst);
    return 0;
}
