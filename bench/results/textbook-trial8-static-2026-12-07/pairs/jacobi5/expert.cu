#include <cuda_runtime.h>
#include <vector>
#define N 4096
#define IDX(r,c) ((r)*N+(c))
#define TX 32
#define TY 8

// One Jacobi sweep; each block stages its tile plus a one-cell halo in shared memory.
__global__ void jacobi5(const float* __restrict__ u, float* __restrict__ v) {
    __shared__ float t[TY + 2][TX + 2];
    int c = blockIdx.x * TX + threadIdx.x;
    int r = blockIdx.y * TY + threadIdx.y;
    int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
    bool in = r < N && c < N;
    t[ly][lx] = in ? u[IDX(r, c)] : 0.f;
    if (threadIdx.x == 0) t[ly][0] = (in && c > 0) ? u[IDX(r, c - 1)] : 0.f;
    if (threadIdx.x == TX - 1) t[ly][TX + 1] = (in && c + 1 < N) ? u[IDX(r, c + 1)] : 0.f;
    if (threadIdx.y == 0) t[0][lx] = (in && r > 0) ? u[IDX(r - 1, c)] : 0.f;
    if (threadIdx.y == TY - 1) t[TY + 1][lx] = (in && r + 1 < N) ? u[IDX(r + 1, c)] : 0.f;
    __syncthreads();
    if (r < 1 || c < 1 || r >= N - 1 || c >= N - 1) return;
    v[IDX(r, c)] = 0.25f * (t[ly - 1][lx] + t[ly + 1][lx] + t[ly][lx - 1] + t[ly][lx + 1]);
}

int main() {
    std::vector<float> h(N * N);
    for (int i = 0; i < N * N; ++i) h[i] = (float)(i % 97) * 0.01f;
    float *u, *v;
    cudaMalloc(&u, N * N * sizeof(float));
    cudaMalloc(&v, N * N * sizeof(float));
    cudaMemcpy(u, h.data(), N * N * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(v, h.data(), N * N * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(TX, TY);
    dim3 grid(N / TX, N / TY);
    jacobi5<<<grid, block>>>(u, v);
    cudaDeviceSynchronize();
    cudaFree(u);
    cudaFree(v);
    return 0;
}
