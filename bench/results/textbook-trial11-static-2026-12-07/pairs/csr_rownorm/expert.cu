#include <cstdio>
#include <vector>

// Same result: one warp per row; lanes stride the nonzeros (coalesced), shuffle-xor sum so every lane has it.
__global__ void csr_row_l1_normalize(int nrows, const int* __restrict__ row_ptr, const float* __restrict__ val,
                                     float* __restrict__ out) {
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (r >= nrows) return;
    int begin = row_ptr[r];
    int end = row_ptr[r + 1];
    float s = 0.f;
    for (int j = begin + lane; j < end; j += 32) s += fabsf(val[j]);
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    float inv = s > 0.f ? 1.f / s : 0.f;
    for (int j = begin + lane; j < end; j += 32) out[j] = val[j] * inv;
}

int main() {
    const int nrows = 100000;
    std::vector<int> hptr(nrows + 1);
    hptr[0] = 0;
    for (int r = 0; r < nrows; ++r) hptr[r + 1] = hptr[r] + 16 + (r * 7) % 113;
    const int nnz = hptr[nrows];
    std::vector<float> hval(nnz), hout(nnz);
    for (int j = 0; j < nnz; ++j) hval[j] = (float)((j * 29) % 41) - 20.f;
    int* ptr;
    float *val, *out;
    cudaMalloc(&ptr, (nrows + 1) * sizeof(int));
    cudaMalloc(&val, nnz * sizeof(float));
    cudaMalloc(&out, nnz * sizeof(float));
    cudaMemcpy(ptr, hptr.data(), (nrows + 1) * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(val, hval.data(), nnz * sizeof(float), cudaMemcpyHostToDevice);
    csr_row_l1_normalize<<<(nrows * 32 + 255) / 256, 256>>>(nrows, ptr, val, out);
    cudaMemcpy(hout.data(), out, nnz * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (int j = 0; j < nnz; ++j) sum += hout[j] * (double)(j % 5);
    printf("checksum = %.6f\n", sum);
    cudaFree(ptr);
    cudaFree(val);
    cudaFree(out);
    return 0;
}
