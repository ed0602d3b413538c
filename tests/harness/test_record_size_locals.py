"""A number of the program that stands for a size (``for M, N in [...]``, ``(N,)`` in the reference) stays tied to
each recorded call's own shapes (``x.shape[1]``), never frozen to the first call's value; an assert whose rewrite
differs between the recorded calls is not used as the reference, in one line; and a reference that cannot be
evaluated is named as the harness's fault, not the kernel's."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError, reference_failed
from htam_core.harness.infer_py import infer, record
from htam_core.harness.runner import _eval

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def norm_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    v = tl.load(x_ptr + row * n_cols + c, mask=m, other=0.0)
    mean = tl.sum(v, axis=0) / n_cols
    d = tl.where(m, v - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + 1e-5)
    tl.store(y_ptr + row * n_cols + c, d * rstd, mask=m)


def norm(x):
    M, N = x.shape
    y = torch.empty_like(x)
    norm_kernel[(M,)](x, y, N, BLOCK=triton.next_power_of_2(N))
    return y


if __name__ == "__main__":
    torch.manual_seed(0)
'''

TIED = KERNEL + '''    for M, N in [(4, 20), (3, 77)]:
        x = torch.randn(M, N)
        ref = torch.nn.functional.layer_norm(x, (N,))
        torch.testing.assert_close(norm(x), ref, rtol=1e-3, atol=1e-3)
'''

# the size reaches the reference only through a float computed from it: nothing ties 1 / N to the call's shapes
FLAT = KERNEL + '''    for M, N in [(4, 20), (3, 77)]:
        x = torch.randn(M, N)
        inv_n = 1.0 / N
        d = x - x.sum(1, keepdim=True) * inv_n
        ref = d * torch.rsqrt((d * d).sum(1, keepdim=True) * inv_n + 1e-5)
        torch.testing.assert_close(norm(x), ref, rtol=1e-3, atol=1e-3)
'''


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def test_a_loop_size_in_the_reference_is_tied_to_each_calls_shape(tmp_path: Path) -> None:
    f = tmp_path / "norm.py"
    f.write_text(TIED)
    rec = record(f, "norm")
    exprs = [a["expression"] for a in rec["asserts"]]
    assert len(exprs) == 2 and all(exprs), rec["asserts"]
    assert exprs[0] == exprs[1] and "x.shape[1]" in exprs[0] and "20" not in exprs[0], exprs
    h = infer(f, "norm_kernel").harness
    assert h is not None and h.reference == exprs[0], h and h.notes


def test_a_size_that_cannot_be_tied_drops_the_reference_with_one_line(tmp_path: Path) -> None:
    f = tmp_path / "norm.py"
    f.write_text(FLAT)
    inf = infer(f, "norm_kernel")
    h = inf.harness
    assert h is not None, inf.reason
    assert h.reference is None and h.uses_oracle
    why = [n for n in h.notes if "not used as the reference" in n and "in another" in n]
    assert len(why) == 1 and "could not be tied to the call's own arguments" in why[0], h.notes


def test_a_reference_that_cannot_be_evaluated_is_the_harness_fault() -> None:
    with pytest.raises(HarnessError) as e:
        _eval("torch.nn.functional.layer_norm(x, (200,))", {"torch": __import__("torch"),
                                                               "x": __import__("torch").zeros(2, 7)}, "reference")
    assert reference_failed(f"seed 1, input set 1: HarnessError: {e.value}")
    assert not reference_failed("Triton could not compile k (timeout)")
