"""Regression: the scan steps (``cuda.row_scan``, ``cuda.block_scan``) read an accumulator declared through a type
alias or a template parameter. ``typedef int64_t I; I total = 0;`` was refused ("total is of type I, which
__shfl_up_sync does not take") because the kernel's view carried no type names; the view now gives the unit's
aliases and template parameters (:attr:`KernelView.types`), so ``typedef``, ``using I = long long;``, an alias of
a template parameter inside the kernel and a template parameter itself are read as the types they name. An
integer alias is exact (the step says the values do not change); the candidates compile (nvcc, sm_90) and give
the one thread's values on the CPU (warp shuffles emulated). The row loop's header is the loop fact's
(``LoopFact.header``), so ``cols > c`` reads as ``c < cols``. Kernels written here.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, only_candidate

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.prefix_loop import segment_prefix_loop
from htam_core.source.analysis.row_scan import RowScan, row_scan
from htam_core.source.analysis.unit import cuda_source

ROW = """#include <cstdint>
ALIAS
TEMPLATE__global__ void cumsum(const ELEM *in, ELEM *out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    LOCALI total = 0;
    for (int c = 0; COND; ++c) {
        total += in[(size_t)r * cols + c];
        out[(size_t)r * cols + c] = total;
    }
}
void run(const HOST *in, HOST *out, int rows, int cols) { cumsum<<<(rows + 127) / 128, 128>>>(in, out, rows, cols); }
"""


def _row(alias: str = "", template: str = "", elem: str = "I", local: str = "", cond: str = "c < cols") -> str:
    """The row kernel with ``alias`` at file scope, ``template`` before it, elements of type ``elem``, ``local``
    before the accumulator's declaration, and the loop condition ``cond``; a template is launched with long long."""
    text = (ROW.replace("ALIAS", alias).replace("TEMPLATE", template).replace("ELEM", elem).replace("LOCAL", local)
            .replace("COND", cond))
    return text.replace("HOST", "long long").replace("cumsum<<<", "cumsum<long long><<<") if template else \
        text.replace("HOST", "I")


#: name -> (kernel text, exact: the step says the values do not change)
ROWS = {
    "typedef": (_row("typedef int64_t I;"), True),
    "using": (_row("using I = long long;"), True),
    "std_typedef": (_row("typedef std::int64_t I;"), True),
    "alias_chain": (_row("using J = long long;\ntypedef J I;"), True),
    "template_param": (_row(template="template <typename I>\n"), False),
    "alias_of_template_param": (_row(template="template <typename T>\n", elem="T", local="using I = T;\n    "), False),
    "bound_on_the_left": (_row("using I = long long;", cond="cols > c"), True),
}


def _candidate(text: str):
    return only_candidate("cuda.row_scan", text, "cumsum")


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_row_scan_reads_an_aliased_or_template_accumulator(name):
    text, exact = ROWS[name]
    model = parse_text(text, "cuda")
    k = model.kernel("cumsum")
    s = row_scan(KernelText(cuda_source(model, k), analyze(model, k)))  # type: ignore[arg-type]
    assert isinstance(s, RowScan), s
    assert s.acc_type == "I" and s.exact is exact and s.bound == "cols"
    c = _candidate(text)
    assert "__shfl_up_sync" in c.new_text and c.changes_numerics is (not exact)


MAIN = """
int main() {
    const int R = 37, C = 75;
    std::vector<HOST> in(R * C), out(R * C, -7);
    for (int i = 0; i < R * C; ++i) in[i] = (HOST)((i * 7) % 11) - 4 + (HOST)(i % 5) * 1000000000LL;
    htam_launch(((R + 127) / 128) * WARPS, 128, 1, [&] { CALL(in.data(), out.data(), R, C); });
    for (HOST v : out) std::printf("%lld\\n", (long long)v);
    return 0;
}
"""


def _run(text: str, tmp, warps: bool) -> list[float]:
    call = "cumsum<long long>" if "template <" in text else "cumsum"
    host = "long long" if "template <" in text else "I"
    main = MAIN.replace("WARPS", "32" if warps else "1").replace("CALL", call).replace("HOST", host)
    prelude = "#include <cstdint>\n" + "\n".join(ln for ln in text.splitlines()
                                                 if ln.startswith(("typedef", "using"))) + "\n"
    return run_block_main(text, "cumsum", main, tmp, prelude=prelude)


@pytest.mark.parametrize("name", ["typedef", "using", "template_param", "alias_of_template_param", "bound_on_the_left"])
def test_the_aliased_row_scan_gives_the_same_values(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text = ROWS[name][0]
    want = _run(text, tmp_path, warps=False)
    got = _run(_candidate(text).new_text, tmp_path, warps=True)
    assert got == want and len(want) == 37 * 75 and max(want) > 2 ** 32  # 64-bit sums, exactly


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_aliased_row_scan_compiles(name, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    assert_nvcc_compiles(_candidate(ROWS[name][0]).new_text, tmp_path, "k.cu")


def test_an_alias_of_a_type_the_shuffle_does_not_take_is_still_refused():
    text = _row("typedef short I;")
    model = parse_text(text, "cuda")
    k = model.kernel("cumsum")
    why = row_scan(KernelText(cuda_source(model, k), analyze(model, k)))  # type: ignore[arg-type]
    assert why == "total is of type I, which __shfl_up_sync does not take"


BLOCK = """#include <cstdint>
ALIAS
__global__ void offsets(const int *counts, I *offs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    I sum = 0;
    if (i >= n) return;
    for (int j = blockIdx.x * blockDim.x; j < i; ++j) sum = sum + counts[j];
    offs[i] = sum;
}
void run(const int *counts, I *offs, int n) { offsets<<<(n + 127) / 128, 128>>>(counts, offs, n); }
"""


@pytest.mark.parametrize("alias", ["typedef int64_t I;", "using I = long long;", "typedef unsigned int I;"])
def test_the_block_scan_reads_an_aliased_integer_accumulator_as_exact(alias, tmp_path):
    text = BLOCK.replace("ALIAS", alias)
    model = parse_text(text, "cuda")
    k = model.kernel("offsets")
    p = segment_prefix_loop(KernelText(cuda_source(model, k), analyze(model, k)))  # type: ignore[arg-type]
    assert not isinstance(p, str), p
    assert p.acc_type == "I"
    c = only_candidate("cuda.block_scan", text, "offsets")
    assert "__shfl_up_sync" in c.new_text and c.changes_numerics is False
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(c.new_text, tmp_path, "k.cu")


@pytest.mark.parametrize(("alias", "note"), [("typedef float I;", True), ("using I = double;", True),
                                             ("typedef int64_t I;", False)])
def test_the_description_notes_the_order_of_an_aliased_float_sum(alias, note):
    """A float running value spelled through an alias is a float sum (the note says so plainly, not "if I is a
    floating type"); an integer one gets no note."""
    d = _candidate(_row(alias)).description
    assert ("(float sums change order)" in d) is note and "if I is" not in d, d
