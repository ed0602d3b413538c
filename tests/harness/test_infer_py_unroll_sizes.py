"""A size that sets a ``tl.static_range`` unroll count (through ``@triton.heuristics`` or a constexpr computed at the
launch) is not scaled up for the timed set: N 1000 -> 64760 made a 2 x 506-fold unroll whose compile timed out. And
a compile that times out at a scaled set is retried at the recorded size, saying the set was scaled."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from htam_core.harness.base import SCALED_NOTE, unscaled
from htam_core.harness.infer_py import infer
from htam_core.profile import static_kinds
from htam_core.types.errors import ProfileError

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.heuristics({"NUM_TILES": lambda args: triton.cdiv(args["N"], args["BLOCK_N"])})
@triton.jit
def rms_kernel(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr, NUM_TILES: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for t in tl.static_range(NUM_TILES):
        c = t * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride + c, mask=c < N, other=0.0)
        acc += x * x
    inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + 1e-6)
    for t in tl.static_range(NUM_TILES):
        c = t * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride + c, mask=c < N, other=0.0)
        tl.store(y_ptr + row * stride + c, x * inv, mask=c < N)


def rms(x):
    M, N = x.shape
    y = torch.empty_like(x)
    rms_kernel[(M,)](x, y, x.stride(0), N, BLOCK_N=64)
    return y


if __name__ == "__main__":
    for M, N in [(3, 100), (4, 300)]:
        x = torch.randn(M, N)
        torch.testing.assert_close(rms(x), x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-6))
'''


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def test_a_size_that_sets_an_unroll_count_is_not_scaled(tmp_path: Path) -> None:
    f = tmp_path / "rms.py"
    f.write_text(KERNEL)
    inf = infer(f, "rms_kernel")
    h = inf.harness
    assert h is not None, inf.reason
    big = h.sizes[0]
    assert big["N"] == 300 and big["M"] > 4, h.sizes  # M still grows; N stays as recorded
    assert any(n.startswith("N not scaled for the timed set: it sets a tl.static_range unroll count") for n in h.notes)
    assert any(n.startswith(SCALED_NOTE) and "N as recorded" in n for n in h.notes), h.notes


def test_a_compile_timeout_at_a_scaled_set_is_retried_at_the_recorded_size(tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "rms.py"
    f.write_text(KERNEL)
    h = infer(f, "rms_kernel").harness
    scaled = dataclasses.replace(h, sizes=[{"M": 9000, "N": 64000}, *h.sizes[1:]])
    seen: list[dict] = []

    def fake_recorded(harness, text, kernel):
        seen.append(harness.sizes[0])
        return {}

    def fake_compile(model, kernel, **kw):
        if len(seen) == 1:
            raise ProfileError("Triton could not compile rms_kernel (timeout): did not finish within 180 s")
        return {"ok": True}

    monkeypatch.setattr(static_kinds, "recorded_constexprs", fake_recorded)
    monkeypatch.setattr(static_kinds, "recorded_pointer_dtypes", lambda *a: {})
    monkeypatch.setattr(static_kinds, "recorded_kernel_args", lambda *a: {})
    monkeypatch.setattr(static_kinds, "compile_triton_kernel", fake_compile)
    kernel = type("K", (), {"name": "rms_kernel"})()
    v, said = static_kinds._compile_at_harness_sizes(type("M", (), {"text": KERNEL})(), kernel, "sm_90", None, None,
                                                     scaled)
    assert v == {"ok": True} and seen == [{"M": 9000, "N": 64000}, h.sizes[1]]
    assert said and "scaled-up timed set" in said and "compiled again at that size" in said
    assert unscaled(dataclasses.replace(h, notes=[])) is None  # nothing scaled: nothing to retry
