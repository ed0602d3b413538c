"""In-place kernels: a tensor the program compares after the call is an output, even when it was an input.

Real Triton files run under ``TRITON_INTERPRET=1`` on the CPU: ``axpy_`` updates ``y`` and returns it, ``add``
writes into an ``out=`` argument and returns it, and an Adam step updates the parameters and two state tensors
(returning nothing), once with asserts after the call and once with none (the starting kernel is the oracle).
Each gets an inferred harness that lists the updated tensors as outputs and verifies the starting kernel with
no ``htam.toml``; a candidate that breaks the update is still refused, and an input that is not an output is
still guarded against mutation.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.find import find_harness
from htam_core.harness.infer_py import infer
from htam_core.verify.run import verify_in_worker

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "inplace"
#: file -> (kernel, the outputs the inferred harness must list, their inits)
CASES = {
    "axpy_inplace.py": ("axpy_kernel", ["y"], ["randn"]),
    "add_out.py": ("add_kernel", ["out"], ["empty"]),
    "adam_step.py": ("adam_kernel", ["p", "m", "v"], ["randn", "randn", "rand"]),
    "adam_oracle.py": ("adam_kernel", ["p", "m", "v"], ["randn", "randn", "rand"]),
}


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("HTAM_INFER", "1")


@pytest.mark.parametrize("name", sorted(CASES))
def test_updated_tensors_are_outputs_and_the_start_verifies(name: str) -> None:
    kernel, outputs, inits = CASES[name]
    inf = infer(FIX / name, kernel)
    h = inf.harness
    assert h is not None, inf.reason
    assert h.outputs == outputs, h.outputs
    init = {i.name: i.init for i in h.inputs}
    # read-modify-write buffers are never poisoned (the kernel reads them); a write-only out= buffer is
    assert [init[o] for o in outputs] == inits
    res = verify_in_worker(h, timeout_s=300)
    assert res.correct, res.messages
    assert "input-mutated" not in res.refused_by


@pytest.mark.parametrize("name", ["axpy_inplace.py", "adam_oracle.py"])
def test_a_candidate_that_breaks_the_update_is_refused(name: str, tmp_path: Path) -> None:
    kernel, _, _ = CASES[name]
    h = find_harness(FIX / name, kernel)
    text = (FIX / name).read_text()
    old = {"axpy_inplace.py": "alpha * x + y, mask", "adam_oracle.py": "tl.store(v_ptr + offs, v, mask=mask)"}[name]
    new = {"axpy_inplace.py": "alpha * x, mask", "adam_oracle.py": "tl.store(v_ptr + offs, v * 2.0, mask=mask)"}[name]
    assert old in text
    cand = tmp_path / "candidates" / "01" / name
    cand.parent.mkdir(parents=True)
    cand.write_text(text.replace(old, new))
    res = verify_in_worker(dataclasses.replace(h, path=str(cand)), timeout_s=300)
    assert not res.correct and "mismatch" in res.refused_by, res.messages


_LAUNCHERS = '''
def scale_(x, y):
    y.mul_(2.0)
    return y


def scale_flat_(x, y):
    y.mul_(2.0)
    return y.view(-1, 1)   # a view of all of y


def sneaky(x, y):
    x.zero_()          # x is an input only: the guard still refuses this
    return y * 2.0
'''


def _spec(tmp_path: Path, launcher: str) -> Harness:
    (tmp_path / "launchers.py").write_text(_LAUNCHERS)
    return Harness(kind="spec", path=str(tmp_path / "launchers.py"), kernel=launcher, language="python",
                   launcher=launcher, inputs=[InputSpec("x", shape=["N"]), InputSpec("y", shape=["N"])],
                   sizes=[{"N": 64}], reference="y * 2.0")


@pytest.mark.parametrize(("launcher", "reference"), [("scale_", "y * 2.0"), ("scale_flat_", "(y * 2.0).view(-1, 1)")])
def test_spec_launcher_returning_its_updated_argument_is_not_refused(tmp_path: Path, launcher: str,
                                                                     reference: str) -> None:
    h = dataclasses.replace(_spec(tmp_path, launcher), reference=reference)
    res = verify_in_worker(h, timeout_s=300)
    assert res.correct, res.messages


def test_input_only_tensor_is_still_guarded_and_the_start_is_named(tmp_path: Path) -> None:
    res = verify_in_worker(_spec(tmp_path, "sneaky"), timeout_s=300, subject="the starting kernel")
    assert "input-mutated" in res.refused_by, res.messages
    text = " ".join(res.messages)
    assert "the starting kernel modified its input(s) x in place" in text and "candidate" not in text


@pytest.mark.usefixtures("private_htam_env")
def test_verify_names_the_starting_kernel_when_it_changes_an_input_only_tensor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from htam_core.cli.main import main

    f = tmp_path / "axpy_clobbers_x.py"
    f.write_text((FIX / "axpy_clobbers_x.py").read_text())
    assert main(["verify", str(f)]) == 1
    out = capsys.readouterr().out
    assert "refused by: input-mutated" in out, out
    assert "the starting kernel modified its input(s) x in place" in out and "the candidate" not in out, out
