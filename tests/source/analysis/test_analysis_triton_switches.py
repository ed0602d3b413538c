"""``TritonFacts.switch_values``: the strings a ``tl.constexpr`` switch is compared with, in any spelling."""

from __future__ import annotations

from pathlib import Path

from htam_core.source import load
from htam_core.source.analysis import analyze

_KERNEL = '''
import triton
import triton.language as tl
from triton.language import constexpr


@triton.jit
def k(x_ptr, y_ptr, n, MODE: tl.constexpr, NORM: constexpr, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    if MODE == "relu":
        v = tl.maximum(v, 0.0)
    elif 'tanh' == MODE:
        v = v * 2.0
    elif MODE != "relu":
        v = v + 1.0
    if NORM != """l2""":
        v = v * 0.5
    if FLAG:
        v = -v
    label = "relu" == "relu"
    tl.store(y_ptr + offs, v, mask=offs < n)
'''


def test_each_switch_lists_its_strings_once_in_first_use_order(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(_KERNEL)
    model = load(str(tmp_path / "k.py"))
    tf = analyze(model, model.kernel("k")).triton
    assert tf is not None
    assert dict(tf.switch_values) == {"MODE": ("relu", "tanh"), "NORM": ("l2",)}
