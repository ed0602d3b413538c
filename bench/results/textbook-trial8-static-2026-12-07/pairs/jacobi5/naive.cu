#include <cuda_runtime.h>
#include <vector>
#define N 4096
#define IDX(r,c) ((r)*N+(c))

// One Jacobi sweep of the 5-point Laplace stencil on an N x N grid (row-major); borders untouched.
__global__ void jacobi5(const float* __restrict__ u, float* __restrict__ v) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < 1 || c < 1 || r >= N - 1 || c >= N - 1) return;
    v[IDX(r, c)] = 0.25f * (u[IDX(r - 1, c)] + u[IDX(r + 1, c)] + u[IDX(r, c - 1)] + u[IDX(r, c + 1)]);
}

int main() {
    std::vector<float> h(N * N);
    for (int i = 0; i < N * N; ++i) h[i] = (float)(i % 97) * 0.01f;
    float *u, *v;
    cudaMalloc(&u, N * N * sizeof(float));
    cudaMalloc(&v, N * N * sizeof(float));
    cudaMemcpy(u, h.data(), N * N * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(v, h.data(), N * N * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(32, 8);
    dim3 grid(N / 32, N / 8);
    jacobi5<<<grid, block>>>(u, v);
    cudaDeviceSynchronize();
    cudaFree(u);
    cudaFree(v);
    return 0;
}
