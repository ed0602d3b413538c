"""``cuda.smem_histogram``: a global-atomic histogram gets a per-block shared-memory histogram.

Fixture ``tests/fixtures/transforms/histogram_variants.cu`` (written for these tests) holds the spellings: a
grid-stride ``for`` with a ``#define`` bin count, a guarded element per thread with the bin count a parameter
(dynamic shared memory sized at the launch), ``unsigned char`` data with a ``while`` grid-stride loop (256 bins),
a template bin count, and the bin checked against a parameter or a ``#define`` before the update. Structure tests check the barriers and the merge; the CPU runs (one host thread per CUDA
thread, ``__syncthreads`` a barrier) check the counts are exactly the original's; nvcc compiles every candidate.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.editor.audit import known_pattern
from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.transforms.cpu_emulation import compiler, run_block_main

TID = "cuda.smem_histogram"
FILE = Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "histogram_variants.cu"
KERNELS = ["hist_stride", "hist_guarded", "hist_bytes", "hist_tmpl", "hist_checked", "hist_checked_define"]


def _propose(kernel: str, text: str | None = None):
    model = parse_text(text, "cuda", str(FILE)) if text is not None else load(FILE)
    return registry.propose(TID, model, model.kernel(kernel))


@pytest.mark.parametrize(("kernel", "decl", "bins"), [
    ("hist_stride", "__shared__ unsigned int htam_hist[NUM_BINS];", 64),
    ("hist_guarded", "extern __shared__ int htam_hist[];", "num_bins"),
    ("hist_bytes", "__shared__ unsigned int htam_hist[256];", 256),
    ("hist_tmpl", "__shared__ unsigned int htam_hist[BINS];", 64),
    ("hist_checked", "extern __shared__ unsigned int htam_hist[];", "num_bins"),
    ("hist_checked_define", "__shared__ unsigned int htam_hist[NUM_BINS];", 64),
])
def test_each_spelling_is_privatized(kernel, decl, bins):
    cs = _propose(kernel)
    assert not isinstance(cs, NotApplicable), cs.reason
    (c,) = cs
    assert c.params["bins"] == bins
    new = c.new_text
    body = new[new.index(f"void {kernel}("):]
    body = body[: body.index("\n}\n")]
    assert decl in body
    # zeroed, a barrier, the kernel's atomic on the shared bins, a barrier, one global atomic per bin
    zero, rest = body.split("__syncthreads();", 1)
    assert "htam_hist[htam_b] = 0;" in zero
    count, merge = rest.split("__syncthreads();", 1)
    ptr = "bins" if kernel == "hist_checked" else "hist"
    assert "atomicAdd(&" in count and "htam_hist[" in count and f" {ptr}[" not in count and f"({ptr}[" not in count
    assert f"atomicAdd(&{ptr}[htam_b], htam_hist[htam_b]);" in merge


def test_a_parameter_bin_count_sizes_the_launch():
    (c,) = _propose("hist_guarded")
    assert "hist_guarded<<<htam_sm_grid((n + 255) / 256, 8), 256, (bins) * sizeof(int)>>>(d, h2, n, bins);" in \
        c.new_text  # the grid capped too: the grid-stride form (tests/transforms/test_transforms_cuda_histogram_grid.py)
    assert c.params["shared"] == "dynamic"


_BASE = """
__global__ void h(const int *data, unsigned int *hist, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    BODY
}
void run(const int *d, unsigned int *h2, int n) { h<<<(n + 255) / 256, 256>>>(d, h2, n); }
"""


@pytest.mark.parametrize(("body", "why"), [
    ("if (i < n) atomicAdd(&hist[data[i]], 1);", "the bin count is unknown"),
    ("if (i < n) { if (data[i] < 0) return; atomicAdd(&hist[data[i] % 64], 1); }", "returns on line"),
    ("if (i < n) { unsigned o = atomicAdd(&hist[data[i] % 64], 1); hist[0] = o; }", "is used"),
    ("if (i < n) atomicAdd(&hist[data[i] % 64], 1); if (i == 0) hist[64] = 0;", "also accessed"),
    ("if (i < n) atomicAdd(&hist[data[i] % 16384], 1);", "bytes of static shared memory"),
    ("if (i < n) atomicAdd(&hist[i % 64], 1);", "not a histogram"),
])
def test_refusals_say_why(body, why):
    r = _propose("h", _BASE.replace("BODY", body))
    assert isinstance(r, NotApplicable)
    assert why in r.reason, r.reason


def test_the_fact_and_the_strategy():
    model = load(FILE)
    k = model.kernel("hist_bytes")
    (u,) = analyze(model, k).histogram_updates()
    assert (u.pointer, u.extent, u.extent_text) == ("hist", 256, "256")
    facts = compute_facts(k.features, k.language, kernel=k)
    assert facts["histogram_like"] is True
    assert known_pattern(facts) == "histogram"  # the makeable-actions audit asks it for a structural step
    kb = load_knowledge()
    (s,) = [s for s in kb.strategies if s.transform == TID]
    assert "histogram_like" in str(s.applies.text if hasattr(s.applies, "text") else s.applies) and s.risk and s.guidance


_MAIN = """
int main() {
    const int n = 3001, bins = 64;
    std::vector<int> d(n); std::vector<unsigned> u(n); std::vector<unsigned char> bytes(n);
    for (int k = 0; k < n; ++k) { d[k] = (k * 37 + k / 7) % 1000; u[k] = (unsigned)(k * k + 11u) % 97u; bytes[k] = (unsigned char)(k * 131 % 251); }
    std::vector<unsigned> h(256, 0); std::vector<int> h2(bins, 0);
    CALL
    for (unsigned v : h) std::printf("%u\\n", v);
    for (int v : h2) std::printf("%d\\n", v);
    return 0;
}
"""
_CALLS = {
    "hist_stride": "htam_launch(5, 64, 1, [&] { hist_stride(d.data(), h.data(), n); });",
    "hist_guarded": "htam_launch((n + 127) / 128, 128, 1, [&] { hist_guarded(d.data(), h2.data(), n, bins); });",
    "hist_bytes": "htam_launch(3, 96, 1, [&] { hist_bytes(bytes.data(), h.data(), (unsigned)n); });",
    "hist_tmpl": "htam_launch(4, 64, 1, [&] { hist_tmpl<64>(u.data(), h.data(), n); });",
    "hist_checked": "htam_launch(3, 64, 1, [&] { hist_checked(d.data(), h.data(), n, 200); });",
    "hist_checked_define": "htam_launch((n + 127) / 128, 128, 1, [&] { hist_checked_define(u.data(), h.data(), n); });",
}


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", KERNELS)
def test_privatized_histogram_gives_the_same_counts_on_the_cpu(kernel, tmp_path):
    main = _MAIN.replace("CALL", _CALLS[kernel])
    want = run_block_main(FILE.read_text(), kernel, main, tmp_path, prelude="#define NUM_BINS 64")
    assert sum(want) > 500 and len(set(want)) >= 2  # counts, and not all equal
    (c,) = _propose(kernel)
    assert run_block_main(c.new_text, kernel, main, tmp_path, prelude="#define NUM_BINS 64") == want


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("kernel", KERNELS)
def test_candidates_compile(kernel, tmp_path):
    (c,) = _propose(kernel)
    assert_nvcc_compiles(c.new_text, tmp_path)


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_ranker_offers_the_privatization(kernel):
    from htam_core.memory import Ranker, state_from_profile
    from htam_core.types.profile import Bottleneck, Profile

    k = load(FILE).kernel(kernel)
    profile = Profile(kernel, bottleneck=Bottleneck("latency-bound"))
    steps = Ranker(load_knowledge(), None).rank(state_from_profile(profile), [], k.features, k.language, profile,
                                                top=40, kernel=k)
    names = [s.strategy for s in steps]
    assert "smem_histogram" in names[:8], names
    assert "privatize_atomics" not in names  # the generic advice gives way to the mechanical step


# ---------------------------------------------------------------- launched from another file
_UNLAUNCHED = FILE.read_text().replace("    hist_guarded<<<(n + 255) / 256, 256>>>(d, h2, n, bins);\n", "")


def test_a_parameter_bin_count_without_a_launch_gets_the_capped_form():
    """No launch to size dynamic shared memory: a static array of CAP bins, used when the count fits."""
    from htam_core.transforms.cuda_histogram import CAP

    assert "hist_guarded<<<" not in _UNLAUNCHED
    (c,) = _propose("hist_guarded", _UNLAUNCHED)
    assert c.params["shared"] == "capped" and "launch-independent" in c.description
    body = c.new_text.split("hist_guarded")[1].split("__global__")[0]
    assert f"__shared__ int htam_hist[{CAP}];" in body and f"const bool htam_private = num_bins <= {CAP};" in body
    assert "extern __shared__" not in body
    assert body.count("__syncthreads();") == 2


_MAIN_CAPPED = """
int main() {
    const int n = 3001, bins = BINS;
    std::vector<int> d(n);
    for (int k = 0; k < n; ++k) d[k] = (k * 37 + k / 7) % 1500;
    std::vector<int> h2(bins, 0);
    htam_launch((n + 127) / 128, 128, 1, [&] { hist_guarded(d.data(), h2.data(), n, bins); });
    for (int v : h2) std::printf("%d\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("bins", [64, 2000])  # in shared memory; above the cap, the global atomics as before
def test_the_capped_form_gives_the_same_counts_on_the_cpu(bins, tmp_path):
    main = _MAIN_CAPPED.replace("BINS", str(bins))
    want = run_block_main(_UNLAUNCHED, "hist_guarded", main, tmp_path)
    assert sum(want) == 3001 and len(set(want)) >= 2
    (c,) = _propose("hist_guarded", _UNLAUNCHED)
    assert run_block_main(c.new_text, "hist_guarded", main, tmp_path) == want


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_capped_form_compiles(tmp_path):
    (c,) = _propose("hist_guarded", _UNLAUNCHED)
    assert_nvcc_compiles(c.new_text, tmp_path)
