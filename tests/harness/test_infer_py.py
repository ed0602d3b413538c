"""Harness inference from the file itself: recording, inputs and sizes, references, the oracle rule.

The corpus (``tests/fixtures/zeroconf/``) holds ordinary Triton files written the way people write them: a
launcher plus a ``__main__`` block with ``assert_close``, a pytest test beside the file, ``device="cuda"``
hardcoded, a ``*_ref`` function, argparse in ``main()``, a ``main`` that only prints, and one that launches
the kernel directly from ``__main__`` (no launcher function: inference must say so).
"""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.harness.base import MOVED_NOTE, HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.infer_py import infer
from htam_core.harness.spec import parse_kernel_table
from htam_core.harness.toml_render import render_toml, save_to_spec
from htam_core.verify.run import verify_in_worker

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf"
#: file -> kernel of every corpus file
KERNELS = {
    "rms_norm.py": "_rms_norm_fwd", "softmax.py": "softmax_kernel", "add_relu.py": "add_relu_kernel",
    "matmul.py": "matmul_kernel", "layer_norm.py": "_layer_norm_fwd", "gelu.py": "gelu_kernel",
    "scale_cli.py": "axpb_kernel", "print_only.py": "square_kernel", "direct_launch.py": "neg_kernel",
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("htam-cache")


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    # one recording per file for the whole module: profile, verify and optimize share it, as in real use
    monkeypatch.setenv("HTAM_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("HTAM_INFER", "1")


def _inferred(name: str):
    return infer(CORPUS / name, KERNELS[name])


def test_rms_norm_main_block_assert_close_becomes_the_reference() -> None:
    inf = _inferred("rms_norm.py")
    h = inf.harness
    assert h is not None, inf.reason
    assert h.kind == "inferred" and h.launcher == "rms_norm"
    # eps has a default and was not passed: not an input; x is 2-D, weight 1-D over the same N
    assert [(i.name, i.shape) for i in h.inputs] == [("x", ["M", "N"]), ("weight", ["N"])]
    assert h.reference is not None and "rsqrt" in h.reference and "weight" in h.reference
    assert not h.uses_oracle and h.checked_against == "the reference"
    assert "inferred from __main__ of rms_norm.py, 2 calls recorded; reference: torch expression at line 35" \
        in h.description()
    # smallest recorded call is the interpreter set, the largest scaled up for the GPU, reported as scaled
    assert h.interpret_sizes[0] == {"M": 64, "N": 512}
    assert h.sizes[1] == {"M": 256, "N": 1024}
    assert h.sizes[0]["M"] / h.sizes[0]["N"] == pytest.approx(256 / 1024, rel=0.05)
    assert any("scaled up" in n for n in h.notes)
    assert any('device="cuda"' in n for n in h.notes)  # the file hardcodes cuda: mapped to the CPU
    assert (h.atol, h.rtol) == (1e-4, 1e-4)


def test_pytest_file_beside_the_kernel_is_run_when_there_is_no_main() -> None:
    h = _inferred("add_relu.py").harness
    assert h is not None
    assert h.source.startswith("inferred from pytest test_add_relu.py of add_relu.py, 2 calls recorded")
    assert h.reference == "torch.relu(x + y)"


def test_named_reference_function_and_oracle_and_multi_output() -> None:
    gelu = _inferred("gelu.py").harness
    assert gelu is not None and gelu.reference == "gelu.py:gelu_ref"
    lnorm = _inferred("layer_norm.py").harness  # returns (y, mean, rstd); the assert checks y only
    assert lnorm is not None and lnorm.uses_oracle and lnorm.reference is None
    assert lnorm.checked_against == "the starting kernel"
    assert "oracle: the starting kernel" in lnorm.description()
    assert any("checks 1 of 3 outputs" in n for n in lnorm.notes)


def test_argparse_values_and_scalars() -> None:
    h = _inferred("scale_cli.py").harness
    assert h is not None
    scalars = {i.name: i.value for i in h.inputs if i.is_scalar}
    assert scalars == {"a": 2.0, "b": -1.0}
    assert h.reference == "a * x + b"  # args.a / args.b map back to the launcher's parameters


def test_direct_launch_without_a_launcher_names_what_is_missing() -> None:
    inf = _inferred("direct_launch.py")
    assert inf.harness is None
    assert "no function of direct_launch.py launches neg_kernel" in inf.reason
    with pytest.raises(HarnessError) as ei:
        find_harness(CORPUS / "direct_launch.py", "neg_kernel")
    assert ei.value.missing and "no function of direct_launch.py launches neg_kernel" in ei.value.message


def test_render_toml_round_trips_through_the_spec(tmp_path: Path) -> None:
    for name in ("rms_norm.py", "layer_norm.py"):
        h = _inferred(name).harness
        text = render_toml(h)
        table = tomllib.loads(text)["kernel"][h.kernel]
        back = parse_kernel_table(table, kernel=h.kernel, spec_path=tmp_path / "htam.toml", file_path=CORPUS / name)
        assert [i.name for i in back.inputs] == [i.name for i in h.inputs]
        assert back.sizes == h.sizes and back.reference == h.reference
        assert back.uses_oracle == h.uses_oracle


def test_save_to_spec_writes_once_and_refuses_a_second_table(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "print_only.py", tmp_path / "print_only.py")
    h = infer(tmp_path / "print_only.py", "square_kernel").harness
    spec = save_to_spec(h)
    assert spec == tmp_path / "htam.toml"
    found = find_harness(tmp_path / "print_only.py", "square_kernel")
    assert found.kind == "spec" and found.uses_oracle  # the saved table wins over inference now
    before = spec.read_text()
    with pytest.raises(HarnessError, match="already has a \\[kernel.square_kernel\\] table"):
        save_to_spec(h)
    assert spec.read_text() == before


def test_save_comments_every_line_of_a_multi_line_note(tmp_path: Path) -> None:
    """Regression (new-user trial): a ``__main__`` whose assert failed with a multi-line message gave a note
    written as ``# note: ...`` with bare continuation lines, so ``htam harness infer --save`` said the table
    "did not render to a valid htam.toml table". Every line of every note (and of the description) is a
    comment now, and the saved table parses."""
    src = tmp_path / "print_only.py"
    src.write_text((CORPUS / "print_only.py").read_text()
                   + '    assert False, "the output is wrong\\nexpected 1.0\\ngot 2.0"\n')
    h = infer(src, "square_kernel").harness
    assert any("\n" in n and "got 2.0" in n for n in h.notes), h.notes  # the real recording gives such a note
    spec = save_to_spec(h)
    text = spec.read_text()
    assert tomllib.loads(text)["kernel"]["square_kernel"]["launcher"] == "square"
    assert "#       got 2.0" in text.splitlines()
    h2 = dataclasses.replace(h, notes=["a\r\nb", "c\n\nd"], source="line 1\noracle: line 2")
    lines = render_toml(h2).splitlines()
    assert lines[:6] == ["# line 1", "# oracle: line 2", "# note: a", "#       b", "# note: c", "#"]
    assert tomllib.loads(render_toml(h2))["kernel"]["square_kernel"]["version"] == 1


#: corpus files whose __main__ makes CPU tensors (no device=): on a GPU their recorded inputs are moved there
CPU_TENSOR_FILES = {"gelu.py", "print_only.py"}


# -- planted wrong candidates: one per input source -------------------------------------------------------
WRONG = {
    # file: (source kind, text to replace, wrong text)
    "rms_norm.py": ("__main__ + assert_close expression", "x * rstd * w", "x * rstd * w * 1.01"),
    "add_relu.py": ("pytest test beside the file", "tl.maximum(x + y, 0.0)", "tl.maximum(x + y, 0.01)"),
    "gelu.py": ("reference function by name", "0.7071067811865476", "0.7"),
    "print_only.py": ("oracle: the starting kernel", "x * x", "x * x + 1e-3"),
}


def _plant(name: str, tmp_path: Path, *, gpu: bool) -> None:
    """Plant WRONG[name] in a candidate folder: refused (a mismatch), while the unchanged start passes, on the
    CPU (Triton interpreter) or, with ``gpu``, compiled and run on the GPU (``verified_on == "gpu"``)."""
    kind, old, new = WRONG[name]
    h = find_harness(CORPUS / name, KERNELS[name])
    assert h.kind == "inferred", kind
    cand = tmp_path / "candidates" / "01" / name  # a candidate folder holds only the kernel file
    cand.parent.mkdir(parents=True)
    text = (CORPUS / name).read_text()
    assert old in text
    cand.write_text(text.replace(old, new))
    opts = {"interpret": False} if gpu else {}
    bad = verify_in_worker(dataclasses.replace(h, path=str(cand)), timeout_s=300, **opts)
    assert bad.status == "incorrect" and "mismatch" in bad.refused_by, (kind, bad.messages)
    good = cand.with_name("same.py")
    good.write_text(text)
    ok = verify_in_worker(dataclasses.replace(h, path=str(good)), timeout_s=300, **opts)
    assert ok.correct, (kind, ok.messages)
    assert any(f"matched {h.checked_against}" in m for m in ok.messages)
    if gpu:
        assert bad.verified_on == "gpu" and ok.verified_on == "gpu", (bad.verified_on, ok.verified_on)
        # gelu.py and print_only.py make CPU tensors (written for the interpreter): recorded on the GPU
        # with their inputs moved there, and the origin says so
        assert (MOVED_NOTE in h.source) == (name in CPU_TENSOR_FILES), h.source


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_candidate_is_refused(name: str, tmp_path: Path) -> None:
    _plant(name, tmp_path, gpu=False)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_candidate_is_refused_on_gpu(name: str, tmp_path: Path) -> None:
    """The same planted candidates, compiled and checked on the GPU (the recording too runs there)."""
    _plant(name, tmp_path, gpu=True)


def test_verify_against_start_file(tmp_path: Path) -> None:
    from htam_core.verify.check import resolve_harness, verify_candidate

    cand = tmp_path / "softmax_new.py"
    cand.write_text((CORPUS / "softmax.py").read_text().replace("numerator / denominator",
                                                                "numerator / (denominator * 0.5)"))
    h = resolve_harness(cand, against=CORPUS / "softmax.py")
    assert h.uses_oracle and h.reference is None and "--against" in h.source
    v = verify_candidate(cand, h, timeout_s=300)
    assert v.status == "refused" and "mismatch" in v.refused_by
    assert "the starting kernel" in (v.harness or "")
