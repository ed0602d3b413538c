"""An integer tensor that indexes a dimension (cross-entropy's targets into a row of V logits) keeps each recorded
call's own range, tied to the size it indexes (``randint`` over ``[0, "V")``), never the min..max pooled over
every call (targets up to 3000 from ``V = 3001`` are out of bounds for ``V = 100``); a scaled set scales the range
with V only; integers that follow no size keep the range every call had."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from htam_core.harness.infer_py import infer
from htam_core.harness.runner import _make_spec_inputs
from htam_core.harness.spec import parse_kernel_table
from htam_core.harness.toml_render import render_toml

XENT = '''import torch
import triton
import triton.language as tl


@triton.jit
def xent_kernel(logits_ptr, target_ptr, loss_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(logits_ptr + row * V + c, mask=c < V, other=-float("inf"))
    mx = tl.max(x, axis=0)
    lse = mx + tl.log(tl.sum(tl.exp(x - mx), axis=0))
    t = tl.load(target_ptr + row)
    tl.store(loss_ptr + row, lse - tl.load(logits_ptr + row * V + t))


def xent(logits, target):
    n_rows, V = logits.shape
    loss = torch.empty(n_rows)
    xent_kernel[(n_rows,)](logits, target, loss, V, BLOCK=triton.next_power_of_2(V))
    return loss


if __name__ == "__main__":
    torch.manual_seed(0)
    for n_rows, V in [(4, 10), (5, 300)]:
        logits = torch.randn(n_rows, V)
        target = torch.randint(0, V, (n_rows,))
        ref = torch.nn.functional.cross_entropy(logits, target, reduction="none")
        torch.testing.assert_close(xent(logits, target), ref, rtol=1e-4, atol=1e-4)
'''


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def test_index_targets_follow_the_size_they_index_in_every_set(tmp_path: Path) -> None:
    f = tmp_path / "xent.py"
    f.write_text(XENT)
    inf = infer(f, "xent_kernel")
    h = inf.harness
    assert h is not None, inf.reason
    target = next(i for i in h.inputs if i.name == "target")
    assert (target.init, target.low, target.high) == ("randint", 0, "V"), target
    assert any("indices below V" in n for n in h.notes), h.notes
    for sizes in [*h.sizes, *h.interpret_sizes]:  # the scaled timed set too
        inputs = _make_spec_inputs(h, sizes, 3, 1.0, "cpu")
        t = inputs[[i.name for i in h.inputs].index("target")]
        assert int(t.max()) < sizes["V"] and int(t.min()) >= 0, (sizes, int(t.max()))
    # the htam.toml table keeps the expression, and reads back
    table = tomllib.loads(render_toml(h))["kernel"][h.kernel]
    back = parse_kernel_table(table, kernel=h.kernel, spec_path=tmp_path / "htam.toml", file_path=f)
    assert next(i for i in back.inputs if i.name == "target").high == "V"


def test_integers_that_follow_no_size_keep_the_range_every_call_had(tmp_path: Path) -> None:
    f = tmp_path / "xent.py"
    # negative positions from the row's end (t + V): no index below a size; [-300, 0) pooled is out of bounds for
    # V = 10, the range every call had ([-10, 0) at most) is not
    f.write_text(XENT.replace("target = torch.randint(0, V, (n_rows,))", "target = torch.randint(-V, 0, (n_rows,))")
                 .replace("reduction=\"none\")", "reduction=\"none\") if False else None")
                 .replace("row * V + t))", "row * V + t + V))")
                 .replace("torch.testing.assert_close(xent(logits, target), ref, rtol=1e-4, atol=1e-4)",
                          "xent(logits, target)"))
    inf = infer(f, "xent_kernel")
    h = inf.harness
    assert h is not None, inf.reason
    target = next(i for i in h.inputs if i.name == "target")
    assert target.init == "randint" and isinstance(target.high, int)
    assert -10 <= target.low and target.high <= 0, target
    assert any("none follows a size" in n for n in h.notes), h.notes
