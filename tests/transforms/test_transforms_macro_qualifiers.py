"""Transforms on kernels whose qualifiers are spelled through a macro (``#define RESTRICT __restrict__``): the
facts see the pointee type (``float``, not ``float RESTRICT``) and the qualifier the macro stands for, so no
transform adds a second ``__restrict__`` or writes ``sizeof(float __restrict__)``; candidates compile."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.source.analysis import analyze
from htam_core.transforms import registry

FILE = Path(__file__).resolve().parents[1] / "fixtures" / "preproc" / "restrict_macro.cu"


def test_restrict_macro_counts_as_restrict_and_pointee_types_drop_it(tmp_path: Path) -> None:
    m = load(FILE)
    for k in m.kernels:
        facts = analyze(m, k)
        for p in k.params:
            if p.is_pointer:
                pf = facts.pointer(p.name)
                assert pf is not None and (pf.element_type, pf.value_type) == ("float", "float")
        r = registry.propose("cuda.restrict_const", m, k)
        assert not isinstance(r, list) and "already const __restrict__:" in r.reason
        cands = registry.propose("cuda.vectorize_float4", m, k)
        assert isinstance(cands, list), cands
        text = cands[0].new_text
        assert "RESTRICT" in text and "__restrict__ __restrict__" not in text and "float __restrict__)" not in text
        if shutil.which("nvcc"):
            out = tmp_path / f"{k.name}.cu"
            out.write_text(text)
            proc = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", str(out), "-o", str(tmp_path / "o.ptx")],
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", ["scale", "add"])
def test_kernels_of_the_macro_file_are_transformable(name: str) -> None:
    m = load(FILE)
    assert not m.kernel(name).incomplete
