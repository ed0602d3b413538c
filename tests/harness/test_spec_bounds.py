"""Harness values the one spec validator refuses: huge or negative shapes, and tolerances that are not finite.

The case: an ``htam.toml`` with ``N = 1e12`` (or a negative size) made ``htam optimize`` say "the starting
kernel failed" (the worker ran out of memory or torch refused the shape), and ``atol = nan`` passed
validation (every comparison then fails or passes silently). Each is now one line naming the field, and the
CLI exits 2 before anything runs.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from htam_core.cli.errors import EXIT_USAGE
from htam_core.cli.main import main
from htam_core.harness.base import MAX_TENSOR_ELEMENTS, HarnessError, InputSpec
from htam_core.harness.spec import parse_kernel_table, size_problem

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    import torch
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''

TABLE = '''[kernel.add_kernel]
version = 1
launcher = "add"
inputs = [
  {{ name = "x", shape = ["N"], dtype = "float32", init = "randn" }},
  {{ name = "y", shape = ["N", 2], dtype = "float32", init = "randn" }},
]
sizes = [{sizes}]
reference = "x + y"
{extra}
'''


def _write(tmp_path: Path, sizes: str = "{ N = 4096 }", extra: str = "") -> Path:
    (tmp_path / "add.py").write_text(KERNEL)
    (tmp_path / "htam.toml").write_text(TABLE.format(sizes=sizes, extra=extra))
    return tmp_path / "add.py"


def _parse(tmp_path: Path, **kw: str):
    f = _write(tmp_path, **kw)
    table = tomllib.loads((tmp_path / "htam.toml").read_text())["kernel"]["add_kernel"]
    return parse_kernel_table(table, kernel="add_kernel", spec_path=tmp_path / "htam.toml", file_path=f)


@pytest.mark.parametrize(("sizes", "words"), [
    ("{ N = 1e12 }", ["htam.toml:8", "sizes", "'x'", "1e+12 elements", "at most"]),
    ("{ N = -4 }", ["htam.toml:8", "sizes", "'x'", "-4", "0 or more"]),
    ("{ N = 4096 }, { N = 40000000000 }", ["set 1", "'y'", "at most"]),
    ("{ N = 30000000000 }", ["GiB", "set 0"]),
])
def test_shape_out_of_bounds_is_a_harness_error(tmp_path: Path, sizes: str, words: list[str]) -> None:
    with pytest.raises(HarnessError) as e:
        _parse(tmp_path, sizes=sizes)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1e-4"])
@pytest.mark.parametrize("key", ["atol", "rtol"])
def test_tolerance_must_be_finite_and_non_negative(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(HarnessError, match=rf"htam.toml:10 \[kernel.add_kernel\]: {key} must be a finite "):
        _parse(tmp_path, extra=f"{key} = {value}")


def test_valid_table_still_parses(tmp_path: Path) -> None:
    h = _parse(tmp_path, extra="atol = 0.0\nrtol = 1e-3")
    assert h.atol == 0.0 and h.sizes == [{"N": 4096}]


def test_size_problem_bounds() -> None:
    x = InputSpec("x", shape=["N", "M"])
    assert size_problem([x], [{"N": 1 << 18, "M": 1 << 18}]) is None  # exactly the maximum
    assert MAX_TENSOR_ELEMENTS == 1 << 36
    assert "elements" in (size_problem([x], [{"N": 1 << 18, "M": (1 << 18) + 1}]) or "")
    assert size_problem([x], [{"N": 4}]) is None  # M unknown here: left to the run


def test_a_negative_dimension_is_named_once() -> None:
    """Regression: a literal negative dimension read "whose dimension -3 is -3"."""
    msg = size_problem([InputSpec("x", shape=[-3])], [{}]) or ""
    assert "with dimension -3 in set 0" in msg and "is -3" not in msg
    msg = size_problem([InputSpec("x", shape=["M"])], [{"M": -4096}]) or ""
    assert "with dimension 'M' = -4096 in set 0" in msg


@pytest.mark.usefixtures("private_htam_env")
@pytest.mark.parametrize("argv", [["verify"], ["optimize", "--budget", "1"]])
def test_cli_exits_2_with_the_field_named(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture) -> None:
    f = _write(tmp_path, sizes="{ N = 1e12 }")
    rc = main([argv[0], str(f), *argv[1:]])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE, err
    assert "htam.toml:8 [kernel.add_kernel]" in err and "1e+12 elements" in err
    assert "starting kernel failed" not in err and "Traceback" not in err
