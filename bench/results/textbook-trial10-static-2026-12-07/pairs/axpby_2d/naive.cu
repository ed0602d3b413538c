#include <cuda_runtime.h>
#include <vector>

// Z = alpha * X + beta * Y on row-major rows x cols matrices with row pitch `pitch` (in elements).
// threadIdx.x walks the rows: a warp touches 32 different rows, one float each.
__global__ void axpby_2d(float alpha, const float* X, float beta, const float* Y, float* Z, int rows, int cols,
                         int pitch) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) Z[r * pitch + c] = alpha * X[r * pitch + c] + beta * Y[r * pitch + c];
}

// The launch sits in a templated host wrapper; the block shape is its template argument.
template <int BX, int BY>
void launch_axpby(float alpha, const float* X, float beta, const float* Y, float* Z, int rows, int cols, int pitch,
                  cudaStream_t stream) {
    dim3 block(BX, BY);
    dim3 grid((rows + BX - 1) / BX, (cols + BY - 1) / BY);
    axpby_2d<<<grid, block, 0, stream>>>(alpha, X, beta, Y, Z, rows, cols, pitch);
}

int main() {
    const int rows = 6000, cols = 5000, pitch = 5120;
    const size_t total = (size_t)rows * pitch;
    std::vector<float> hx(total), hy(total), hz(total);
    for (size_t i = 0; i < total; ++i) {
        hx[i] = (float)(i % 19) * 0.5f;
        hy[i] = (float)(i % 23) - 11.0f;
    }
    float *X, *Y, *Z;
    cudaMalloc(&X, total * sizeof(float));
    cudaMalloc(&Y, total * sizeof(float));
    cudaMalloc(&Z, total * sizeof(float));
    cudaMemcpy(X, hx.data(), total * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(Y, hy.data(), total * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(Z, 0, total * sizeof(float));
    launch_axpby<32, 8>(2.0f, X, -0.5f, Y, Z, rows, cols, pitch, 0);
    cudaMemcpy(hz.data(), Z, total * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(X);
    cudaFree(Y);
    cudaFree(Z);
    return 0;
}
