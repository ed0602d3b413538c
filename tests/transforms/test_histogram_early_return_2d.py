"""The shared-memory histogram step on a kernel that returns early (``if (i >= n) return;``) and on a 2-D image
histogram: offered by the ranking's predicate, made (the early return becomes the guarded body it stands for, so
every thread reaches the barriers), and compiled by nvcc for sm_90. Kernels written for this test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms.registry import NotApplicable, propose
from tests.support.nvcc_check import assert_compiles

EARLY_1D = """__global__ void hist_early(const unsigned char* data, unsigned int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&bins[data[i]], 1u);
}
void launch(const unsigned char* d, unsigned int* b, int n) { hist_early<<<(n + 255) / 256, 256>>>(d, b, n); }
"""
EARLY_NO_LAUNCH = """__global__ void hist_early(const int* data, unsigned int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = data[i];
    atomicAdd(&bins[v & 63], 1u);
}
"""
IMAGE_2D = """__global__ void hist2d(const unsigned char* img, unsigned int* hist, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) atomicAdd(&hist[img[y * w + x]], 1u);
}
void launch(const unsigned char* img, unsigned int* hist, int w, int h) {
    dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
    hist2d<<<grid, block>>>(img, hist, w, h);
}
"""
IMAGE_2D_EARLY = IMAGE_2D.replace("    if (x < w && y < h) atomicAdd(", "    if (x >= w || y >= h) return;\n    atomicAdd(")
#: A return that is not an early bounds check stays refused (a thread would skip the barriers).
LATE_RETURN = """__global__ void hist_late(const unsigned char* data, unsigned int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned char v = data[i];
        if (v == 0) return;
        atomicAdd(&bins[v], 1u);
    }
}
"""

CASES = [(EARLY_1D, "hist_early"), (EARLY_NO_LAUNCH, "hist_early"), (IMAGE_2D, "hist2d"),
         (IMAGE_2D_EARLY, "hist2d")]


def _made(text: str, name: str):
    model = parse_text(text, "cuda", "h.cu")
    return model, propose("cuda.smem_histogram", model, model.kernel(name))


@pytest.mark.parametrize(("text", "name"), CASES)
def test_offered_and_made(text: str, name: str) -> None:
    model, res = _made(text, name)
    kernel = model.kernel(name)
    facts = compute_facts(kernel.features, kernel.language, None, kernel, model)
    assert load_knowledge().strategy("smem_histogram").applies.evaluate(facts) is True
    assert not isinstance(res, NotApplicable), res
    new = res[0].new_text
    assert "__shared__ unsigned int htam_hist[" in new and "return;" not in new
    # the private histogram's zeroing and flush are outside any guard: two barriers every thread reaches
    body = new.split("{", 1)[1]
    assert body.count("__syncthreads();") == 2


@pytest.mark.parametrize("text", [EARLY_1D, IMAGE_2D_EARLY])
def test_early_return_becomes_a_guarded_body(text: str) -> None:
    name = "hist_early" if "hist_early" in text else "hist2d"
    new = _made(text, name)[1][0]
    assert "if (!(" in new.new_text and "left out" in new.description


def test_2d_grid_is_kept_and_says_why() -> None:
    c = _made(IMAGE_2D, "hist2d")[1][0]
    assert "grid is kept as launched" in c.description and "hist2d<<<grid, block>>>" in c.new_text


def test_a_return_other_than_the_bounds_check_is_refused() -> None:
    res = _made(LATE_RETURN, "hist_late")[1]
    assert isinstance(res, NotApplicable) and "returns on line 5" in res.reason


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize(("text", "name"), CASES)
def test_compiles_for_sm90(text: str, name: str, tmp_path: Path) -> None:
    assert_compiles(_made(text, name)[1][0].new_text, tmp=tmp_path, name="h.cu")
