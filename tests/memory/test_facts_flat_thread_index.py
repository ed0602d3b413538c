"""``flat_thread_index``: a 2-D output (row, column) computed from one flattened 1-D global thread index split by
``/`` and ``%`` (analysis layer: ``KernelFacts.flat_index_split``). The matmul tiling steps read the same fact: a 2-D
tile needs a 2-D block, so where the 2-D remap proves the form (``flat_remappable``) they are ranked and made after
it, and elsewhere neither ranked nor made, their refusal saying so. Several spellings of the split; kernels written
for these tests."""

from __future__ import annotations

import pytest

from htam_core.memory import Ranker, state_from_profile
from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from htam_core.types.profile import Bottleneck, Profile

_HEAD = "#define K 64\n#define NC 64\n__global__ void mm(const float *A, const float *B, float *C, int M, int N)\n{\n"
_LOOP = "        float acc = 0.f;\n        for (int k = 0; k < K; ++k) acc += A[ROW * K + k] * B[k * NCOL + COL];\n" \
        "        C[ROW * NCOL + COL] = acc;\n"
FLAT = {
    "macro": "    int idx = blockIdx.x * blockDim.x + threadIdx.x;\n    int row = idx / NC, col = idx % NC;\n"
             "    if (row < M) {\n" + _LOOP.replace("NCOL", "NC").replace("ROW", "row").replace("COL", "col") + "    }\n",
    "param_tid_first": "    unsigned g = threadIdx.x + blockIdx.x * blockDim.x;\n    unsigned col = g % N;\n"
                       "    unsigned row = g / N;\n    if (row >= M) return;\n"
                       + _LOOP.replace("NCOL", "N").replace("ROW", "row").replace("COL", "col"),
    "inline": "    const int t = blockDim.x * blockIdx.x + threadIdx.x;\n    if (t >= M * N) return;\n"
              + _LOOP.replace("NCOL", "N").replace("ROW", "(t / N)").replace("COL", "(t % N)"),
}
NOT_FLAT = {
    "two_d": "    int col = blockIdx.x * blockDim.x + threadIdx.x;\n    int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
             "    if (row < M && col < N) {\n"
             + _LOOP.replace("NCOL", "N").replace("ROW", "row").replace("COL", "col") + "    }\n",
    "div_only": "    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;\n    int lane = threadIdx.x % 32;\n"
                "    if (row < M) C[row * 32 + lane] = A[row * 32 + lane];\n",
}


def _kernel(body: str):
    width = "NC" if "% NC" in body else "N"  # the launch covers the rows times the split's row length
    model = parse_text(_HEAD + body + "}\nvoid run(const float *A, const float *B, float *C, int M, int N) "
                       f"{{ mm<<<(M * {width} + 255) / 256, 256>>>(A, B, C, M, N); }}\n", "cuda", "/tmp/flat.cu")
    return model, model.kernel("mm")


@pytest.mark.parametrize("name", list(FLAT))
def test_a_flattened_index_split_by_div_and_mod_is_the_fact(name):
    model, k = _kernel(FLAT[name])
    g, c = analyze(model, k).flat_index_split()
    assert {s.name for s in g.free_symbols} == {"blockIdx.x", "blockDim.x", "threadIdx.x"}
    assert str(c) in ("64", "N")
    assert compute_facts(k.features, k.language, kernel=k)["flat_thread_index"] is True


@pytest.mark.parametrize("name", list(NOT_FLAT))
def test_a_2d_index_or_a_warp_split_is_not(name):
    model, k = _kernel(NOT_FLAT[name])
    assert analyze(model, k).flat_index_split() is None
    assert compute_facts(k.features, k.language, kernel=k)["flat_thread_index"] is False


def _ranked(k, model=None) -> list[str]:
    profile = Profile(k, bottleneck=Bottleneck("memory-bound"))
    steps = Ranker(load_knowledge(), None).rank(state_from_profile(profile), [], k.features, k.language, profile,
                                                top=40, kernel=k, model=model)
    return [s.strategy for s in steps]


#: The flat kernels whose split the 2-D remap proves (named row and column locals), and the one it does not.
REMAPPABLE = ("macro", "param_tid_first")


@pytest.mark.parametrize("name", list(FLAT))
def test_the_tiling_steps_are_ranked_and_made_after_the_remap_where_it_is_proved(name):
    model, k = _kernel(FLAT[name])
    names = _ranked(k, model)
    remap = name in REMAPPABLE
    assert compute_facts(k.features, k.language, kernel=k, model=model)["flat_remappable"] is remap
    for step, tid in (("smem_tiling", "cuda.smem_tiling_matmul"), ("register_blocking", "cuda.register_tile_matmul")):
        assert (step in names) is remap, names
        r = registry.propose(tid, model, k)
        if remap:
            assert isinstance(r, list) and r[0].params["after"] == "cuda.flat_index_2d", getattr(r, "reason", r)
        else:
            assert isinstance(r, NotApplicable) and "1-D thread index split" in r.reason, getattr(r, "reason", r)
    assert ("flat_index_2d" in names) is remap


def test_the_2d_control_is_ranked_and_made():
    model, k = _kernel(NOT_FLAT["two_d"])
    names = _ranked(k)
    assert "smem_tiling" in names and "register_blocking" in names
    assert not isinstance(registry.propose("cuda.smem_tiling_matmul", model, k), NotApplicable)
