"""The elementwise shape (``i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) ...``) as the analysis layer
sees it: through locals holding ``threadIdx.x``/``blockDim.x``, operands in any order, the bound on the left, and a
one-line early return; ``cuda.vectorize_float4`` and ``cuda.grid_stride`` apply to each, and refuse a body that
reads a thread-index local. The ``gpu`` test builds the file and compares on ragged sizes."""

from __future__ import annotations

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import fixture_path

FILE = "elementwise_spellings.cu"
KERNELS = ("scale_via_locals", "scale_bound_left", "scale_one_line_return")


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_spelling_takes_float4_and_a_grid_stride_loop(cand, kernel):
    (v,) = cand("cuda.vectorize_float4", FILE, kernel)
    assert "const long long htam_n = (long long)(n);" in v.new_text
    assert f"{kernel}<<<((grid) + 3) / 4, block>>>" in v.new_text
    g = cand("cuda.grid_stride", FILE, kernel)[0]  # (one candidate per grid cap)
    assert "; htam_gi < n; htam_gi += (long long)blockDim.x * gridDim.x) {" in g.new_text  # a counter that cannot wrap
    assert "int i = (int)htam_gi;" in g.new_text


def test_the_locals_stay_and_the_loop_starts_from_the_index_as_written(cand):
    g = cand("cuda.grid_stride", FILE, "scale_via_locals")[0]
    assert ("for (long long htam_gi = blockIdx.x * bs + tid; htam_gi < n; htam_gi += (long long)blockDim.x * gridDim.x) {\n"
            "        int i = (int)htam_gi;\n") in g.new_text
    (v,) = cand("cuda.vectorize_float4", FILE, "scale_via_locals")
    assert "const long long htam_gid = (long long)(blockIdx.x * bs + tid);" in v.new_text  # no orphaned locals


def test_a_one_line_early_return_keeps_the_kernel_intact(cand):
    # regression: the body was copied from the start of its line, which also holds the guard (a syntax error)
    g = cand("cuda.grid_stride", FILE, "scale_one_line_return")[0]
    assert ("for (long long htam_gi = blockDim.x * blockIdx.x + threadIdx.x; htam_gi < n; "
            "htam_gi += (long long)blockDim.x * gridDim.x) {\n"
            "        int i = (int)htam_gi;\n        out[i] = s * in[i];\n    }\n}") in g.new_text


@pytest.mark.parametrize("tid", ["cuda.vectorize_float4", "cuda.grid_stride"])
def test_a_body_reading_a_thread_index_local_is_refused(refuse, tid):
    assert "the guarded code uses tid, which holds a thread index" in refuse(tid, FILE, "uses_tid_local")


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 5, 4096, 100_001])
def test_equivalence_on_gpu(n, tmp_path, cand):
    torch = torch_cuda()
    x = torch.randn(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(n))
    texts = [fixture_path(FILE).read_text()]
    for tid in ("cuda.vectorize_float4", "cuda.grid_stride"):
        for k in KERNELS:  # one transform on one kernel at a time, the others as written
            texts.append(cand(tid, FILE, k)[0].new_text)
    results = []
    for i, text in enumerate(texts):
        outs = [torch.zeros(n, device="cuda") for _ in range(3)]
        call_host(text, "float *o1, float *o2, float *o3, const float *in, float s, int n, int block",
                  "run_all(o1, o2, o3, in, s, n, block)", [*outs, x, 0.75, n, 128], tmp_path, f"es{i}")
        results.append(outs)
    for outs in results:
        for o in outs:
            assert torch.equal(o, 0.75 * x)
