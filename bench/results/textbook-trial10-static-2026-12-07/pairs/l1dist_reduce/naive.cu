#include <cuda_runtime.h>
#include <vector>

enum { BLOCK = 256 };

// *out += sum |a[i] - b[i]| (L1 distance). Each block reduces its BLOCK values in shared memory with the
// interleaved tree written as a do/while, then one atomic per block.
__global__ void l1_dist(const float* a, const float* b, float* out, int n) {
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = (i < n) ? fabsf(a[i] - b[i]) : 0.0f;
    __syncthreads();
    int s = 1;
    do {
        if ((t & (2 * s - 1)) == 0) buf[t] += buf[t + s];
        __syncthreads();
        s <<= 1;
    } while (s < BLOCK);
    if (t == 0) atomicAdd(out, buf[0]);
}

int main() {
    const int n = 1 << 24;
    std::vector<float> ha(n), hb(n);
    for (int i = 0; i < n; ++i) {
        ha[i] = (float)(i % 101) * 0.01f;
        hb[i] = (float)(i % 53) * 0.02f;
    }
    float *a, *b, *out;
    float result = 0.0f;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&out, sizeof(float));
    cudaMemcpy(a, ha.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(out, 0, sizeof(float));
    l1_dist<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(a, b, out, n);
    cudaMemcpy(&result, out, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(a);
    cudaFree(b);
    cudaFree(out);
    return 0;
}
