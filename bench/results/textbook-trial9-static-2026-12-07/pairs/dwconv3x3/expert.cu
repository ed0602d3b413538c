#include <cuda_runtime.h>
#include <vector>

#define TILE 16

// Shared tile with a one-pixel halo per block and the channel's 9 weights in shared memory.
__global__ void dwconv3x3(const float* __restrict__ in, const float* __restrict__ w, float* __restrict__ out,
                          int C, int H, int W) {
    __shared__ float tile[TILE + 2][TILE + 2];
    __shared__ float wk[9];
    int c = blockIdx.z;
    int x0 = blockIdx.x * TILE, y0 = blockIdx.y * TILE;
    int tid = threadIdx.y * TILE + threadIdx.x;
    if (tid < 9) wk[tid] = w[c * 9 + tid];
    const float* src = in + (size_t)c * H * W;
    for (int i = tid; i < (TILE + 2) * (TILE + 2); i += TILE * TILE) {
        int ty = i / (TILE + 2), tx = i % (TILE + 2);
        int yy = y0 + ty - 1, xx = x0 + tx - 1;
        tile[ty][tx] = (yy >= 0 && yy < H && xx >= 0 && xx < W) ? src[(size_t)yy * W + xx] : 0.f;
    }
    __syncthreads();
    int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= W || y >= H) return;
    float acc = 0.f;
#pragma unroll
    for (int dy = 0; dy < 3; ++dy)
#pragma unroll
        for (int dx = 0; dx < 3; ++dx) acc += tile[threadIdx.y + dy][threadIdx.x + dx] * wk[dy * 3 + dx];
    out[((size_t)c * H + y) * W + x] = acc;
}

int main() {
    const int C = 32, H = 512, W = 512;
    std::vector<float> h((size_t)C * H * W), hw(C * 9), o(h.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 17) % 255) / 255.f;
    for (int i = 0; i < C * 9; ++i) hw[i] = (float)((i % 9) - 4) * 0.125f;
    float *in, *w, *out;
    cudaMalloc(&in, h.size() * sizeof(float));
    cudaMalloc(&w, hw.size() * sizeof(float));
    cudaMalloc(&out, o.size() * sizeof(float));
    cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(w, hw.data(), hw.size() * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(TILE, TILE);
    dim3 grid((W + TILE - 1) / TILE, (H + TILE - 1) / TILE, C);
    dwconv3x3<<<grid, block>>>(in, w, out, C, H, W);
    cudaMemcpy(o.data(), out, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(w);
    cudaFree(out);
    return 0;
}
