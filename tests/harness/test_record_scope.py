"""The reference's names are resolved in the assert's own scope (module level for a module-level ``__main__``),
never inside a ``@triton.jit`` kernel or another function defined there, and tuple unpacking is followed:
``a, b = x.float().chunk(2, dim=-1)`` gives ``a`` as the first chunk, not the kernel's ``a = tl.load(...)``."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.infer_py import infer, record

GEGLU = '''import torch
import triton
import triton.language as tl


@triton.jit
def geglu_kernel(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = cols < N
    a = tl.load(x_ptr + row * 2 * N + cols, mask=m, other=0.0)
    b = tl.load(x_ptr + row * 2 * N + N + cols, mask=m, other=0.0)
    tl.store(out_ptr + row * N + cols, a * b * tl.sigmoid(b), mask=m)


def helper():
    a = 3  # another function's a: never the __main__'s
    return a


def geglu(x):
    M, N2 = x.shape
    N = N2 // 2
    out = torch.empty((M, N))
    geglu_kernel[(M, triton.cdiv(N, 64))](x, out, N, BLOCK_N=64)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    for M, N in [(2, 64), (3, 100)]:
        x = torch.randn(M, 2 * N)
        a, b = x.float().chunk(2, dim=-1)
        ref = a * torch.nn.functional.silu(b)
        torch.testing.assert_close(geglu(x), ref, rtol=1e-4, atol=1e-4)
'''


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def test_tuple_unpacking_in_main_resolves_and_the_kernel_body_is_never_read(tmp_path: Path) -> None:
    f = tmp_path / "geglu.py"
    f.write_text(GEGLU)
    rec = record(f, "geglu")
    exprs = {a["expression"] for a in rec["asserts"]}
    assert len(exprs) == 1 and None not in exprs, rec["asserts"]
    (expr,) = exprs
    assert "chunk(2, dim=-1)[0]" in expr and "chunk(2, dim=-1)[1]" in expr and "tl.load" not in expr, expr
    h = infer(f, "geglu_kernel").harness
    assert h is not None and h.reference == expr and not h.uses_oracle


def test_a_name_bound_only_by_a_for_loop_is_not_taken_from_the_kernel(tmp_path: Path) -> None:
    f = tmp_path / "geglu.py"
    # `a` and `b` of the __main__ are bound by a for target (not followed): the kernel's `a = tl.load(x_ptr ...)`
    # must not stand in for them; the reason names `a`, not the kernel's `x_ptr`
    f.write_text(GEGLU.replace("        a, b = x.float().chunk(2, dim=-1)\n        ref",
                               "        for a, b in [x.float().chunk(2, dim=-1)]:\n            ref")
                 .replace("        torch.testing", "            torch.testing"))
    rec = record(f, "geglu")
    whys = [a["why"] for a in rec["asserts"]]
    assert whys and all(w and "'a'" in w and "x_ptr" not in w and "could not express" in w for w in whys), whys
