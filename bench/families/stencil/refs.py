"""Torch references of the stencil family's CUDA kernels whose result is not one expression (named by
``reference = "refs.py:<function>"`` in this folder's htam.toml; called with the non-output inputs)."""
import torch


def jacobi_ref(inp: torch.Tensor, ny: int, nx: int) -> torch.Tensor:
    """One Jacobi sweep of the 5-point stencil with the boundary copied (ny x nx fp32 grid)."""
    out = inp.clone()
    out[1:-1, 1:-1] = 0.25 * (inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:])
    return out


def stencil1d_ref(inp: torch.Tensor, w: torch.Tensor, n: int) -> torch.Tensor:
    """The radius-3 1-D stencil with zero padding: a cross-correlation with the 7 weights."""
    return torch.nn.functional.conv1d(inp.view(1, 1, -1), w.view(1, 1, -1), padding=3).view(-1)


def conv3x3_ref(img: torch.Tensor, k3: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """Single-channel 3x3 'same' cross-correlation with zero padding, fp32 math, fp16 result."""
    out = torch.nn.functional.conv2d(img.float().view(1, 1, h, w), k3.view(1, 1, 3, 3), padding=1)
    return out.view(h, w).half()
