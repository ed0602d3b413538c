"""The roofline bound of a PyTorch reference (KernelBench harness): compulsory bytes and counted FLOPs."""

from __future__ import annotations

import torch

from htam_core.harness.roofline_bound import compulsory_bound


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 32, bias=True)
        self.register_buffer("scale", torch.ones(32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * self.scale


class _Relu(torch.nn.Module):
    def forward(self, x: torch.Tensor, alpha: float) -> torch.Tensor:
        return torch.relu(x) * alpha


def test_matmul_bytes_and_flops():
    x = torch.randn(16, 64)
    b, f = compulsory_bound(_Linear(), [x])
    # input 16x64, weight 32x64, bias 32, buffer 32, output 16x32, all fp32
    assert b == 4 * (16 * 64 + 32 * 64 + 32 + 32 + 16 * 32)
    assert f == 2 * 16 * 64 * 32  # FlopCounterMode: addmm counts 2*M*K*N


def test_elementwise_has_traffic_but_no_counted_flops():
    x = torch.randn(1000, dtype=torch.float16)
    b, f = compulsory_bound(_Relu(), [x, 0.5])
    assert b == 2 * 1000 * 2 and f == 0.0


def test_kernelbench_harness_reports_the_reference_bound():
    """The KernelBench pair gets bytes (compulsory traffic) and no FLOPs for an elementwise reference."""
    from pathlib import Path

    from htam_core.harness import find_harness
    from htam_core.harness.runner import prepare

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "kb"
    p = prepare(find_harness(fix / "kb_tri.py", "relu_plus_one"), "cpu")
    xs = p.trial.make_inputs(42, 0, 1.0)
    assert p.bytes_for(0, xs) == 2 * 8 * 300 * 4  # get_inputs: one 8x300 fp32 tensor in, one out
    assert p.flops_for(0, xs) is None
