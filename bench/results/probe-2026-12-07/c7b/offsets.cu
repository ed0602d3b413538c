#include <cuda_runtime.h>
#include <cstdint>

namespace seg {
// exclusive running sum of per-bucket counts, per segment row: off[r][k] = sum_{j<k} cnt[r][j]
template <typename I>
__global__ void exclusive_offsets(const int* cnt, I* off, int nseg, int len) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nseg) return;
    I total = 0;
    for (int k = 0; k < len; k++) {
        off[(I)r * len + k] = total;
        total += cnt[(I)r * len + k];
    }
}
}

int main() {
    int nseg = 10000, len = 512;
    int* c; int64_t* o;
    cudaMalloc(&c, sizeof(int) * nseg * len);
    cudaMalloc(&o, sizeof(int64_t) * nseg * len);
    seg::exclusive_offsets<int64_t><<<(nseg + 127) / 128, 128>>>(c, o, nseg, len);
    cudaDeviceSynchronize();
    return 0;
}
