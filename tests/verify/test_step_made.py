"""The step-made check: each registered strategy is recognised when made, refused when not, None when unchecked."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.verify.step_made import CHECKS, step_made

START = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.exp(x) + y, mask=m)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256, num_warps=4)
    return out
'''

MADE = {
    "triton_cache_hints": START.replace("x = tl.load(x_ptr + offs, mask=m)",
                                        'x = tl.load(x_ptr + offs, mask=m, eviction_policy="evict_first")'),
    "triton_divisibility_hints": START.replace("    m = offs < n", "    offs = tl.max_contiguous(tl.multiple_of(offs, "
                                               "BLOCK), BLOCK)\n    m = offs < n"),
    "triton_block_size": START.replace("BLOCK=256, num", "BLOCK=1024, num").replace("cdiv(n, 256)",
                                                                                   "cdiv(n, 1024)"),
    "triton_warps_stages": START.replace("num_warps=4", "num_warps=8"),
    "triton_autotune": START.replace("@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4), "
                                     "triton.Config({}, num_warps=8)], key=['n'])\n@triton.jit")
                            .replace(", num_warps=4)", ")"),
    "triton_exp2": START.replace("tl.exp(x)", "tl.exp2(x * 1.4426950408889634)"),
}


def _p(text: str):  # noqa: ANN202 - a SourceModel
    return parse_text(text, "python", path="k.py")


@pytest.mark.parametrize("strategy", sorted(MADE))
def test_made_step_is_recognised(strategy: str) -> None:
    assert step_made(strategy, _p(START), _p(MADE[strategy]), "add_kernel") is True


@pytest.mark.parametrize("strategy", sorted(MADE))
def test_unchanged_kernel_did_not_make_the_step(strategy: str) -> None:
    assert step_made(strategy, _p(START), _p(START), "add_kernel") is False


@pytest.mark.parametrize("strategy", sorted(MADE))
def test_another_step_is_not_this_one(strategy: str) -> None:
    others = [s for s in MADE if s != strategy and not {s, strategy} <= {"triton_autotune", "triton_warps_stages",
                                                                          "triton_block_size"}]
    for other in others:
        assert step_made(strategy, _p(START), _p(MADE[other]), "add_kernel") is False, other


def test_unchecked_strategy_or_renamed_kernel_is_none() -> None:
    assert "triton_row_in_registers" not in CHECKS
    assert step_made("triton_row_in_registers", _p(START), _p(START), "add_kernel") is None
    renamed = MADE["triton_exp2"].replace("add_kernel", "add_kernel2")
    assert step_made("triton_exp2", _p(START), _p(renamed), "add_kernel") is None
