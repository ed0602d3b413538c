"""The block-wide scan (``cuda.block_scan``, :mod:`htam_core.transforms.cuda_block_scan`): a per-thread serial
prefix over the block's segment, in nine spellings (a local segment start, the start inline in the loop, a guarded
body, size_t and int64 indices, an exclusive scan, an int accumulator, a double with a weight, a macro block, a
templated kernel), is offered by the ranking (``segment_prefix_loop``), made, accepted by ``nvcc -arch=sm_90 -c``,
and run on the CPU (:func:`cpu_emulation.run_block_main`, a host thread per CUDA thread, warp shuffles emulated)
on a length that is not a multiple of the block: the sums equal the original's (integers exactly, floats at the
reordered-sum tolerance). Not offered: a prefix from 0 (the whole array, not the block's segment), a start that is
not the block's first element, a recurrence that is not a sum, a block that is not whole warps, a block unknown at
the launch. Kernels written here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, only_candidate

from htam_core.cli.main import main as htam_main
from htam_core.memory import load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate

ID = "cuda.block_scan"

LOCAL_SEG = """__global__ void prefix(const float *in, float *out, int n) {
    int seg = blockIdx.x * blockDim.x;
    int i = seg + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = seg; j <= i; ++j) s += in[j];
    out[i] = s;
}
void run(const float *in, float *out, int n) { prefix<<<(n + 127) / 128, 128>>>(in, out, n); }
"""

INLINE_GUARDED = """__global__ void prefix(const float *x, float *y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = 0.f;
        for (int j = blockIdx.x * blockDim.x; j <= i; j++) {
            acc = acc + x[j];
        }
        y[i] = acc;
    }
}
void run(const float *x, float *y, int n) { prefix<<<(n + 255) / 256, 256>>>(x, y, n); }
"""

SIZE_T = """#include <cstddef>
__global__ void prefix(const float *__restrict__ in, float *__restrict__ out, size_t n) {
    size_t first = (size_t)blockIdx.x * blockDim.x;
    size_t i = first + threadIdx.x;
    if (i >= n) return;
    float total = 0.0f;
    for (size_t j = first; j <= i; ++j) total += in[j];
    out[i] = total;
}
void run(const float *in, float *out, size_t n) { prefix<<<(unsigned)((n + 63) / 64), 64>>>(in, out, n); }
"""

INT64 = """#include <cstdint>
__global__ void prefix(const float *in, float *out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int64_t j = (int64_t)blockIdx.x * blockDim.x; j <= i; ++j) s += in[j];
        out[i] = s;
    }
}
void run(const float *in, float *out, int64_t n) { prefix<<<(unsigned)((n + 95) / 96), 96>>>(in, out, n); }
"""

EXCLUSIVE = """__global__ void prefix(const float *in, float *out, int n) {
    int base = blockIdx.x * blockDim.x;
    int i = base + threadIdx.x;
    if (i >= n) return;
    float before = 0.0f;
    for (int j = base; j < i; ++j) before += in[j];
    out[i] = before;
}
void run(const float *in, float *out, int n) { prefix<<<(n + 127) / 128, 128>>>(in, out, n); }
"""

INT_ACC = """__global__ void offsets(const int *counts, int *offs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int sum = 0;
    if (i >= n) return;
    for (int j = blockIdx.x * blockDim.x; j < i; ++j) sum = sum + counts[j];
    offs[i] = sum;
}
void run(const int *counts, int *offs, int n) { offsets<<<(n + 127) / 128, 128>>>(counts, offs, n); }
"""

DOUBLE_WEIGHT = """__global__ void prefix(const double *in, double *out, double w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double s = 0.0;
    for (int j = blockIdx.x * blockDim.x; j <= i; ++j) s += in[j] * w;
    out[i] = s;
}
void run(const double *in, double *out, int n) { prefix<<<(n + 127) / 128, 128>>>(in, out, 0.5, n); }
"""

MACRO_BLOCK = """#define BLOCK 128
__global__ void prefix(const float *in, float *out, int n) {
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = blockIdx.x * BLOCK; j <= i; ++j) s += in[j];
    out[i] = s;
}
void run(const float *in, float *out, int n) { prefix<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n); }
"""

TEMPLATED = """template <typename T>
__global__ void prefix(const T *in, T *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T s = T(0);
        for (int j = blockIdx.x * blockDim.x; j <= i; ++j) s += in[j];
        out[i] = s;
    }
}
void run(const float *in, float *out, int n) { prefix<float><<<(n + 127) / 128, 128>>>(in, out, n); }
"""

#: name -> (text, kernel, element type, call in the emulation's main, block, exact)
KERNELS = {
    "local_seg": (LOCAL_SEG, "prefix", "float", "prefix(in.data(), out.data(), N)", 128, False),
    "inline_guarded": (INLINE_GUARDED, "prefix", "float", "prefix(in.data(), out.data(), N)", 64, False),
    "size_t": (SIZE_T, "prefix", "float", "prefix(in.data(), out.data(), (size_t)N)", 64, False),
    "int64": (INT64, "prefix", "float", "prefix(in.data(), out.data(), (int64_t)N)", 96, False),
    "exclusive": (EXCLUSIVE, "prefix", "float", "prefix(in.data(), out.data(), N)", 128, False),
    "int_acc": (INT_ACC, "offsets", "int", "offsets(in.data(), out.data(), N)", 128, True),
    "double_weight": (DOUBLE_WEIGHT, "prefix", "double", "prefix(in.data(), out.data(), 0.5, N)", 64, False),
    "macro_block": (MACRO_BLOCK, "prefix", "float", "prefix(in.data(), out.data(), N)", 128, False),
    "templated": (TEMPLATED, "prefix<float>", "float", "prefix<float>(in.data(), out.data(), N)", 64, False),
}

MAIN = """
int main() {
    const int N = 333;  // not a multiple of the block: the last block has threads past the bound
    std::vector<TYPE> in(N), out(N, (TYPE)-7);
    for (int i = 0; i < N; ++i) in[i] = (TYPE)((i * 7) % 11) - (TYPE)4 + (TYPE)((i % 3) * 0.25);
    htam_launch((N + BLOCK - 1) / BLOCK, BLOCK, 1, [&] { CALL; });
    for (TYPE v : out) std::printf("%.17g\\n", (double)v);
    return 0;
}
"""


def _name(kernel: str) -> str:
    return kernel.split("<")[0]


def _candidate(text: str, kernel: str) -> Candidate:
    return only_candidate(ID, text, _name(kernel))


def _run(text: str, name: str, tmp) -> list[float]:
    _, kernel, typ, call, block, _ = KERNELS[name]
    main = MAIN.replace("TYPE", typ).replace("BLOCK", str(block)).replace("CALL", call)
    prelude = "#include <cstdint>\n" + "\n".join(ln for ln in text.splitlines() if ln.startswith("#define")) + "\n"
    return run_block_main(text, _name(kernel), main, tmp, prelude=prelude)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_block_scan_is_offered_and_replaces_the_loop(name):
    text, kernel = KERNELS[name][:2]
    model = parse_text(text, "cuda")
    k = model.kernel(_name(kernel))
    facts = compute_facts(k.features, "cuda", None, k, model)
    assert facts["segment_prefix_loop"] is True
    strategy = next(s for s in load_knowledge().strategies if s.id == "block_scan")
    assert strategy.applies.evaluate(facts) is True
    c = _candidate(text, kernel)
    assert "__shfl_up_sync" in c.new_text and "htam_warp_sums[32]" in c.new_text
    assert "return;" not in c.new_text and "; ++j)" not in c.new_text and "; j++)" not in c.new_text
    exact = KERNELS[name][5]
    assert c.changes_numerics is (not exact) and c.reorders_only is (not exact)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_block_scan_gives_the_same_sums(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text = KERNELS[name][0]
    want = _run(text, name, tmp_path)
    got = _run(_candidate(text, KERNELS[name][1]).new_text, name, tmp_path)
    assert len(got) == len(want) == 333
    if KERNELS[name][5]:
        assert got == want
    else:
        assert got == pytest.approx(want, rel=1e-5, abs=1e-4)
    assert any(v != want[0] for v in want[1:])  # the sums do vary: a constant output would pass any scan


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_block_scan_compiles(name, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text, kernel = KERNELS[name][:2]
    assert_nvcc_compiles(_candidate(text, kernel).new_text, tmp_path, "k.cu")


def test_a_scan_that_skips_the_warps_total_is_caught(tmp_path):
    """The check can fail: without the previous warps' total every warp restarts its sums."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    c = _candidate(LOCAL_SEG, "prefix")
    broken = c.new_text.replace("if (htam_warp > 0u)", "if (false)")
    assert broken != c.new_text
    assert _run(broken, "local_seg", tmp_path) != pytest.approx(_run(LOCAL_SEG, "local_seg", tmp_path), rel=1e-5)


NOT_OFFERED = {
    "from_zero": LOCAL_SEG.replace("for (int j = seg;", "for (int j = 0;"),
    "warp_start": LOCAL_SEG.replace("for (int j = seg;", "for (int j = i - (threadIdx.x & 31);"),
    "not_a_sum": LOCAL_SEG.replace("s += in[j];", "s = s * 0.5f + in[j];"),
    "thread_value": LOCAL_SEG.replace("s += in[j];", "s += in[j] * i;"),
    "partial_warp": LOCAL_SEG.replace("(n + 127) / 128, 128>>>", "(n + 99) / 100, 100>>>"),
    "runtime_block": LOCAL_SEG.replace("int n) { prefix<<<(n + 127) / 128, 128>>>",
                                       "int n, int b) { prefix<<<(n + b - 1) / b, b>>>"),
}


@pytest.mark.parametrize("name", sorted(NOT_OFFERED))
def test_other_loops_are_not_offered_and_refused_in_one_line(name):
    text = NOT_OFFERED[name]
    assert text != LOCAL_SEG
    model = parse_text(text, "cuda")
    k = model.kernel("prefix")
    assert compute_facts(k.features, "cuda", None, k, model)["segment_prefix_loop"] is False
    got = registry.propose(ID, model, k)
    assert not isinstance(got, list) and "\n" not in got.reason


def test_suggest_ranks_the_scan_and_the_rules_engine_makes_it(tmp_path, capsys, monkeypatch):
    import json

    import htam_core.profile.api as profile_api
    from htam_core.types.profile import Bottleneck, Profile

    monkeypatch.setattr(profile_api, "profile_kernel",
                        lambda path, name, static=None, **kw: Profile(name, bottleneck=Bottleneck("memory-bound")))
    (tmp_path / "k.cu").write_text(LOCAL_SEG)
    assert htam_main(["suggest", str(tmp_path / "k.cu"), "--kernel", "prefix", "--why", "block_scan", "--json",
                      "--memory", str(tmp_path / "m.sqlite3")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["value"] is True and got["ranked"] and got["makes_edit"] and got["refusal"] is None


SPELLINGS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "spellings" / "block_scan"
#: the spelling matrix's files -> (kernel, call in the emulation's main, the block its launch uses)
MATRIX = {
    "nvidia_samples.cu": ("scanNaive", "scanNaive(out.data(), in.data(), (unsigned)N)", 256),
    "aten.cu": ("segment_cumsum_kernel", "segment_cumsum_kernel(in.data(), out.data(), (int64_t)N)", 128),
    "llmc.cu": ("block_cumsum_kernel1", "block_cumsum_kernel1(out.data(), in.data(), 0.5f, N)", 64),
    "templated.cu": ("block_prefix", "block_prefix<float>(in.data(), out.data(), N)", 256),
    "macro.cu": ("scan_macro", "scan_macro(in.data(), out.data(), N)", 512),
    "course.cu": ("exclusive_scan_naive", "exclusive_scan_naive(in.data(), out.data(), N)", 1024),
}


def _run_file(text: str, kernel: str, call: str, block: int, tmp) -> list[float]:
    main = MAIN.replace("TYPE", "float").replace("BLOCK", str(block)).replace("CALL", call)
    prelude = "#include <cstdint>\n" + "\n".join(
        ln for ln in text.splitlines() if ln.startswith(("#define", "typedef"))) + "\n"
    return run_block_main(text, kernel, main, tmp, prelude=prelude)


@pytest.mark.parametrize("file", sorted(MATRIX))
def test_the_spelling_matrix_scans_give_the_same_sums(file, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call, block = MATRIX[file]
    text = (SPELLINGS_DIR / file).read_text()
    want = _run_file(text, kernel, call, block, tmp_path)
    got = _run_file(_candidate(text, kernel).new_text, kernel, call, block, tmp_path)
    assert len(got) == 333 and got == pytest.approx(want, rel=1e-5, abs=1e-4)


def test_names_the_kernel_already_has_are_not_reused():
    """A kernel with its own ``htam_v`` (another step's, or the user's) gets the scan's names with a suffix; its own
    names, in the element too, stay as written."""
    text = LOCAL_SEG.replace("int n) {\n", "int n) {\n    const float htam_v = 2.0f;\n", 1)
    text = text.replace("s += in[j];", "s += in[j] * htam_v;")
    c = _candidate(text, "prefix")
    assert "htam_v_1" in c.new_text and "htam_warp_sums_1[32]" in c.new_text
    assert "static_cast<float>(in[i] * htam_v)" in c.new_text and "float htam_v_1 = " in c.new_text


def test_the_audit_names_the_scan_pattern():
    """The makeable-actions audit asks a kernel with a known pattern for a structural step: the scan is one."""
    from htam_core.editor.audit import known_pattern

    model = parse_text(LOCAL_SEG, "cuda")
    k = model.kernel("prefix")
    assert known_pattern(compute_facts(k.features, "cuda", None, k, model)) == "scan"
    assert registry.get(ID).kind == "structural"
