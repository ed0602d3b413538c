"""``cuda.smem_histogram`` on every spelling of the updated element that the analysis reads as a histogram.

The analysis layer (:func:`~htam_core.source.analysis.atomics.address_target`) gives the transform the bins
pointer and the index of ``&bins[k]``, ``&(bins[k])``, ``bins + k``, ``k + bins``, ``(bins + k)`` and a cast of
the whole address; the transform privatizes each the same way (the counts match the original's on the CPU) and
never ranks-then-refuses one of them. Kernels written for these tests.
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.transforms.cpu_emulation import compiler, run_block_main

TID = "cuda.smem_histogram"
_K = "data[i] % 64"
SPELLINGS = [f"&bins[{_K}]", f"&(bins[{_K}])", f"bins + {_K}", f"{_K} + bins", f"(bins + ({_K}))",
             f"(unsigned int *)(bins + {_K})", f"(unsigned int*)&bins[{_K}]"]
_SRC = """
__global__ void h(const int *data, unsigned int *bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(ADDR, 1u);
}
void run(const int *d, unsigned int *b, int n) { h<<<(n + 127) / 128, 128>>>(d, b, n); }
"""
_MAIN = """
int main() {
    const int n = 2999;
    std::vector<int> d(n);
    for (int k = 0; k < n; ++k) d[k] = (k * 37 + k / 5) % 1000;
    std::vector<unsigned> b(64, 0);
    htam_launch((n + 127) / 128, 128, 1, [&] { h(d.data(), b.data(), n); });
    for (unsigned v : b) std::printf("%u\\n", v);
    return 0;
}
"""


def _propose(text: str, kernel: str = "h"):
    model = parse_text(text, "cuda", "/tmp/hist_addresses.cu")
    return model, registry.propose(TID, model, model.kernel(kernel))


@pytest.mark.parametrize("addr", SPELLINGS)
def test_the_fact_names_the_bins_and_the_index(addr):
    model = parse_text(_SRC.replace("ADDR", addr), "cuda", "/tmp/hist_addresses.cu")
    (u,) = analyze(model, model.kernel("h")).histogram_updates()
    src = model.text.encode()
    assert src[u.base_span[0]:u.base_span[1]] == b"bins"
    assert src[u.index_span[0]:u.index_span[1]].decode().strip("()") == _K
    assert (u.extent, u.extent_text) == (64, "64")


@pytest.mark.parametrize("addr", SPELLINGS)
def test_each_address_spelling_is_privatized(addr):
    _, cs = _propose(_SRC.replace("ADDR", addr))
    assert not isinstance(cs, NotApplicable), cs.reason
    (c,) = cs
    body = c.new_text.split("void h(")[1].split("void run(")[0]
    assert "__shared__ unsigned int htam_hist[64];" in body
    count = body.split("__syncthreads();")[1]
    assert "htam_hist" in count and "bins" not in count  # the kernel's own update now counts in shared memory


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("addr", SPELLINGS)
def test_the_counts_match_the_original_on_the_cpu(addr, tmp_path):
    text = _SRC.replace("ADDR", addr)
    want = run_block_main(text, "h", _MAIN, tmp_path)
    assert sum(want) == 2999 and len(set(want)) >= 2
    _, (c,) = _propose(text)
    assert run_block_main(c.new_text, "h", _MAIN, tmp_path) == want


_CAPPED = """
__global__ void hp(const int *data, unsigned int *bins, int n, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(data[i] % nb + bins, 1u);
}
"""


def test_the_index_before_the_bins_in_the_launch_independent_form():
    """No launch (a parameter count): the capped form respells the shared update with the index first."""
    _, (c,) = _propose(_CAPPED, "hp")
    assert "if (htam_private) atomicAdd(data[i] % nb + htam_hist, 1u); else atomicAdd(data[i] % nb + bins, 1u);" \
        in c.new_text


@pytest.mark.parametrize(("addr", "why"), [
    ("(unsigned int *)bins + data[i] % 64", "not a histogram"),  # a cast base: the cast type counts the index
    ("bins", "not a histogram"),
])
def test_other_addresses_are_not_read_as_one_bin(addr, why):
    _, r = _propose(_SRC.replace("ADDR", addr))
    assert isinstance(r, NotApplicable) and why in r.reason, getattr(r, "reason", r)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_candidates_compile(tmp_path):
    for n, addr in enumerate(SPELLINGS[2:5]):
        _, (c,) = _propose(_SRC.replace("ADDR", addr))
        (tmp_path / str(n)).mkdir()
        assert_nvcc_compiles(c.new_text, tmp_path / str(n))
