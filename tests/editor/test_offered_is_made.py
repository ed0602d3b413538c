"""A step is shown as offered (``makeable`` in ``htam suggest``, a code action in the editor) only when its
transform makes it; and the structural pattern steps a ranker fact selects are made on the spellings the fact
accepts (the ranker and the transform read the same analysis fact, so a step is never ranked as the pattern's
step and then refused because the transform reads the code another way).

Over the test fixtures' kernels (``tests/fixtures/corpus``, CUDA and Triton): for every strategy the ranker keeps
(its predicate is not false on the kernel's facts) whose verdict (:func:`htam_core.editor.makeable.check`, what
``htam suggest`` prints) is makeable, the strategy's transform (:func:`htam_core.transforms.registry.propose`)
gives at least one candidate with edits, and the edited file still holds the kernel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.editor.makeable import check
from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
FILES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".cu", ".py") and not p.name.startswith("broken"))
KB = load_knowledge()


def _kept(model, kernel) -> list:
    """The strategies with a transform that the ranker keeps for ``kernel`` (predicate not false)."""
    facts = compute_facts(kernel.features, kernel.language, kernel=kernel, model=model)
    return [s for s in KB.strategies if s.transform and s.handles(kernel.language)
            and s.applies.evaluate(facts) is not False]


def _check_file(path: Path) -> int:
    """Check every makeable verdict of ``path``'s kernels against its transform; the number checked."""
    model = load(path)
    checked = 0
    for kernel in (k for k in model.kernels if not k.incomplete):
        for s in _kept(model, kernel):
            v = check(s, model, kernel)
            if not v.makeable:
                assert v.reason, (kernel.name, s.id)  # a refusal always says why
                continue
            made = registry.propose(s.transform, model, kernel)
            assert not isinstance(made, NotApplicable), (kernel.name, s.id, made.reason)
            assert made and made[0].edits, (kernel.name, s.id)
            assert v.proposal is not None and v.proposal.ok and v.proposal.edits, (kernel.name, s.id)
            after = parse_text(made[0].new_text, model.file_language, str(path))
            assert any(k.answers_to(kernel.name) for k in after.kernels), (kernel.name, s.id)
            checked += 1
    return checked


def test_every_step_marked_makeable_is_made_by_its_transform():
    counts = {p.name: _check_file(p) for p in FILES}
    assert sum(counts.values()) >= len(FILES), counts  # the check ran on many steps, not on none
    assert sum(1 for n in counts.values() if n) >= len(FILES) // 2, counts


# The spellings of the trial's misses (written for this test): a flattened 1-D matmul index, a histogram through
# pointer arithmetic, a thread-per-row while loop. Each pattern step the ranker keeps on them is made.
_SPELLINGS = """
#define K 64
#define NC 64
__global__ void mm_flat(const float *A, const float *B, float *C, int M) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int row = idx / NC, col = idx % NC;
    if (row >= M) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * NC + col];
    C[row * NC + col] = acc;
}
__global__ void mm_2d(const float *A, const float *B, float *C, int M) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < NC) {
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * NC + col];
        C[row * NC + col] = acc;
    }
}
__global__ void hist_ptr(const unsigned char *data, unsigned int *bins, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) atomicAdd(bins + data[i], 1u);
}
__global__ void hist_rev(const int *data, unsigned int *bins, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) atomicAdd((data[i] & (NC - 1)) + bins, 1u);
}
__global__ void rowmax_while(const float *x, float *out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float m = x[r * cols];
        int c = 1;
        while (c < cols) { m = fmaxf(m, x[r * cols + c]); ++c; }
        out[r] = m;
    }
}
void run(const float *A, const float *B, float *C, const unsigned char *d, const int *di, unsigned int *h,
         float *o, int M, int n) {
    mm_flat<<<(M * NC + 255) / 256, 256>>>(A, B, C, M);
    mm_2d<<<dim3(NC / 16, (M + 15) / 16), dim3(16, 16)>>>(A, B, C, M);
    hist_ptr<<<(n + 255) / 256, 256>>>(d, h, n);
    hist_rev<<<(n + 255) / 256, 256>>>(di, h, n);
    rowmax_while<<<(M + 127) / 128, 128>>>(A, o, M, K);
}
"""
PATTERN_STEPS = ("smem_tiling", "register_blocking", "smem_histogram", "warp_per_row")


@pytest.mark.parametrize(("kernel", "expected"), [
    ("mm_flat", set()), ("mm_2d", {"smem_tiling", "register_blocking"}), ("hist_ptr", {"smem_histogram"}),
    ("hist_rev", {"smem_histogram"}), ("rowmax_while", {"warp_per_row"}),
])
def test_a_pattern_step_the_ranker_keeps_is_made(kernel, expected):
    model = parse_text(_SPELLINGS, "cuda", "/tmp/offered.cu")
    k = model.kernel(kernel)
    kept = {s.id: s for s in _kept(model, k) if s.id in PATTERN_STEPS}
    assert set(kept) >= expected, sorted(kept)
    for sid, s in kept.items():
        v = check(s, model, k)
        assert v.makeable, (kernel, sid, v.reason)
