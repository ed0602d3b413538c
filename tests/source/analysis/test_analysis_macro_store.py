"""A store through a function-like macro that names its argument's storage (``AS_F4(out[i]) = v;`` with
``#define AS_F4(p) (reinterpret_cast<float4*>(&(p))[0])``) is a write of that pointer, and a load through it
a read: the read/write sets and the harness's outputs see it."""

from __future__ import annotations

from pathlib import Path

from htam_core.harness.infer_cuda import output_params
from htam_core.source import parse_text
from htam_core.source.analysis import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "preproc" / "macro_store.cu"


def _model():  # noqa: ANN202 - (model, kernel)
    model = parse_text(FIXTURE.read_text(encoding="utf-8"), "cuda", str(FIXTURE))
    return model, next(k for k in model.kernels if k.name == "square4_kernel")


def test_store_through_function_like_macro_is_a_write() -> None:
    facts = analyze(*_model())
    modes = {p.name: p.mode for p in facts.pointers}
    assert modes == {"in": "read", "out": "write"}
    store = next(a for a in facts.accesses if a.pointer == "out")
    assert store.kind == "write" and store.line == 11  # the raw text's line


def test_harness_sees_the_macro_store_as_the_output() -> None:
    written, _ = output_params(*_model())
    assert "out" in written and "in" not in written
