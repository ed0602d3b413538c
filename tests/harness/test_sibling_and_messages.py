"""Regressions: sibling modules import from every candidate folder, no error message is empty,
and the template reads annotations, defaults and stride parameters."""

from __future__ import annotations

import dataclasses
import shutil
import textwrap
import tomllib
from pathlib import Path

import pytest

from htam_core.harness.base import Harness
from htam_core.harness.find import find_harness
from htam_core.harness.template import write_template
from htam_core.source import load
from htam_core.types.errors import exception_text
from htam_core.verify.run import verify_in_worker

KERNEL = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl
    from helpers import BLOCK


    @triton.jit
    def scale_kernel(X, Y, N, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        m = offs < N
        tl.store(Y + offs, 2.0 * tl.load(X + offs, mask=m), mask=m)


    def scale(x):
        assert x.dim() == 1
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK_SIZE=BLOCK)
        return y
''')


def _project(tmp_path: Path, shape: str = '["N"]') -> Path:
    (tmp_path / "k.py").write_text(KERNEL)
    (tmp_path / "helpers.py").write_text("BLOCK = 256\n")
    (tmp_path / "refs.py").write_text("def scale_ref(x):\n    return 2 * x\n")
    (tmp_path / "htam.toml").write_text(textwrap.dedent(f'''
        [kernel.scale_kernel]
        version = 1
        launcher = "scale"
        inputs = [{{ name = "x", shape = {shape}, dtype = "float32", init = "randn" }}]
        sizes = [{{ N = 4096 }}]
        reference = "refs.py:scale_ref"
    '''))
    return tmp_path / "k.py"


def test_candidate_folder_imports_siblings_and_function_reference(tmp_path: Path) -> None:
    """Regression: `htam optimize` failed with FileNotFoundError .../candidates/00-start/refs.py for
    reference = "refs.py:rms_ref", and a kernel importing a helper module next to it failed the same way."""
    path = _project(tmp_path)
    h = find_harness(path, "scale_kernel")
    cand = tmp_path / "out" / "candidates" / "00-start" / "k.py"  # what the optimize loop writes
    cand.parent.mkdir(parents=True)
    cand.write_text(path.read_text())
    moved = dataclasses.replace(h, path=str(cand))
    assert moved.origin_dir() == tmp_path
    res = verify_in_worker(moved, timeout_s=300)
    assert res.correct, res.messages


def test_optimize_with_a_sibling_reference_tries_candidates(tmp_path: Path) -> None:
    from htam_core.optimize.loop import run_optimize
    from htam_core.optimize.task import OptimizeTask

    path = _project(tmp_path)
    res = run_optimize(OptimizeTask(path=str(path), kernel="scale_kernel", budget=1, static=True,
                                    out_dir=str(tmp_path / "out"), memory_path=str(tmp_path / "m.sqlite")))
    text = (tmp_path / "out" / "report.md").read_text()
    assert "FileNotFoundError" not in text and "ModuleNotFoundError" not in text
    assert "the starting kernel failed" not in text, text  # its static profile imported helpers.py too
    assert res.steps and all("FileNotFoundError" not in " ".join(s.messages) for s in res.steps)


def test_a_bare_assert_of_the_launcher_gets_a_message(tmp_path: Path) -> None:
    """Regression: `optimize` on a template failed with `AssertionError: ` and no message (the launcher's own
    `assert x.dim() == 1` rejected the template's guessed shapes)."""
    path = _project(tmp_path, shape='["N", 2]')
    res = verify_in_worker(find_harness(path, "scale_kernel"), timeout_s=300)
    assert res.status == "error"
    text = " ".join(res.messages)
    assert "AssertionError at k.py:" in text and "assert x.dim() == 1" in text, text
    assert "AssertionError: " not in text.replace("AssertionError: assert", "")


def test_exception_text_is_never_empty(tmp_path: Path) -> None:
    import importlib.util

    (tmp_path / "bad.py").write_text("def f(x):\n    assert x == 2\n")  # a bare assert: no message
    spec = importlib.util.spec_from_file_location("bad_mod", tmp_path / "bad.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    try:
        mod.f(1)
    except AssertionError as e:
        assert str(e) == ""
        text = exception_text(e)
    assert text.startswith("AssertionError at bad.py:2: assert x == 2"), text
    assert exception_text(ValueError()) == "ValueError (raised without a message)"
    assert exception_text(KeyError("x")) == "KeyError: 'x'"


def test_missing_sibling_reference_names_the_folder(tmp_path: Path) -> None:
    path = _project(tmp_path)
    (tmp_path / "refs.py").unlink()
    h = find_harness(path, "scale_kernel")
    res = verify_in_worker(dataclasses.replace(h, path=str(path)), timeout_s=300)
    assert res.status == "error"
    assert any("refs.py" in m and str(tmp_path) in m for m in res.messages), res.messages


RMS = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def rms_kernel(X, W, Y, stride, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(X + row * stride + cols, mask=cols < N, other=0.0)
        r = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        tl.store(Y + row * stride + cols, x * r * tl.load(W + cols, mask=cols < N), mask=cols < N)


    def rms_norm(x, weight, eps: float = 1e-6):
        y = torch.empty_like(x)
        rms_kernel[(x.shape[0],)](x, weight, y, x.stride(0), x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
''')


def test_template_reads_annotations_defaults_and_strides(tmp_path: Path) -> None:
    """Regression: for rms_norm(x, weight, eps: float = 1e-6) the template made eps a 1-D tensor ["N"]."""
    p = tmp_path / "rms.py"
    p.write_text(RMS)
    model = load(str(p))
    text = write_template(model, model.kernel("rms_kernel"))
    table = tomllib.loads(text.replace('reference = ""', 'reference = "x"'))["kernel"]["rms_kernel"]
    inputs = {i["name"]: i for i in table["inputs"]}
    assert inputs["eps"] == {"name": "eps", "dtype": "float32", "value": 1e-6}
    assert inputs["x"]["shape"] == ["M", "N"]  # the kernel takes a stride: row-major matrices


def test_harness_json_round_trip_keeps_origin_and_oracle() -> None:
    h = Harness(kind="inferred", path="/a/k.py", kernel="k", oracle_path="/a/k.py", notes=["n"])
    back = Harness.from_json(dataclasses.replace(h, path="/b/c/k.py").to_json())
    assert back.origin_path == "/a/k.py" and back.uses_oracle and back.notes == ["n"]
    assert back.origin_dir() == Path("/a")


@pytest.mark.parametrize("extra,ok", [("oracle = true", True), ('oracle = "yes"', False)])
def test_spec_oracle_key(tmp_path: Path, extra: str, ok: bool) -> None:
    from htam_core.harness.base import HarnessError
    from htam_core.harness.spec import parse_kernel_table

    table = tomllib.loads(textwrap.dedent(f'''
        version = 1
        launcher = "scale"
        inputs = [{{ name = "x", shape = ["N"] }}]
        {extra}
    '''))
    if ok:
        h = parse_kernel_table(table, kernel="k", spec_path=tmp_path / "htam.toml", file_path=tmp_path / "k.py")
        assert h.uses_oracle and h.checked_against == "the starting kernel"
    else:
        with pytest.raises(HarnessError, match="oracle must be true or false"):
            parse_kernel_table(table, kernel="k", spec_path=tmp_path / "htam.toml", file_path=tmp_path / "k.py")


def test_oracle_table_checks_a_candidate_elsewhere_against_the_tables_file(tmp_path: Path) -> None:
    """`oracle = true` in htam.toml: `htam verify CAND --harness htam.toml` compares CAND with the table's own
    file (the starting kernel), never with CAND itself."""
    from htam_core.verify.check import resolve_harness

    path = _project(tmp_path)
    spec = tmp_path / "htam.toml"
    spec.write_text(spec.read_text().replace('reference = "refs.py:scale_ref"', "oracle = true"))
    cand = tmp_path / "elsewhere" / "k.py"
    cand.parent.mkdir()
    cand.write_text(path.read_text().replace("2.0 * tl.load", "2.5 * tl.load"))
    h = resolve_harness(cand, harness_path=spec)
    assert h.uses_oracle and Path(h.oracle_path) == path.resolve()
    res = verify_in_worker(h, timeout_s=300)
    assert res.status == "incorrect" and "mismatch" in res.refused_by, res.messages


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cuda_candidate_includes_the_originals_headers(tmp_path: Path) -> None:
    """Regression (seen on llm.c files on the GPU): a candidate folder holds only the kernel file, so
    ``#include "common.h"`` next to the original failed to build in every candidate. Every CUDA build takes
    ``-I`` from :func:`include_flags`: the candidate's folder and the original's."""
    from htam_core.harness.base import include_flags, mark_origin
    from htam_core.profile.static_cuda import compile_cuda
    from htam_core.types.errors import ProfileError

    orig = tmp_path / "far" / "from" / "the" / "src"  # beyond the include-folder search of the candidate's ancestors
    orig.mkdir(parents=True)
    (orig / "origin_only_scale.h").write_text("#define SCALE 2.0f\n")
    text = ('#include "origin_only_scale.h"\n'
            "__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] *= SCALE; }\n")
    (orig / "k.cu").write_text(text)
    cand_dir = tmp_path / "candidates" / "01-x"
    cand_dir.mkdir(parents=True)
    (cand_dir / "k.cu").write_text(text)
    with pytest.raises(ProfileError):  # no origin marker: the header is not found
        compile_cuda(text, source_name=str(cand_dir / "k.cu"))
    mark_origin(tmp_path / "candidates", orig / "k.cu")
    assert f"-I{orig.resolve()}" in include_flags(cand_dir / "k.cu")
    res = compile_cuda(text, source_name=str(cand_dir / "k.cu"))
    assert res.entries and f"-I{orig.resolve()}" in res.command


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cubin_fallback_of_a_candidate_includes_the_originals_headers(tmp_path: Path, monkeypatch) -> None:
    """The nvcc ``-cubin`` fallback (for files NVRTC rejects) takes the same ``include_flags`` as every other
    CUDA build, so a candidate of a file with a local ``#include`` compiles there too."""
    from htam_core.harness.base import mark_origin
    from htam_core.harness.runner import cubin_for

    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    orig = tmp_path / "far" / "from" / "the" / "src"  # beyond the include-folder search of the candidate's ancestors
    orig.mkdir(parents=True)
    (orig / "origin_only_scale.h").write_text("#define SCALE 2.0f\n")
    text = ('#include "origin_only_scale.h"\n'
            "__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] *= SCALE; }\n")
    cand = tmp_path / "candidates" / "01-x" / "k.cu"
    cand.parent.mkdir(parents=True)
    cand.write_text(text)
    mark_origin(tmp_path / "candidates", orig / "k.cu")
    assert cubin_for(str(cand), "sm_90")[:4] == b"\x7fELF"
