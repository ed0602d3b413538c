"""A ``@triton.autotune`` kernel without a prune cannot run under the interpreter: the autotuner benchmarks its
configs on a GPU and the interpreter has none (Triton 3.x: ``AttributeError: get_benchmarker``). The "no harness"
reason says so in one line, with the fix (a ``prune_configs_by`` keeping one config under ``TRITON_INTERPRET=1``,
or an htam.toml table); a failure of the user's own prune function is not mistaken for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.infer_py import infer

AUTOTUNED = '''import os
import torch
import triton
import triton.language as tl


def broken_prune(configs, named_args, **kwargs):
    raise ValueError("my prune is broken")


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (64, 128)], key=["N"]PRUNE)
@triton.jit
def scale_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def scale(x):
    y = torch.empty_like(x)
    N = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, y, N)
    return y


if __name__ == "__main__":
    for n in (100, 300):
        x = torch.randn(n)
        torch.testing.assert_close(scale(x), x * 2.0)
'''


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def test_autotune_without_a_prune_is_named_with_its_fix(tmp_path: Path) -> None:
    f = tmp_path / "scale.py"
    f.write_text(AUTOTUNED.replace("PRUNE", ""))
    r = infer(f, "scale_kernel")
    assert r.harness is None
    assert "\n" not in r.reason and "scale() raised" in r.reason, r.reason
    assert "@triton.autotune benchmarks its configs on a GPU" in r.reason, r.reason
    assert 'prune_configs_by={"early_config_prune"' in r.reason and "TRITON_INTERPRET" in r.reason, r.reason
    assert "htam.toml" in r.reason, r.reason


def test_a_prune_keeping_one_config_under_the_interpreter_records(tmp_path: Path) -> None:
    f = tmp_path / "scale.py"
    prune = (', prune_configs_by={"early_config_prune": lambda configs, named_args, **kw: configs[:1] '
             'if os.environ.get("TRITON_INTERPRET") == "1" else configs}')
    f.write_text(AUTOTUNED.replace("PRUNE", prune))
    r = infer(f, "scale_kernel")
    assert r.harness is not None, r.reason
    assert r.harness.reference == "x * 2.0", r.harness.reference


def test_the_users_failing_prune_is_not_called_a_missing_gpu(tmp_path: Path) -> None:
    f = tmp_path / "scale.py"
    f.write_text(AUTOTUNED.replace("PRUNE", ', prune_configs_by={"early_config_prune": broken_prune}'))
    r = infer(f, "scale_kernel")
    assert r.harness is None and "my prune is broken" in r.reason, r.reason
    assert "benchmarks its configs on a GPU" not in r.reason, r.reason
