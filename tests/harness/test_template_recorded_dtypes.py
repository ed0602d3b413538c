"""The htam.toml template shown when nothing could be inferred uses the dtype the recording saw for each of the
launcher's tensors (an fp16 input is ``float16``), not a ``float32`` guess; without a recording the guess stays.
Both ways the template reaches the user: ``htam harness infer`` (the CLI) and the "no harness" error of
:func:`find_harness` (optimize, verify, the editor)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from htam_core.harness import find_harness, write_template
from htam_core.harness.base import HarnessError
from htam_core.harness.infer_py import infer
from htam_core.harness.template import recorded_dtypes
from htam_core.source import load

FAILING = '''import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def scale(x, w):
    y = torch.empty_like(x)
    if x.numel() > 10:
        raise ValueError("not today")
    scale_kernel[(1,)](x, y, x.numel(), BLOCK=16)
    return y * w


if __name__ == "__main__":
    x = torch.randn(300, dtype=torch.float16)
    w = torch.randn(300, dtype=torch.bfloat16)
    print(scale(x, w))
'''


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def _dtypes(toml_text: str) -> dict[str, str]:
    (table,) = tomllib.loads(toml_text)["kernel"].values()
    return {i["name"]: i["dtype"] for i in table["inputs"]}


def test_the_template_uses_the_recorded_dtypes(tmp_path: Path) -> None:
    f = tmp_path / "scale.py"
    f.write_text(FAILING)
    inf = infer(f, "scale_kernel")
    assert inf.harness is None and "not today" in inf.reason, inf.reason
    assert recorded_dtypes(inf.recording) == {"x": "float16", "w": "bfloat16"}, inf.recording["calls"]
    m = load(str(f))
    text = write_template(m, m.kernel("scale_kernel"), recorded_dtypes(inf.recording))
    assert _dtypes(text) == {"x": "float16", "w": "bfloat16"}, text
    assert "dtype as recorded" in text
    # without a recording the guess is float32, as before
    assert _dtypes(write_template(m, m.kernel("scale_kernel"))) == {"x": "float32", "w": "float32"}


def test_the_no_harness_error_template_uses_the_recorded_dtypes(tmp_path: Path) -> None:
    f = tmp_path / "scale.py"
    f.write_text(FAILING)
    with pytest.raises(HarnessError) as e:
        find_harness(f, "scale_kernel")
    assert e.value.missing and e.value.snippet, e.value
    assert _dtypes(e.value.snippet) == {"x": "float16", "w": "bfloat16"}, e.value.snippet
