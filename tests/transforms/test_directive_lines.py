"""A preprocessor conditional inside a kernel body survives a rewrite that copies the body: each directive
keeps a line of its own, so the top-ranked float4 step stays makeable and its edit parses."""

from __future__ import annotations

import re
from pathlib import Path

from htam_core.source import parse_text
from htam_core.source.analysis.nodes import join_lines
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose
from htam_core.transforms.validate import syntax_errors

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "preproc" / "arch_if_in_body.cu"


def test_join_lines_keeps_directives_on_their_own_lines() -> None:
    code = "#if __CUDA_ARCH__ >= 800\n  y = f(x);\n#else\n  y = x;\n#endif\n"
    out = join_lines(code)
    assert [ln.strip() for ln in out.splitlines() if ln.strip().startswith("#")] == [
        "#if __CUDA_ARCH__ >= 800", "#else", "#endif"]
    assert join_lines("a = 1;\n  b = 2;") == "a = 1; b = 2;"


def test_float4_with_arch_conditional_in_body_is_makeable() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    model = parse_text(text, "cuda", "k.cu")
    kernel = next(k for k in model.kernels if k.name == "scale_kernel")
    res = propose("cuda.vectorize_float4", model, kernel)
    assert not isinstance(res, NotApplicable), res
    new = res[0].new_text
    assert not syntax_errors(new, "cuda")
    assert all(re.match(r"\s*#", ln) for ln in new.splitlines() if "#if" in ln or "#endif" in ln)
