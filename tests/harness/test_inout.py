"""In-out outputs of spec harnesses: a buffer the kernel reads and writes (``y = alpha*x + beta*y``).

An output with ``init = "empty"`` is write-only (poisoned before every checked call); one with any other
init is in-out: restored to its initial value before every checked call, and seen with that initial value
by an expression reference. The unit tests run the runner in-process on a plain-torch launcher (no Triton
launch); the others verify the Triton fixture in a worker under ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from htam_core.harness import HarnessError, find_harness
from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.runner import load_module, prepare_spec, split_outputs
from htam_core.harness.spec import parse_kernel_table
from htam_core.verify.correctness import check_correctness
from htam_core.verify.run import verify_in_worker
from tests.support.harness_copy import copy_with_harness

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "inout"

_LAUNCHERS = '''
calls = []


def axpby(x, y, alpha, beta):
    calls.append(y.clone())          # what the launcher found in y when it was called
    y.mul_(beta).add_(alpha * x)     # reads y, then writes it


def half(x, out):
    out[: out.numel() // 2] = x[: out.numel() // 2]
'''


def _spec(tmp_path: Path, launcher: str, inputs: list[InputSpec], outputs: list[str], reference: str) -> Harness:
    (tmp_path / "launchers.py").write_text(_LAUNCHERS)
    return Harness(kind="spec", path=str(tmp_path / "launchers.py"), kernel=launcher, language="python",
                   launcher=launcher, inputs=inputs, sizes=[{"N": 64}], outputs=outputs, reference=reference)


def _axpby(tmp_path: Path, init: str = "randn", reference: str = "alpha * x + beta * y") -> Harness:
    return _spec(tmp_path, "axpby", [InputSpec("x", shape=["N"], init="randn"), InputSpec("y", shape=["N"], init=init),
                                     InputSpec("alpha", shape=None, init=None, value=2.0),
                                     InputSpec("beta", shape=None, init=None, value=0.5)], ["y"], reference)


def test_split_outputs_by_init(tmp_path: Path) -> None:
    h = _spec(tmp_path, "axpby", [InputSpec("a", shape=[4], init="randn"), InputSpec("b", shape=[4], init="empty"),
                                  InputSpec("c", shape=[4], init="zeros"), InputSpec("d", shape=[4], init="ones")],
              ["b", "c", "d"], "a")
    assert split_outputs(h) == ({1}, {2, 3})


def test_inout_buffer_is_restored_before_every_candidate_call(tmp_path: Path) -> None:
    h = _axpby(tmp_path)
    p = prepare_spec(h, "cpu")
    mod = load_module(h.path)
    xs = p.trial.make_inputs(7, 0, 1.0)
    x, y0 = xs[0].clone(), xs[1].clone()
    assert torch.isfinite(y0).all() and y0.abs().sum() > 0  # randn: a defined value, not the poison
    want = 2.0 * x + 0.5 * y0
    mod.calls.clear()
    first = p.trial.run_candidate(xs)[0].clone()
    second = p.trial.run_candidate(xs)[0].clone()  # without the restore it would be 2x + 0.5(2x + 0.5 y0)
    assert len(mod.calls) == 2 and all(torch.equal(c, y0) for c in mod.calls)
    assert torch.allclose(first, want) and torch.equal(first, second)
    # the expression reference sees the initial y, even on the list the candidate wrote into
    assert torch.allclose(p.trial.run_reference(xs)[0], want)
    assert torch.allclose(p.trial.run_reference([t.clone() if hasattr(t, "clone") else t for t in xs])[0], want)
    # a new input set (seed) brings its own initial value
    ys = p.trial.make_inputs(8, 0, 1.0)
    assert not torch.equal(ys[1], y0)
    mod.calls.clear()
    p.trial.run_candidate(ys)
    assert torch.equal(mod.calls[0], p.trial.make_inputs(8, 0, 1.0)[1])


def test_inout_harness_passes_the_check_and_timing_runs_repeatedly(tmp_path: Path) -> None:
    p = prepare_spec(_axpby(tmp_path), "cpu")
    res = check_correctness(p.trial, verified_on="interpreter")
    assert res.correct and res.status == "correct" and res.trials == 5, res
    xs = p.trial.make_inputs(42, 0, 1.0)
    call = p.bind(xs)
    for _ in range(3):  # timing: repeated calls on the in-out buffer, no restore, no error
        call()


def test_wrong_reference_use_of_inout_buffer_is_caught(tmp_path: Path) -> None:
    """The check can fail: a reference that ignores the initial y does not match the kernel."""
    res = check_correctness(prepare_spec(_axpby(tmp_path, reference="alpha * x"), "cpu").trial,
                            verified_on="interpreter")
    assert not res.correct and "mismatch" in res.refused_by


def test_empty_output_that_is_read_gives_nan_and_the_hint(tmp_path: Path) -> None:
    """The sgemm_naive bug: the kernel reads its output, declared init = "empty"; the reference does not read
    it. The kernel computes with NaN and fails with the hint."""
    res = check_correctness(prepare_spec(_axpby(tmp_path, init="empty", reference="alpha * x"), "cpu").trial,
                            verified_on="interpreter")
    assert not res.correct and "unwritten-output" in res.refused_by
    assert any('give such a buffer an init other than "empty"' in m for m in res.messages), res.messages


def test_reference_reading_a_write_only_output_is_a_harness_error(tmp_path: Path) -> None:
    """A reference over an init = "empty" output would be NaN, and NaN matches NaN: refused up front."""
    with pytest.raises(HarnessError, match='init = "zeros"'):
        prepare_spec(_axpby(tmp_path, init="empty"), "cpu")
    table = {"version": 1, "launcher": "axpby", "outputs": ["y"], "reference": "alpha * x + beta * y",
             "inputs": [{"name": "x", "shape": [4]}, {"name": "y", "shape": [4], "init": "empty"},
                        {"name": "alpha", "dtype": "float32", "value": 2.0},
                        {"name": "beta", "dtype": "float32", "value": 0.5}]}
    with pytest.raises(HarnessError, match="the reference reads y"):
        parse_kernel_table(table, kernel="k", spec_path=tmp_path / "htam.toml", file_path=tmp_path / "k.py")
    table["inputs"][1]["init"] = "zeros"
    assert parse_kernel_table(table, kernel="k", spec_path=tmp_path / "htam.toml",
                              file_path=tmp_path / "k.py").outputs == ["y"]


def test_write_only_output_is_still_poisoned_before_every_call(tmp_path: Path) -> None:
    h = _spec(tmp_path, "half", [InputSpec("x", shape=["N"], init="randn"), InputSpec("out", shape=["N"], init="empty")],
              ["out"], "x")
    p = prepare_spec(h, "cpu")
    xs = p.trial.make_inputs(1, 0, 1.0)
    xs[1].copy_(xs[0])  # the right answer already sits in the buffer: poisoning must wipe it
    out = p.trial.run_candidate(xs)[0]
    assert torch.isnan(out[32:]).all() and torch.equal(out[:32], xs[0][:32])


def test_scalar_output_is_refused(tmp_path: Path) -> None:
    table = {"version": 1, "launcher": "f", "inputs": [{"name": "x", "shape": [4]},
                                                      {"name": "a", "dtype": "float32", "value": 1.0}],
             "outputs": ["a"], "reference": "x"}
    with pytest.raises(HarnessError, match="scalars"):
        parse_kernel_table(table, kernel="k", spec_path=tmp_path / "htam.toml", file_path=tmp_path / "k.py")


# -- the Triton fixture, verified in a worker under the interpreter ------------------------------------------
try:
    import triton  # noqa: F401
    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")


def _copy(tmp_path: Path, replace: list[tuple[str, str]] = ()) -> Path:
    """The fixture copied into ``tmp_path`` with ``(old, new)`` replacements applied to its htam.toml."""
    return copy_with_harness(FIX, "axpby.py", tmp_path, replace)


def _verify(path: Path):
    return verify_in_worker(find_harness(path, "axpby_kernel"), timeout_s=300, interpret=True)


@needs_triton
def test_triton_inout_kernel_is_correct_with_randn_init() -> None:
    r = _verify(FIX / "axpby.py")
    assert r.correct and r.status == "correct" and r.verified_on == "interpreter" and r.trials == 6, r


#: The sgemm_naive situation on the fixture: y declared write-only, beta = 0, a reference without y.
EMPTY_Y = [('{ name = "y", shape = ["N"], dtype = "float32", init = "randn" }',
            '{ name = "y", shape = ["N"], dtype = "float32", init = "empty" }'),
           ('{ name = "beta", dtype = "float32", value = 0.5 }', '{ name = "beta", dtype = "float32", value = 0.0 }'),
           ('reference = "alpha * x + beta * y"', 'reference = "alpha * x"')]


@needs_triton
def test_triton_inout_kernel_with_empty_init_reads_the_poison(tmp_path: Path) -> None:
    r = _verify(_copy(tmp_path, EMPTY_Y))
    assert not r.correct and r.status == "incorrect" and "unwritten-output" in r.refused_by
    assert "NaN is the poison value" in r.messages[0] and 'init other than "empty"' in r.messages[0]
    # the fix: the same harness with y in-out (zeros) is correct
    fixed = _copy(tmp_path, [*EMPTY_Y, ('init = "empty"', 'init = "zeros"')])
    assert _verify(fixed).correct


@needs_triton
def test_function_reference_gets_the_non_output_inputs(tmp_path: Path) -> None:
    """``module:function`` references keep their signature: (x, alpha, beta), y left out. With y zeros,
    alpha * x is the right answer."""
    path = _copy(tmp_path, [('reference = "alpha * x + beta * y"', 'reference = "axpby.py:axpby_reference"'),
                            ('{ name = "y", shape = ["N"], dtype = "float32", init = "randn" }',
                             '{ name = "y", shape = ["N"], dtype = "float32", init = "zeros" }')])
    r = _verify(path)
    assert r.correct, r
