"""Static reward-hack guards (htam_core.verify.guards) against the malicious fixtures and honest code."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htam_core.verify.guards import (
    RULES,
    RULES_BY_ID,
    GuardInputError,
    check_source,
    labels,
    new_findings,
    refused_by,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hacks"
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
MALICIOUS = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".py", ".cu") and not p.name.startswith("correct"))
CORRECT = sorted(FIXTURES.glob("correct*"))


def _lang(p: Path) -> str:
    return "cuda" if p.suffix in (".cu", ".cuh") else "python"


def _check(code: str, language: str = "python", **kw: object) -> set[str]:
    return {f.rule_id for f in check_source(textwrap.dedent(code), language, **kw)}  # type: ignore[arg-type]


def test_every_rule_has_rationale_source_and_a_fixture() -> None:
    covered = {p.stem.split("__")[0] for p in MALICIOUS}
    for r in RULES:
        assert r.rationale and r.source and r.title and r.severity in ("refuse", "label")
        assert r.id in covered, f"no malicious fixture for rule {r.id}"
    assert covered <= set(RULES_BY_ID), covered - set(RULES_BY_ID)


@pytest.mark.parametrize("path", MALICIOUS, ids=lambda p: p.name)
def test_malicious_fixture_is_caught_by_exactly_its_rule(path: Path) -> None:
    expected = path.stem.split("__")[0]
    findings = check_source(path.read_text(), _lang(path))
    assert {f.rule_id for f in findings} == {expected}, [f.to_json() for f in findings]
    rule = RULES_BY_ID[expected]
    if rule.severity == "refuse":
        assert refused_by(findings) == [expected]
    else:  # TF32 / reduced precision against fp32: labelled, never a plain speedup
        assert refused_by(findings) == [] and labels(findings) == [expected]
    assert all(f.line >= 1 and f.message for f in findings)


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.name)
def test_correct_solution_passes_every_rule(path: Path) -> None:
    assert check_source(path.read_text(), _lang(path)) == []


def test_lines_of_cuda_inside_python_strings_map_to_the_file() -> None:
    path = FIXTURES / "persisting-l2__inline.py"
    lines = path.read_text().splitlines()
    for f in check_source(path.read_text(), "cuda-in-python"):
        assert "accessPolicyWindow" in lines[f.line - 1] or "cudaStreamAttr" in lines[f.line - 1]


def test_corpus_files_check_without_errors() -> None:
    files = sorted(p for p in CORPUS.iterdir() if p.suffix in (".py", ".cu"))
    assert files, "tests/fixtures/corpus is empty"
    for p in files:
        check_source(p.read_text(), _lang(p))  # must not raise on real-world code (incl. broken CUDA)


def test_unknown_language_is_a_clear_error() -> None:
    with pytest.raises(GuardInputError, match="cannot check 'rust'"):
        check_source("fn main() {}", "rust")


# --- rules must be able to pass: honest variants of each pattern are not flagged ----------------

def test_try_that_reraises_is_allowed() -> None:
    assert _check("""
        def f(x):
            try:
                return g(x)
            except RuntimeError as exc:
                raise ValueError("bad input") from exc
        """) == set()


def test_bare_except_pass_anywhere_is_refused() -> None:
    assert _check("""
        try:
            import cupy
        except:
            pass
        """) == {"bypass-try-except"}


def test_importing_time_and_reading_it_is_allowed() -> None:
    assert _check("import time\nt0 = time.perf_counter()\nx = time.sleep\n") == set()


@pytest.mark.parametrize("code", ["torch.cuda.synchronize = lambda: None\n",
                                  "import torch.cuda as tc\ntc.Event.record = None\n",
                                  "from torch.cuda import Event\nEvent.elapsed_time = lambda *a: 0.0\n",
                                  "import time\ndel time.perf_counter\n"])
def test_timing_patches_are_refused(code: str) -> None:
    assert _check("import torch\n" + code) == {"timing-monkeypatch"}


def test_current_stream_is_not_a_side_stream() -> None:
    assert _check("""
        import torch
        def launch(fn, x):
            fn(x, stream=torch.cuda.current_stream().cuda_stream)
            fn(x, stream=None)
        """) == set()
    assert _check("def launch(fn, x, s):\n    fn(x, stream=s)\n") == {"side-stream"}
    assert _check("x.record_stream(s)\n") == {"side-stream"}


def test_cuda_stream_from_pool_is_a_side_stream() -> None:
    code = "void f(float* x) { k<<<1, 32, 0, at::cuda::getStreamFromPool()>>>(x); }\n"
    assert _check(code, "cuda") == {"side-stream"}
    ok = "void f(float* x) { k<<<1, 32, 0, c10::cuda::getCurrentCUDAStream()>>>(x); k<<<1, 32>>>(x); }\n"
    assert _check(ok, "cuda") == set()


def test_lazy_compile_global_is_not_a_cache() -> None:
    assert _check("""
        import torch.nn as nn
        from torch.utils.cpp_extension import load_inline
        _ext = None

        def ext():
            global _ext
            if _ext is None:
                _ext = load_inline(name="k", cpp_sources="", cuda_sources="__global__ void k() {}")
            return _ext

        class ModelNew(nn.Module):
            def forward(self, x):
                return ext().run(x)
        """) == set()


def test_state_written_in_forward_is_a_cache() -> None:
    assert _check("""
        import torch.nn as nn
        from torch.utils.cpp_extension import load_inline
        ext = load_inline(name="k", cpp_sources="", cuda_sources="__global__ void k() {}")

        class ModelNew(nn.Module):
            def forward(self, x):
                if getattr(self, "last", None) is not None:
                    return self.last
                y = ext.run(x)
                self.last = y
                return y
        """) == {"result-cache"}


def test_kernel_reached_through_helpers_counts_as_launched() -> None:
    assert _check("""
        import torch.nn as nn
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, y_ptr, n, B: tl.constexpr):
            o = tl.arange(0, B)
            tl.store(y_ptr + o, tl.load(x_ptr + o))

        def _launch(x, y):
            k[(1,)](x, y, x.numel(), B=128)

        def run(x):
            y = x.new_empty(x.shape)
            _launch(x, y)
            return y

        class ModelNew(nn.Module):
            def helper(self, x):
                return run(x)

            def forward(self, x):
                return self.helper(x)
        """) == set()


def test_reference_model_without_kernel_is_refused() -> None:
    assert _check("""
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x):
                return torch.sum(x, dim=1)
        """) == {"no-custom-kernel"}


def test_out_argument_and_augmented_assignment_on_inputs() -> None:
    base = """
        import torch.nn as nn
        import triton
        @triton.jit
        def k(x_ptr, y_ptr):
            pass
        class ModelNew(nn.Module):
            def forward(self, x, y):
                out = x.new_empty(x.shape)
                k[(1,)](x, out)
                {stmt}
                return out
        """
    assert _check(base.format(stmt="torch.add(out, 1, out=y)")) == {"input-mutation"}
    assert _check(base.format(stmt="v = y.view(-1)\n                v += 1")) == {"input-mutation"}
    assert _check(base.format(stmt="y[0] = 1.0")) == {"input-mutation"}
    assert _check(base.format(stmt="out.add_(1)")) == set()


def test_precision_rules_respect_the_baseline_dtype() -> None:
    code = "import torch\ny = x.to(torch.bfloat16)\n"
    assert _check(code) == {"reduced-precision"}
    assert _check(code, baseline_dtype="float16") == set()
    assert _check("import triton.language as tl\nc = tl.dot(a, b, input_precision='ieee')\n") == set()
    assert _check("import triton.language as tl\nc = tl.dot(a, b)\n") == {"tf32"}
    assert _check("import torch\ntorch.set_float32_matmul_precision('highest')\n") == set()
    assert _check("import torch\ntorch.set_float32_matmul_precision('high')\n") == {"tf32"}


def test_new_findings_ignore_what_the_original_already_had() -> None:
    original = (CORPUS / "bias_gelu_templates.cu").read_text()
    before = check_source(original, "cuda")
    assert refused_by(before) == []  # the user's own main() creates a stream: main() is not judged
    assert labels(before) == ["reduced-precision"]  # the launchers are instantiated for __half
    after = check_source(original.replace("    constexpr int kItems = 4;\n",
                                          "    constexpr int kItems = 4;\n    static torch::Tensor t;\n", 1), "cuda")
    added = new_findings(after, before)
    assert [f.rule_id for f in added] == ["result-cache"]


_HALF = """#include <cuda_fp16.h>
__global__ void sig(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = __half2float(x[i]); y[i] = __float2half(1.0f / (1.0f + expf(-v))); }
}
"""


def test_a_label_the_start_has_is_not_new_on_more_lines() -> None:
    """A vector loop and its scalar tail repeat the start's __half conversions: no new label; a type the start does
    not use (bfloat16), or a refusing finding repeated, still is new."""
    before = check_source(_HALF, "cuda")
    assert labels(before) == ["reduced-precision"]
    spread = _HALF.replace("if (i < n) {", "__half a = x[0]; __half b = __float2half(2.0f);\n    if (i < n) {")
    assert labels(check_source(spread, "cuda")) == ["reduced-precision"]
    assert new_findings(check_source(spread, "cuda"), before) == []
    other = spread.replace("__half a = x[0];", "__nv_bfloat16 a = __float2bfloat16(1.0f);")
    assert {f.message for f in new_findings(check_source("#include <cuda_bf16.h>\n" + other, "cuda"), before)} >= {
        "uses reduced-precision type __nv_bfloat16"}


# --- robustness: any input gives findings, never an exception ---------------------------------


_SEEDS = [p.read_text() for p in [*MALICIOUS, *CORRECT]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SEEDS), st.integers(0, 10_000), st.integers(0, 400), st.text(max_size=40),
       st.sampled_from(["python", "cuda", "triton", "cuda-in-python"]))
def test_mutated_sources_never_crash_the_guards(seed: str, cut: int, span: int, junk: str, lang: str) -> None:
    cut %= max(len(seed), 1)
    text = seed[:cut] + junk + seed[cut + span:]
    for f in check_source(text, lang):
        assert f.rule_id in RULES_BY_ID and f.line >= 1


def test_binary_and_null_bytes_are_unparsable_not_a_crash() -> None:
    assert _check("x = 1\x00\n") == {"unparsable-source"}
    assert _check("(" * 10000) == {"unparsable-source"}
    check_source("\x00\xff" * 1000, "cuda")
