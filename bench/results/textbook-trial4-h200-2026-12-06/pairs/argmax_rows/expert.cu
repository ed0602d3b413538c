// Argmax per row with cooperative groups: one 32-thread tile per row, coalesced strided reads,
// (value, index) pairs reduced with shuffles; ties keep the smaller index, as the sequential scan does.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void argmax_rows(const float* __restrict__ logits, int* __restrict__ idx, int rows, int cols) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  const int r = blockIdx.x * tile.meta_group_size() + tile.meta_group_rank();
  if (r >= rows) return;
  const float* p = logits + (size_t)r * cols;
  float best = -INFINITY;
  int bi = cols;
  for (int c = tile.thread_rank(); c < cols; c += 32) {
    float v = p[c];
    if (v > best) { best = v; bi = c; }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = tile.shfl_down(best, o);
    int oi = tile.shfl_down(bi, o);
    if (ov > best || (ov == best && oi < bi)) { best = ov; bi = oi; }
  }
  if (tile.thread_rank() == 0) idx[r] = bi;
}

__global__ void init_logits(float* p, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)((i * 2654435761u) % 1000) * 0.001f;
}

int main() {
  const int rows = 65536, cols = 512;
  const size_t n = (size_t)rows * cols;
  float* logits;
  int* idx;
  cudaMalloc(&logits, n * sizeof(float));
  cudaMalloc(&idx, rows * sizeof(int));
  init_logits<<<(unsigned)((n + 255) / 256), 256>>>(logits, n);
  argmax_rows<<<(rows + 7) / 8, 256>>>(logits, idx, rows, cols);
  cudaDeviceSynchronize();
  cudaFree(logits); cudaFree(idx);
  return 0;
}
