"""Regression tests through the CLI: half-typed code between complete kernels, every
line-ending style, Triton kernels in classes and made by ``triton.jit(fn)``.

Before the fix: ``htam kernels``/``profile`` crashed with ``ValueError: Invalid byte range`` on a
``__global__ void half(float* y,`` between two kernels, a half-typed Triton ``def`` hid the kernel
after it, CR-only files reported every kernel as "lines 1-1", and kernels in a class or bound by
``triton.jit(fn)`` could not be profiled (or were not found).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.profile import static_cuda as sc
from tests.support.half_typed import CLASS_ATTRS, CUDA, FORMS, TRITON

ENDINGS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


def _write(tmp_path: Path, name: str, text: str, eol: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.replace("\n", eol).encode())
    return path


def _mixed(text: str) -> str:
    """Each line ending picked in turn from \\n, \\r and \\r\\n (a \\r never comes right before a \\n,
    which would make the two one \\r\\n)."""
    lines = text.split("\n")
    ends = ["\n", "\r", "\r\n"]
    return "".join(line + ends[i % 3] for i, line in enumerate(lines[:-1])) + lines[-1]


def _kernels(path: Path, capsys) -> list[tuple]:
    assert main(["kernels", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return [(k["name"], k["start_line"], k["end_line"], k["params"]) for k in out]


@pytest.mark.parametrize("eol", [*ENDINGS, "mixed"])
def test_half_typed_cuda_between_complete_kernels(tmp_path, capsys, eol) -> None:
    text = _mixed(CUDA) if eol == "mixed" else CUDA.replace("\n", ENDINGS[eol])
    path = tmp_path / "half.cu"
    path.write_bytes(text.encode())
    assert _kernels(path, capsys) == [("first", 1, 4, ["x", "n"]), ("half", 6, 6, ["y"]),
                                      ("second", 8, 11, ["z", "n"])]
    from htam_core.source import load

    assert [k.incomplete for k in load(path).kernels] == [False, True, False]


@pytest.mark.parametrize("eol", [*ENDINGS, "mixed"])
def test_half_typed_triton_def_hides_nothing(tmp_path, capsys, eol) -> None:
    text = _mixed(TRITON) if eol == "mixed" else TRITON.replace("\n", ENDINGS[eol])
    path = tmp_path / "half.py"
    path.write_bytes(text.encode())
    assert _kernels(path, capsys) == [("first", 5, 8, ["x_ptr", "n", "BLOCK"]), ("half", 11, 12, ["x_ptr"]),
                                      ("second", 15, 18, ["y_ptr", "n", "BLOCK"])]


def test_broken_corpus_file_keeps_the_kernel_after_the_broken_one(corpus, capsys) -> None:
    got = _kernels(corpus / "broken_partial_kernels.cu", capsys)
    assert [g[:3] for g in got] == [("scale_inplace", 9, 14), ("row_l2_normalize", 16, 29), ("axpby", 31, 36)]


def test_class_and_call_form_kernels_are_listed_with_qualified_names(tmp_path, capsys) -> None:
    path = _write(tmp_path, "forms.py", FORMS, "\n")
    assert main(["kernels", str(path), "--json"]) == 0
    out = {k["name"]: k for k in json.loads(capsys.readouterr().out)}
    assert sorted(out) == ["_add_kernel", "scale", "shift"]
    assert out["scale"]["qualified_name"] == "Ops.scale" and (out["scale"]["start_line"], out["scale"]["end_line"]) \
        == (6, 10)
    assert out["shift"]["qualified_name"] == "Ops.shift"
    assert out["_add_kernel"]["qualified_name"] == "add_kernel"
    assert (out["_add_kernel"]["start_line"], out["_add_kernel"]["end_line"]) == (18, 20)
    assert [s["line"] for s in out["_add_kernel"]["launch_sites"]] == [28]
    assert [s["line"] for s in out["scale"]["launch_sites"]] == [29]


def _static(path: Path, kernel: str, capsys) -> dict:
    assert main(["profile", str(path), "--kernel", kernel, "--static", "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("kernel", ["Ops.scale", "scale", "Ops.shift", "add_kernel", "_add_kernel"])
def test_class_and_call_form_kernels_profile_statically(tmp_path, capsys, kernel) -> None:
    pytest.importorskip("triton")
    path = _write(tmp_path, "forms.py", FORMS, "\n")
    p = _static(path, kernel, capsys)
    assert p["mode"] == "static" and p["registers"] and p["registers"] > 0


def test_class_attribute_bindings_profile_statically(tmp_path, capsys) -> None:
    pytest.importorskip("triton")
    path = _write(tmp_path, "attrs.py", CLASS_ATTRS, "\n")
    triple = _static(path, "Ops.triple", capsys)
    tuned = _static(path, "Ops.tuned", capsys)
    assert triple["registers"] > 0 and tuned["registers"] > 0
    # the autotuned binding is compiled with its first config (num_warps=2: 64 threads), the plain one with
    # Triton's default of 4 warps
    assert (triple["block_size"], tuned["block_size"]) == (128, 64)


@pytest.mark.parametrize("eol", list(ENDINGS))
def test_complete_triton_kernel_of_a_half_typed_file_profiles(tmp_path, capsys, eol) -> None:
    pytest.importorskip("triton")
    path = _write(tmp_path, "half.py", TRITON, ENDINGS[eol])
    p = _static(path, "second", capsys)
    assert p["mode"] == "static" and p["registers"] > 0
    assert any("half-typed kernel(s) half (lines 11-12)" in w for w in p["warnings"])


@pytest.mark.skipif(sc.find_nvcc() is None, reason="needs nvcc")
@pytest.mark.parametrize("eol", list(ENDINGS))
def test_complete_cuda_kernel_of_a_half_typed_file_profiles(tmp_path, capsys, eol) -> None:
    path = _write(tmp_path, "half.cu", CUDA, ENDINGS[eol])
    for kernel in ("first", "second"):
        p = _static(path, kernel, capsys)
        assert p["kernel"] == kernel and p["mode"] == "static" and p["registers"] > 0
        assert any("half-typed kernel(s) half (lines 6-6)" in w for w in p["warnings"])


def test_kernels_json_marks_the_half_typed_kernel(capsys):
    """Regression (new-user trial): the text listing said "(incomplete)" but ``--json`` dropped it."""
    import json

    from htam_core.cli.main import main

    path = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "broken_partial_kernels.cu"
    assert main(["kernels", str(path), "--json"]) == 0
    by_name = {k["name"]: k for k in json.loads(capsys.readouterr().out)}
    assert by_name["row_l2_normalize"].get("incomplete") is True
    assert "incomplete" not in by_name["scale_inplace"] and "incomplete" not in by_name["axpby"]
