"""Cross-entropy loss per row from fp32 logits and int64 targets: an online logsumexp over BLOCK_V chunks
of the vocabulary, one program per row."""
import torch
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, loss_ptr, V, stride, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf"))
        new_m = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    t = tl.load(targets_ptr + row).to(tl.int32)
    xt = tl.load(logits_ptr + row * stride + t)
    tl.store(loss_ptr + row, tl.log(s) + m - xt)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    B, V = logits.shape
    loss = torch.empty(B, device=logits.device, dtype=torch.float32)
    cross_entropy_kernel[(B,)](logits, targets, loss, V, logits.stride(0), BLOCK_V=1024, num_warps=4)
    return loss
