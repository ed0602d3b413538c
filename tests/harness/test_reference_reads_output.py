"""A reference expression that reads an output of the launch it checks is not a reference.

``torch.where(out != 0, (x + bias) / 0.75, 0)`` (``out`` the launcher's result, or a local derived from it,
``kept = out != 0``) holds whatever the launch wrote: a candidate that writes zeros everywhere passes it. The
same holds for an argument the launch wrote in place and for a reference that calls the launcher again (a
determinism check ``assert_close(launch(x), out)``). Such an assert is not used; the harness falls back to the
starting kernel's output (the oracle) and one note per assert says why. A reference that reads only the inputs
is still kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.infer_py import infer, record

DROPOUT = '''import torch
import triton
import triton.language as tl


@triton.jit
def drop_kernel(x_ptr, out_ptr, N, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    keep = tl.rand(seed, offs) > 0.25
    tl.store(out_ptr + offs, tl.where(keep, x / 0.75, 0.0), mask=m)


def drop(x, seed):
    out = torch.empty_like(x)
    N = x.numel()
    drop_kernel[(triton.cdiv(N, 64),)](x, out, N, seed, BLOCK=64)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    for n in (100, 300):
        x = torch.randn(n) + 5.0
        out = drop(x, 7)
        kept = out != 0
        ref = torch.where(kept, x / 0.75, torch.zeros_like(x))
        torch.testing.assert_close(out, ref)
'''

INPLACE = '''import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


def relu(x, y):
    relu_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)


if __name__ == "__main__":
    torch.manual_seed(0)
    for n in (100, 300):
        x = torch.randn(n)
        y = torch.zeros(n)
        relu(x, y)
        torch.testing.assert_close(y, torch.where(y > 0, x, y))
'''


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def _notes(f: Path, kernel: str) -> tuple[object, list[str]]:
    r = infer(f, kernel)
    assert r.harness is not None, r
    return r.harness, [n for n in r.harness.notes if "not used as the reference" in n]


def test_a_reference_reading_the_output_through_a_local_falls_back_to_the_start(tmp_path: Path) -> None:
    f = tmp_path / "drop.py"
    f.write_text(DROPOUT)
    rec = record(f, "drop")
    assert rec["asserts"] and all(a["expression"] is None for a in rec["asserts"]), rec["asserts"]
    assert all("reads 'out', an output of the drop() call" in a["why"] for a in rec["asserts"]), rec["asserts"]
    h, notes = _notes(f, "drop_kernel")
    assert h.reference is None and h.uses_oracle, h.reference
    assert len(notes) == 1 and "starting kernel's output is the reference" in notes[0], notes


def test_a_determinism_check_that_calls_the_launcher_again_is_not_a_reference(tmp_path: Path) -> None:
    f = tmp_path / "drop.py"
    f.write_text(DROPOUT.replace("        torch.testing.assert_close(out, ref)\n",
                                 "        torch.testing.assert_close(drop(x, 7), out)\n"))
    rec = record(f, "drop")
    # the relaunch inside the reference's evaluation is not a recorded call
    assert len(rec["calls"]) == 4, len(rec["calls"])
    whys = [a["why"] for a in rec["asserts"]]
    assert whys and all(w and "drop()'s own result" in w for w in whys), whys
    h, notes = _notes(f, "drop_kernel")
    assert h.reference is None and h.uses_oracle and len(notes) == 1, notes


def test_an_argument_written_in_place_is_an_output_of_the_launch(tmp_path: Path) -> None:
    f = tmp_path / "relu.py"
    f.write_text(INPLACE)
    rec = record(f, "relu")
    whys = [a["why"] for a in rec["asserts"]]
    assert whys and all(w and "reads 'y', an output of the relu() call" in w for w in whys), whys


def test_a_reference_over_the_inputs_only_is_kept(tmp_path: Path) -> None:
    f = tmp_path / "relu.py"
    f.write_text(INPLACE.replace("torch.where(y > 0, x, y)", "torch.relu(x)"))
    h, notes = _notes(f, "relu_kernel")
    assert h.reference == "torch.relu(x)" and not h.uses_oracle, (h.reference, notes)
