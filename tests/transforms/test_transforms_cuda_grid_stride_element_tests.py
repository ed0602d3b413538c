"""A bound check that also tests the element (``if (i < n && v[i] > 0)``, ``if (i >= n || !flag[i]) return;``):
the bound is the ``i < n`` term, the rest a condition on element ``i`` (the analysis layer's
:attr:`Elementwise.predicate`). ``cuda.grid_stride`` loops over the bound and keeps the condition inside the loop's
body; the float4 step, whose lanes load and store together, refuses such a guard with that reason. Terms that read
a thread index or have a side effect are no condition on the element and stay refused.

Numerics: the original (one element per thread, every block) and the rewrite (a grid of 3 blocks: each thread
takes several elements) run on the CPU (:func:`cpu_emulation.run_main`); the outputs must be equal. The inputs are
padded so that the original's reads past ``n`` (a value test written before the bound) stay in the host buffer.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_main
from transform_helpers import assert_nvcc_compiles, fixture_path

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.forms import KernelText, elementwise
from htam_core.source.analysis.unit import cuda_source

FILE = "grid_stride_element_tests.cu"
TID = "cuda.grid_stride"
#: kernel -> (the condition kept inside the loop as the rewrite writes it, the kernel's call in the CPU test)
TESTED = {
    "keep_positive": ("if (v[i] > 0.0f)", "keep_positive(a.data(), out.data(), N)"),
    "keep_positive_swapped": ("if (v[i] > 0.0f)", "keep_positive_swapped(a.data(), out.data(), N)"),
    "copy_flagged": ("if (!flag[i]) continue;", "copy_flagged(flag.data(), a.data(), out.data(), N)"),
    "copy_nonzero": ("if (v[i] == 0.0f) continue;", "copy_nonzero(a.data(), out.data(), 2.0f, N)"),
    "both_positive": ("if ((a[i] > 0.0f) && (b[i] > 0.0f || b[i] < -1.0f))",
                      "both_positive(a.data(), b.data(), out.data(), N, 1)"),
    "keep_nested": ("if (v[i] > 0.0f)", "keep_nested(a.data(), out.data(), N)"),
    "fresh_local": ("x = v[i]; out[i] = x * x;", "fresh_local(a.data(), out.data(), N)"),
}


def _ew(kernel: str):
    model = parse_text(fixture_path(FILE).read_text(), "cuda")
    k = model.kernel(kernel)
    return elementwise(KernelText(cuda_source(model, k), analyze(model, k)), invariant_terms=True,
                       per_element_terms=True)


def _body(text: str, kernel: str) -> str:
    start = text.index(f"__global__ void {kernel}(")
    return text[start: text.index("\n}\n", start)]


@pytest.mark.parametrize(("kernel", "bound", "pred", "extra"), [
    ("keep_positive", "n", "(v[i] > 0.0f)", ""),
    ("keep_positive_swapped", "n", "(v[i] > 0.0f)", ""),
    ("copy_flagged", "n", "(flag[i])", ""),
    ("copy_nonzero", "n", "(v[i] != 0.0f)", "((n > 0))"),
    ("both_positive", "n", "((a[i] > 0.0f) && (b[i] > 0.0f || b[i] < -1.0f))", "((on))"),
])
def test_the_guard_splits_into_bound_and_element_condition(kernel, bound, pred, extra):
    ew = _ew(kernel)
    assert not isinstance(ew, str), ew
    assert (ew.name, ew.bound.text.decode(), ew.predicate, ew.extra) == ("i", bound, pred, extra)


def test_the_split_is_taken_only_where_asked():
    model = parse_text(fixture_path(FILE).read_text(), "cuda")
    k = model.kernel("keep_positive")
    why = elementwise(KernelText(cuda_source(model, k), analyze(model, k)), invariant_terms=True)
    assert isinstance(why, str) and "it tests the element, `v[i] > 0.0f`" in why


@pytest.mark.parametrize("kernel", list(TESTED))
def test_the_loop_keeps_the_element_condition_inside(cand, kernel):
    for c in cand(TID, FILE, kernel):
        body = _body(c.new_text, kernel)
        # a 64-bit counter, the kernel's int index declared from it before the element's test
        assert "for (long long htam_gi = blockIdx.x * blockDim.x + threadIdx.x; htam_gi < n" in body
        assert body.index("int i = (int)htam_gi;") < body.index(TESTED[kernel][0])
        assert TESTED[kernel][0] in body
        assert "return;" not in body


@pytest.mark.parametrize(("kernel", "why"), [("odd_lanes", "threadIdx.x % 2 == 1"),
                                             ("count_and_copy", "atomicAdd(seen, 1) >= 0")])
def test_a_term_that_is_no_element_condition_is_refused(refuse, kernel, why):
    assert why in refuse(TID, FILE, kernel)


@pytest.mark.parametrize("kernel", ["keep_positive", "copy_flagged", "both_positive"])
def test_the_vector_step_refuses_with_the_element_condition(refuse, kernel):
    why = refuse("cuda.vectorize_float4", FILE, kernel)
    assert "also tests each element" in why and "does not carry a condition per element" in why


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(cand, tmp_path):
    for kernel in TESTED:
        for k, c in enumerate(cand(TID, FILE, kernel)):
            assert_nvcc_compiles(c.new_text, tmp_path, f"{kernel}_{k}.cu")


_MAIN = """
int main() {
    const int N = 1000, PAD = 1024;
    std::vector<float> a(N + PAD), b(N + PAD), out(N + PAD, -7.0f);
    std::vector<int> flag(N + PAD);
    for (int i = 0; i < N + PAD; ++i) {
        a[i] = (float)((i * 7) % 11) - 4.0f;
        b[i] = (float)((i * 5) % 9) - 3.0f;
        flag[i] = (i * 3) % 4 != 0;
    }
    HTAM_LAUNCH(GRID, 1, 256, 1, CALL);
    for (float v : out) printf("%.9g\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", list(TESTED))
def test_the_loop_computes_what_one_thread_per_element_did(cand, kernel, tmp_path):
    call = TESTED[kernel][1]
    original = _MAIN.replace("GRID", "(N + 255) / 256").replace("CALL", call)
    (tmp_path / "o").mkdir()
    want = run_main(fixture_path(FILE).read_text(), kernel, original, tmp_path / "o")
    assert len(want) == 2024 and len(set(want[:1000])) > 2  # some elements written, some kept
    for k, c in enumerate(cand(TID, FILE, kernel)):
        (tmp_path / f"n{k}").mkdir()
        got = run_main(c.new_text, kernel, _MAIN.replace("GRID", "3").replace("CALL", call), tmp_path / f"n{k}")
        assert got == want


@pytest.mark.parametrize(("tid", "kernel", "why"), [
    (TID, "carry_sum", "updates acc, declared before the bound check"),
    (TID, "carry_flag", "updates seen, declared before the bound check"),
    ("cuda.vectorize_float4", "carry_sum", "writes acc, declared outside it"),  # the lanes' own reader says so
    ("cuda.vectorize_float4", "carry_flag", "also tests each element"),  # the element test is refused first
])
def test_a_local_that_would_carry_from_element_to_element_is_refused(refuse, tid, kernel, why):
    assert why in refuse(tid, FILE, kernel)
