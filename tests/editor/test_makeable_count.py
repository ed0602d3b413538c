"""The makeable-actions check, counted on every kernel of the corpus (``tests/fixtures/corpus``) and
of the suite (``bench/suite``): at least 90 % of the listed code actions resolve to an edit through the click
path, and every kernel with a known pattern gets at least one *structural* step (registry ``KINDS``: a
launch-parameter, hint-only or math step does not count). The per-kernel counts are printed on failure.
``bench/bench_actions.py`` runs the same count over any folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.editor.audit import KernelCount, count_file
from htam_core.editor.session import Session

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = (ROOT / "tests" / "fixtures" / "corpus", ROOT / "bench" / "suite")

#: Kernels with a known pattern that get no structural step yet, with the step they lack. The test fails when a
#: kernel outside this list lacks one, and when a kernel of this list gets one (then remove it from here).
KNOWN_GAPS: dict[str, str] = {}


@pytest.fixture(scope="module")
def counts(tmp_path_factory) -> list[KernelCount]:
    s = Session(memory_path=str(tmp_path_factory.mktemp("mem") / "m.sqlite3"), static=True)
    s.warm_up()
    try:
        files = sorted(p for d in FOLDERS for p in d.iterdir() if p.suffix in (".cu", ".cuh", ".py"))
        out = [c for f in files for c in count_file(s, str(f))]
    finally:
        s.close()
    return [c for c in out if c.kernel]  # files without a kernel (references, harness helpers) count nothing


def _table(counts: list[KernelCount]) -> str:
    return "\n".join(c.line() for c in counts)


def test_the_corpus_and_the_suite_have_kernels(counts) -> None:
    assert len({c.file for c in counts}) >= 20 and len(counts) >= 25, _table(counts)


def test_ninety_percent_of_listed_actions_resolve_to_an_edit(counts) -> None:
    listed = sum(len(c.listed) for c in counts)
    made = sum(len(c.made) for c in counts)
    assert listed >= 3 * len([c for c in counts if not c.error]), "almost nothing listed:\n" + _table(counts)
    assert made >= 0.9 * listed, f"{made}/{listed} listed actions resolve to an edit:\n{_table(counts)}"
    low = [c for c in counts if c.listed and len(c.made) < 0.9 * len(c.listed)]
    assert not low, "kernels under 90 %:\n" + _table(low)


def test_every_kernel_with_a_known_pattern_gets_a_structural_step(counts) -> None:
    def name(c: KernelCount) -> str:
        return f"{Path(c.file).name}:{c.kernel}"

    patterned = [c for c in counts if c.pattern and not c.error]
    assert {"matmul", "transpose", "softmax", "reduction"} <= {c.pattern for c in patterned}, _table(counts)
    missing = [c for c in patterned if not c.structural and name(c) not in KNOWN_GAPS]
    assert not missing, "no structural step:\n" + _table(missing) + "\n\nall kernels:\n" + _table(counts)
    closed = sorted({name(c) for c in patterned if c.structural and name(c) in KNOWN_GAPS})
    assert not closed, f"these kernels now get a structural step: remove them from KNOWN_GAPS: {closed}"


def test_a_known_pattern_without_a_structural_step_says_why(counts) -> None:
    """Each kernel of KNOWN_GAPS carries the refusal of every structural strategy of its language, and only those
    kernels do (a kernel with a structural step or without a pattern has none)."""
    from htam_core.memory import load_knowledge
    from htam_core.transforms.registry import is_structural

    structural = {s.id for s in load_knowledge().strategies if is_structural(s.transform)}
    gaps = [c for c in counts if c.pattern and not c.structural and not c.error]  # empty once every gap closed
    for c in gaps:
        assert c.refusals and all(sid in structural and why for sid, why in c.refusals), c.line()
    assert all(not c.refusals for c in counts if c.structural or not c.pattern), _table(counts)


def test_already_fixed_needs_vector_loads_and_a_warp_finish() -> None:
    """:func:`already_fixed` names the facts for a reduction whose loop reads are all 16-byte vector loads and
    whose partial sums finish in a warp; a scalar read or a shared-memory tree finish leaves it unclassified."""
    from htam_core.editor.audit import already_fixed
    from htam_core.source import parse_text
    from htam_core.source.analysis import analyze

    head = "__global__ void k(float *out, const float *x, int n) {\n    float acc = 0.0f;\n"
    vec = ("    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += blockDim.x * gridDim.x) {\n"
           "        float4 v = reinterpret_cast<const float4 *>(x)[i]; acc += v.x + v.y + v.z + v.w; }\n")
    scalar = "    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];\n"
    shuffle = "    acc += __shfl_down_sync(0xffffffff, acc, 16);\n    if (threadIdx.x == 0) atomicAdd(out, acc);\n}\n"
    tree = ("    __shared__ float s[256]; s[threadIdx.x] = acc; __syncthreads();\n"
            "    for (int st = 128; st > 0; st >>= 1) { if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];"
            " __syncthreads(); }\n    if (threadIdx.x == 0) out[blockIdx.x] = s[0];\n}\n")

    def fixed(text: str) -> str | None:
        m = parse_text(text, "cuda")
        return already_fixed(analyze(m, m.kernel("k")))

    why = fixed(head + vec + shuffle)
    assert why is not None and "16-byte vector load (line 4)" in why and "__shfl_down_sync on line 5" in why
    assert fixed(head + scalar + shuffle) is None
    assert fixed(head + vec + tree) is None


def test_already_fixed_allows_one_value_per_warp_and_row() -> None:
    """A scalar read whose element is the same on every lane of a warp and whose loop steps by a grid of warps
    (a row's mean beside vector loads of the row) leaves nothing for a 16-byte load; the same read one element per
    lane (``m[row * 32 + lane]``) or along a loop of step 1 still counts as widenable."""
    from htam_core.editor.audit import already_fixed
    from htam_core.source import parse_text
    from htam_core.source.analysis import analyze

    def kernel(mean: str, step: str = "gridDim.x * (blockDim.x / 32)") -> str:
        return ("__global__ void k(float *out, const float *x, const float *m, int rows, int n) {\n"
                "    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
                "    float acc = 0.0f;\n"
                f"    for (int row = blockIdx.x * (blockDim.x / 32) + warp; row < rows; row += {step}) {{\n"
                f"        float mu = {mean};\n"
                "        for (int i = lane; i < n / 4; i += 32) {\n"
                "            float4 v = reinterpret_cast<const float4 *>(x + row * n)[i];\n"
                "            acc += v.x + v.y + v.z + v.w - 4.0f * mu; }\n"
                "    }\n"
                "    acc += __shfl_down_sync(0xffffffff, acc, 16);\n"
                "    if (lane == 0) atomicAdd(out, acc);\n}\n")

    def facts(text: str):
        m = parse_text(text, "cuda")
        return analyze(m, m.kernel("k"))

    f = facts(kernel("m[row]"))
    assert [(a.pointer, a.line) for a in f.broadcast_reads()] == [("m", 5)]
    why = already_fixed(f)
    assert why is not None and "one element per warp and row, never two adjacent ones per thread (line 5)" in why
    assert "16-byte vector load (line 7)" in why
    assert not facts(kernel("m[row * 32 + lane]")).broadcast_reads()
    assert already_fixed(facts(kernel("m[row * 32 + lane]"))) is None
    assert already_fixed(facts(kernel("m[row]", "1"))) is None  # step 1: a thread reads adjacent means
