#include <cuda_runtime.h>

template <typename T>
__global__ void neg_transpose(const T* in, T* out, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;   // column of in
    int y = blockIdx.y * blockDim.y + threadIdx.y;   // row of in
    if (x < W && y < H)
        out[x * H + y] = -in[y * W + x];
}

int main() {
    int H = 3000, W = 2000;
    float *a, *b;
    cudaMalloc(&a, sizeof(float) * H * W);
    cudaMalloc(&b, sizeof(float) * H * W);
    dim3 blk(32, 8), grd((W + 31) / 32, (H + 7) / 8);
    neg_transpose<float><<<grd, blk>>>(a, b, H, W);
    cudaDeviceSynchronize();
    return 0;
}
