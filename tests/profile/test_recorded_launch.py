"""The static profile compiles a Triton kernel with the launch configuration its harness records.

Regression: a kernel launched through a launcher parameter (``BLOCK=block``) was compiled with the fallback
``BLOCK=1024`` although ``htam.toml`` (or the harness inferred from ``__main__``) ran it with 512.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from htam_core.harness.find import find_harness
from htam_core.harness.launch_values import recorded_constexprs
from htam_core.profile.api import source_profile, static_profile
from htam_core.source.api import load

_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def add(x, y, block: int = 1024, warps: int = 4):
    out = torch.empty_like(x)
    n = out.numel()
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_warps=warps)
    return out
'''

_LAUNCHER_SPEC = '''
[kernel.add_kernel]
version = 1
file = "k.py"
launcher = "add"
inputs = [
  { name = "x", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "y", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "blk", dtype = "int32", value = "N // 8" },
]
sizes = [{ N = 4096 }]
reference = "x + y"
'''

_DIRECT_SPEC = '''
[kernel.add_kernel]
version = 1
file = "k.py"
grid = "(triton.cdiv(N, 256),)"
args = ["x", "y", "out", "n"]
kwargs = { BLOCK = 256, num_warps = 2 }
inputs = [
  { name = "x", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "y", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "out", shape = ["N"], dtype = "float32", init = "empty" },
  { name = "n", dtype = "int32", value = "N" },
]
outputs = ["out"]
sizes = [{ N = 4096 }]
reference = "x + y"
'''


def _project(tmp: Path, spec: str) -> Path:
    (tmp / "k.py").write_text(_KERNEL)
    (tmp / "htam.toml").write_text(textwrap.dedent(spec))
    return tmp / "k.py"


def test_a_launcher_parameter_takes_the_harness_input_at_its_position(tmp_path: Path) -> None:
    path = _project(tmp_path, _LAUNCHER_SPEC)
    model = load(str(path))
    kernel = model.kernel("add_kernel")
    h = find_harness(path, "add_kernel", model)
    # blk is the third input, bound to the launcher's third parameter `block`; `warps` keeps its default
    assert recorded_constexprs(h, model.text, kernel) == {"BLOCK": 512, "num_warps": 4}


def test_a_direct_launch_takes_the_harness_kwargs(tmp_path: Path) -> None:
    path = _project(tmp_path, _DIRECT_SPEC)
    model = load(str(path))
    h = find_harness(path, "add_kernel", model)
    assert recorded_constexprs(h, model.text, model.kernel("add_kernel")) == {"BLOCK": 256, "num_warps": 2}


def test_no_harness_records_nothing(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(_KERNEL)
    model = load(str(tmp_path / "k.py"))
    assert recorded_constexprs(None, model.text, model.kernel("add_kernel")) == {}


def test_the_source_profile_uses_the_recorded_launch(tmp_path: Path) -> None:
    path = _project(tmp_path, _DIRECT_SPEC)
    model = load(str(path))
    p = source_profile(model, "add_kernel")
    assert p.extra["constexprs"] == {"BLOCK": 256}
    assert p.extra["num_warps"] == 2 and p.block_size == 64


def test_the_static_compile_uses_the_recorded_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    path = _project(tmp_path, _LAUNCHER_SPEC)
    p = static_profile(load(str(path)), "add_kernel")
    block = p.extra["constexprs"]["BLOCK"]
    assert block["value"] == 512 and block["source"].startswith("harness")
    assert not any("assumed" in w for w in p.warnings)
    # a user override still wins over the harness
    q = static_profile(load(str(path)), "add_kernel", constexprs={"BLOCK": 128})
    assert q.extra["constexprs"]["BLOCK"] == {"value": 128, "source": "user"}


def test_a_caller_that_found_the_harness_passes_it(tmp_path: Path) -> None:
    """The editor finds the harness once for both stages and passes it; ``harness=None`` means it has none."""
    path = _project(tmp_path, _DIRECT_SPEC)
    model = load(str(path))
    h = find_harness(path, "add_kernel", model)
    assert source_profile(model, "add_kernel", harness=h).extra["constexprs"] == {"BLOCK": 256}
    assert source_profile(model, "add_kernel", harness=None).extra["constexprs"] == {}


_LOCAL_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def rms_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(y_ptr + tl.program_id(0) * n_cols + offs, x * tl.rsqrt(tl.sum(x * x, axis=0) / n_cols), mask=offs < n_cols)


def rms(x):
    y = torch.empty_like(x)
    {cols}
    BLOCK = {block}
    rms_kernel[(x.shape[0],)](x, y, n_cols, BLOCK=BLOCK)
    return y
'''

_LOCAL_SPEC = '''
[kernel.rms_kernel]
version = 1
file = "k.py"
launcher = "rms"
inputs = [{ name = "x", shape = ["R", "C"], dtype = "float32", init = "randn" }]
sizes = [{ R = 64, C = 1000 }, { R = 64, C = 4096 }]
reference = "x"
'''


@pytest.mark.parametrize(("cols", "block", "value"), [
    ("n_rows, n_cols = x.shape", "triton.next_power_of_2(n_cols)", 1024),
    ("n_cols = x.shape[1]", "triton.next_power_of_2(n_cols)", 1024),
    ("n_cols = x.size(-1)", "max(16, min(triton.next_power_of_2(n_cols), 512))", 512),
    ("n_cols = x.shape[1]", "triton.cdiv(n_cols, 8) * 8", 1000),
])
def test_a_launcher_local_takes_the_harness_shape(tmp_path: Path, cols: str, block: str, value: int) -> None:
    """Regression: ``BLOCK = triton.next_power_of_2(n_cols)`` in the launcher was compiled with the fallback
    ``BLOCK=1024 (assumed)`` although the harness gives the shapes the launcher derives it from."""
    (tmp_path / "k.py").write_text(_LOCAL_KERNEL.replace("{cols}", cols).replace("{block}", block))
    (tmp_path / "htam.toml").write_text(textwrap.dedent(_LOCAL_SPEC))
    model = load(str(tmp_path / "k.py"))
    h = find_harness(tmp_path / "k.py", "rms_kernel", model)
    assert recorded_constexprs(h, model.text, model.kernel("rms_kernel")) == {"BLOCK": value}
    p = source_profile(model, "rms_kernel", harness=h)
    assert p.extra["constexprs"] == {"BLOCK": value}


def test_a_local_reassigned_to_an_unknown_value_is_not_guessed(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(_LOCAL_KERNEL.replace("{cols}", "n_cols = x.shape[1]").replace(
        "{block}", "256\n    BLOCK = pick(n_cols)"))
    (tmp_path / "htam.toml").write_text(textwrap.dedent(_LOCAL_SPEC))
    model = load(str(tmp_path / "k.py"))
    h = find_harness(tmp_path / "k.py", "rms_kernel", model)
    assert recorded_constexprs(h, model.text, model.kernel("rms_kernel")) == {}
