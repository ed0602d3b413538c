"""``cuda.privatize_atomic``: every thread's atomic into one address becomes a register per thread, a block combine
and one atomic per block.

Fixtures (written for these tests; the fact itself is tested in
``tests/source/analysis/test_analysis_uniform_atomics.py``): ``tests/fixtures/transforms/atomic_variants.cu`` holds
the spellings (a guard as an ``if``, an early return, a ternary; ``result``, ``&out[0]``, ``out + k``; a grid-stride
loop with two updates; ``atomicMax``/``atomicMin`` of integers; an integer count; a per-block ``&rows[row]``; a 2-D
block), and ``sum_atomic.cu`` is the new user's kernel. Structure tests check the fold, the combine and the single
atomic; the CPU runs (one host thread per CUDA thread, ``__syncthreads`` a barrier, shuffles exchanged per warp)
compare the start's results with the candidate's on block sizes with a partial last warp, on data whose sums are
exact in any order; nvcc compiles every candidate.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.memory import Ranker, load_knowledge, state_from_profile
from htam_core.memory.facts import compute_facts
from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from htam_core.types.profile import Bottleneck, Profile
from tests.transforms.cpu_emulation import compiler, run_block_main

TID = "cuda.privatize_atomic"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transforms"
FILE = FIXTURES / "atomic_variants.cu"
USER = FIXTURES / "sum_atomic.cu"
KERNELS = ["sum_guarded", "sum_return", "sum_offset", "sum_stride", "max_int", "min_unsigned", "count_positive",
           "row_sums", "sum_2d_block"]


def _propose(kernel: str, text: str | None = None, path: Path = FILE):
    model = parse_text(text, "cuda", str(path)) if text is not None else load(path)
    return registry.propose(TID, model, model.kernel(kernel))


def _plain(kernel: str, text: str | None = None, path: Path = FILE):
    """The step's in-place candidate (the grid and the body's shape kept), the last one proposed."""
    cs = _propose(kernel, text, path)
    assert not isinstance(cs, NotApplicable), cs.reason
    plain = [c for c in cs if c.params["form"] != "grid_stride"]
    assert len(plain) == 1 and cs[-1] is plain[0]
    return plain[0]


def _body(text: str, kernel: str) -> str:
    body = text[text.index(f"void {kernel}("):]
    return body[: body.index("\n}\n")]


# ---------------------------------------------------------------- the step
@pytest.mark.parametrize(("kernel", "fold", "final"), [
    ("sum_guarded", "if (i < n) htam_acc += static_cast<float>(x[i]);", "atomicAdd(result, htam_acc);"),
    ("sum_return", "htam_acc += static_cast<float>(2.0f * x[i]);", "atomicAdd(&out[0], htam_acc);"),
    ("sum_offset", "htam_acc += static_cast<float>(v);", "atomicAdd(out + k, htam_acc);"),
    ("max_int", "if (i < n) { const int htam_v = static_cast<int>(x[i] - 7); if (htam_v > htam_acc) htam_acc = htam_v; }",
     "atomicMax(best, htam_acc);"),
    ("count_positive", "htam_acc += static_cast<int>(x[i] > 0.0f ? 1 : 0);", "atomicAdd(count, htam_acc);"),
    ("row_sums", "htam_acc += static_cast<float>(m[row * cols + c]);", "atomicAdd(&rows[row], htam_acc);"),
])
def test_the_update_is_folded_and_one_atomic_is_left(kernel, fold, final):
    c = _plain(kernel)
    body = _body(c.new_text, kernel)
    assert fold in body
    head, combine = body.split("__syncthreads();")
    assert "__shfl_down_sync(htam_mask" in head and f"if (htam_lane == 0) {final}" in combine
    fn = final.split("(")[0]
    assert body.count(f"{fn}(") == 1  # the kernel's atomic only once, at the end
    assert "block-size generic" in c.description.split(":")[0]


def test_identities_and_numeric_contract():
    by = {k: _plain(k) for k in ("sum_guarded", "max_int", "min_unsigned", "count_positive", "sum_stride")}
    assert "float htam_acc = 0;" in by["sum_guarded"].new_text and by["sum_guarded"].reorders_only
    assert "int htam_acc = (-2147483647 - 1);" in by["max_int"].new_text and not by["max_int"].changes_numerics
    assert "unsigned int htam_acc = 0xffffffffu;" in by["min_unsigned"].new_text
    assert not by["count_positive"].changes_numerics  # an integer sum is exact in any order
    assert by["sum_stride"].changes_numerics and by["sum_stride"].reorders_only
    assert by["sum_stride"].new_text.count("htam_acc += static_cast<double>(") == 2  # both updates folded


def test_an_early_return_keeps_the_body_in_a_lambda():
    c = _plain("sum_return")
    body = _body(c.new_text, "sum_return")
    assert body.index("[&] {") < body.index("return;") < body.index("}();") < body.index("__syncthreads();")
    assert c.params["form"] == "in_lambda" and "lambda" in c.description


def test_a_2d_block_uses_the_linear_rank_and_the_launch_is_reported():
    c = _plain("sum_2d_block")
    assert "(threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x" in c.new_text
    assert c.params["block"] == [128]


_BASE = """
__global__ void k(const float *x, float *out, int n, int k2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    BODY
}
"""


@pytest.mark.parametrize(("body", "why"), [
    ("if (i < n) atomicAdd(&out[i], x[i]);", "no atomic update into one address"),
    ("out[i] = x[i];", "no atomic update"),
    ("if (i < n) { float o = atomicAdd(out, x[i]); out[1] = o; }", "no atomic update into one address"),
    ("if (i < n) atomicAdd(out, x[i] * out[3]);", "also accessed on line"),
    ("if (i < n) atomicAdd(out, x[i]); else atomicAdd(out + 1, 1.0f);", "2 accumulations"),
    ("int r = 0; if (n > 4) r = 1; if (i < n) atomicAdd(&out[r], x[i]);", "not declared once"),
    ("for (int r = 0; r < 2; ++r) if (i < n) atomicAdd(&out[r], x[i]);", "not declared once"),
    ("float *dst = out + k2; if (i >= n) return; atomicAdd(dst, x[i]);", "returns early"),
    ("float htam_acc = 1.0f; if (i < n) atomicAdd(out, x[i] + htam_acc);", "already declared"),
])
def test_refusals_say_why(body, why):
    r = _propose("k", _BASE.replace("BODY", body))
    assert isinstance(r, NotApplicable)
    assert why in r.reason, r.reason


def test_max_of_a_template_type_is_refused():
    text = ("template <typename T> __global__ void k(const T *x, T *out, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicMax(out, x[i]);\n}\n")
    r = _propose("k", text)
    assert isinstance(r, NotApplicable) and "is not privatized here" in r.reason


def test_a_half_instantiation_is_refused_and_a_float_one_made():
    text = ("#include <cuda_fp16.h>\ntemplate <typename T> __global__ void k(const T *x, T *out, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicAdd(out, x[i]);\n}\n"
            "void run(const TYPE *x, TYPE *o, int n) { k<TYPE><<<(n + 255) / 256, 256>>>(x, o, n); }\n")
    r = _propose("k", text.replace("TYPE", "__half"))
    assert isinstance(r, NotApplicable) and "__half" in r.reason
    c = _plain("k", text.replace("TYPE", "float"))
    assert "T htam_acc = static_cast<T>(0);" in c.new_text


_ALIASED = ("#include <cuda_fp16.h>\nALIAS\n__global__ void k(const E *x, E *out, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) OP(out, x[i]);\n}\n"
            "void run(const E *x, E *o, int n) { k<<<(n + 255) / 256, 256>>>(x, o, n); }\n")


@pytest.mark.parametrize(("alias", "elem", "op", "ident"), [
    ("typedef unsigned long long u64;", "u64", "atomicMax", "u64 htam_acc = 0ull;"),
    ("using i32 = int;", "i32", "atomicMin", "i32 htam_acc = 2147483647;"),
    ("typedef unsigned int idx_t;\ntypedef idx_t cnt_t;", "cnt_t", "atomicMax", "cnt_t htam_acc = 0u;"),
])
def test_a_max_of_an_aliased_integer_reads_the_resolved_type(alias, elem, op, ident):
    """The identity is chosen from the type the alias resolves to (the analysis' type facts), not its spelling."""
    c = _plain("k", _ALIASED.replace("ALIAS", alias).replace("OP", op).replace("E", elem))
    assert ident in c.new_text


def test_a_sum_of_an_aliased_half_is_refused_as_half():
    r = _propose("k", _ALIASED.replace("ALIAS", "typedef __half h16;").replace("OP", "atomicAdd").replace("E", "h16"))
    assert isinstance(r, NotApplicable) and "__half" in r.reason, getattr(r, "reason", r)


def test_a_max_of_a_template_bound_at_every_launch_is_privatized():
    text = ("template <typename T> __global__ void k(const T *x, T *out, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicMax(out, x[i]);\n}\n"
            "void run(const int *x, int *o, int n) { k<int><<<(n + 255) / 256, 256>>>(x, o, n); }\n")
    assert "T htam_acc = (-2147483647 - 1);" in _plain("k", text).new_text
    deduced = text.replace("k<int><<<", "k<<<")  # a launch that deduces T: its type is not known here
    assert isinstance(_propose("k", deduced), NotApplicable)


# ---------------------------------------------------------------- the ranking
def test_the_users_kernel_ranks_the_step_first_and_not_vectorize():
    model = load(USER)
    k = model.kernel("sum_atomic")
    facts = compute_facts(k.features, k.language, kernel=k, model=model)
    assert facts["uniform_atomic"] is True
    profile = Profile("sum_atomic", bottleneck=Bottleneck("memory-bound"))
    steps = Ranker(load_knowledge(), None).rank(state_from_profile(profile), [], k.features, k.language, profile,
                                                top=10, kernel=k, model=model)
    names = [s.strategy for s in steps]
    assert names[0] == "privatize_uniform_atomic", names
    assert "vectorize_loads" not in names and "privatize_atomics" not in names
    cs = registry.propose(TID, model, k)
    assert [c.params["form"] for c in cs] == ["grid_stride", "inline"]  # the user's file launches it
    assert all("atomicAdd(result, htam_acc);" in c.new_text for c in cs)


def test_a_single_thread_atomic_is_not_contention():
    text = _BASE.replace("BODY", "if (threadIdx.x == 0) atomicAdd(out, x[blockIdx.x]);")
    k = parse_text(text, "cuda").kernel("k")
    assert compute_facts(k.features, k.language, kernel=k)["uniform_atomic"] is False


# ---------------------------------------------------------------- CPU runs
_MAIN = """
int main() {
    const int n = 2333, cols = 301, rows = 3;
    std::vector<float> x(n), m(rows * cols), r(4, 0.0f), r2(4, 0.0f), rs(rows, 0.0f);
    std::vector<double> xd(n), rd(1, 0.0);
    std::vector<int> xi(n), ri(1, -1000000), ci(1, 0);
    std::vector<unsigned> xu(n), ru(1, 4000000000u);
    for (int k = 0; k < n; ++k) {
        x[k] = (float)((k * 7) % 13) - 6.0f; xd[k] = (double)((k * 5) % 9) - 2.0;
        xi[k] = (k * 37) % 1001 - 500; xu[k] = (unsigned)((k * 91 + 17) % 5003);
    }
    for (int k = 0; k < rows * cols; ++k) m[k] = (float)(k % 11) - 5.0f;
    CALL
    for (float v : r) std::printf("%.9g\\n", v);
    for (float v : rs) std::printf("%.9g\\n", v);
    std::printf("%.17g\\n%d\\n%d\\n%u\\n", rd[0], ri[0], ci[0], ru[0]);
    return 0;
}
"""
_CALLS = {
    "sum_guarded": "htam_launch((n + 99) / 100, 100, 1, [&] { sum_guarded(x.data(), r.data(), n); });",
    "sum_return": "htam_launch((n + 63) / 64, 64, 1, [&] { sum_return(x.data(), r.data(), n); });",
    "sum_offset": "htam_launch((n + 32) / 33, 33, 1, [&] { sum_offset(x.data(), r.data(), n, 2); });",
    "sum_stride": "htam_launch(3, 200, 1, [&] { sum_stride(xd.data(), rd.data(), n); });",
    "max_int": "htam_launch((n + 127) / 128, 128, 1, [&] { max_int(xi.data(), ri.data(), n); });",
    "min_unsigned": "htam_launch(4, 70, 1, [&] { min_unsigned(xu.data(), ru.data(), n); });",
    "count_positive": "htam_launch((n + 255) / 256, 256, 1, [&] { count_positive(x.data(), ci.data(), n); });",
    "row_sums": "htam_launch2((cols + 95) / 96, rows, 96, 1, [&] { row_sums(m.data(), rs.data(), cols); });",
    "sum_2d_block": "htam_launch((n + 119) / 120, 40, 3, [&] { sum_2d_block(x.data(), r.data(), n); });",
}


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_privatized_kernel_gives_the_same_result_on_the_cpu(kernel, tmp_path):
    main = _MAIN.replace("CALL", _CALLS[kernel])
    want = run_block_main(FILE.read_text(), kernel, main, tmp_path)
    untouched = run_block_main(FILE.read_text(), kernel, _MAIN.replace("CALL", ""), tmp_path)
    assert want != untouched  # the kernel changed its output: a candidate that drops updates fails
    c = _plain(kernel)
    assert run_block_main(c.new_text, kernel, main, tmp_path) == want


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("kernel", KERNELS)
def test_candidates_compile(kernel, tmp_path):
    for c in _propose(kernel):
        assert_nvcc_compiles(c.new_text, tmp_path)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_users_kernel_compiles(tmp_path):
    c = _plain("sum_atomic", path=USER)
    assert_nvcc_compiles(c.new_text, tmp_path)


def test_a_kernel_in_a_python_string_is_privatized_too():
    text = ('from torch.utils.cpp_extension import load_inline\n\ncuda_src = """\n'
            "__global__ void sum_kernel(const float* x, float* out, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n    atomicAdd(out, x[i]);\n}\n"
            '"""\nmod = load_inline(name="s", cpp_sources="", cuda_sources=cuda_src, functions=[])\n')
    model = parse_text(text, "python", "k.py")
    assert model.kernel("sum_kernel").language == "cuda-in-python"
    (c,) = registry.propose(TID, model, model.kernel("sum_kernel"))  # no launch in the file: the in-place form only
    assert "if (htam_lane == 0) atomicAdd(out, htam_acc);" in c.new_text and c.new_text.count('"""') == 2


# ---------------------------------------------------------------- the coarsened form (grid-stride, then privatized)
_OWN = """
__global__ void k(const float *x, float *out, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { BODY }
}
LAUNCH
"""
_RUN = "void run(const float *x, float *out, float *y, int n) { k<<<(n + 255) / 256, 256>>>(x, out, y, n); }"


@pytest.mark.parametrize(("kernel", "fn"), [("sum_guarded", "atomicAdd"), ("max_int", "atomicMax")])
def test_a_grid_wide_total_gets_the_grid_stride_form_first(kernel, fn):
    cs = _propose(kernel)
    assert not isinstance(cs, NotApplicable), cs.reason
    first = cs[0]
    assert first.params["form"] == "grid_stride" and first.params["after"] == "cuda.grid_stride"
    body = _body(first.new_text, kernel)
    assert "for (long long htam_gi = blockIdx.x * blockDim.x + threadIdx.x; htam_gi < n; htam_gi += " in body
    assert "int i = (int)htam_gi;" in body  # the loop counts in 64 bits, the kernel's int index declared from it
    assert body.count(f"{fn}(") == 1 and f"if (htam_lane == 0) {fn}(" in body
    host = first.new_text[first.new_text.index("void run_all"):]
    assert f"{kernel}<<<htam_sm_grid(" in host.replace(" ", "").replace("<<<htam_sm_grid(", "<<<htam_sm_grid(") or \
        f"{kernel}<<<htam_sm_grid(" in host
    assert "grid-stride loop" in first.description and "one " + fn in first.description


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", ["sum_guarded", "max_int", "count_positive"])
def test_the_grid_stride_form_gives_the_same_total_on_a_small_grid(kernel, tmp_path):
    """The coarsened kernel on 3 blocks (each thread many elements) gives the start's total on its full grid."""
    text = FILE.read_text()
    if kernel == "count_positive":  # give it a launch in the file, as the other two have
        text = text.replace("    max_int<<<", "    count_positive<<<(n + 255) / 256, 256>>>(x, ri, n);\n    max_int<<<")
    model = parse_text(text, "cuda", str(FILE))
    cs = registry.propose(TID, model, model.kernel(kernel))
    assert not isinstance(cs, NotApplicable) and cs[0].params["form"] == "grid_stride"
    want = run_block_main(text, kernel, _MAIN.replace("CALL", _CALLS[kernel]), tmp_path)
    small = _CALLS[kernel].replace("htam_launch((n + 99) / 100,", "htam_launch(3,").replace(
        "htam_launch((n + 127) / 128,", "htam_launch(3,").replace("htam_launch((n + 255) / 256,", "htam_launch(3,")
    assert small != _CALLS[kernel]
    assert run_block_main(text, kernel, _MAIN.replace("CALL", small), tmp_path) != want  # the start misses elements
    assert run_block_main(cs[0].new_text, kernel, _MAIN.replace("CALL", small), tmp_path) == want


@pytest.mark.parametrize(("body", "launch", "grid_stride"), [
    ("atomicAdd(out, x[i] * x[i]);", _RUN, True),                    # the control: a grid-wide total alone
    ("atomicAdd(out, x[i]); y[i] = 2.0f * x[i];", _RUN, False),      # another output: its grid is the element's
    ("atomicAdd(out, x[i] * x[i]);", "", False),                      # launched elsewhere: the grid is not ours
    ("atomicAdd(&out[blockIdx.y], x[i]);", _RUN, False),             # a per-block total: the grid is its contract
])
def test_the_grid_stride_form_only_where_the_grid_is_free(body, launch, grid_stride):
    cs = _propose("k", _OWN.replace("BODY", body).replace("LAUNCH", launch))
    assert not isinstance(cs, NotApplicable), cs.reason
    assert (cs[0].params["form"] == "grid_stride") is grid_stride
    assert cs[-1].params["form"] != "grid_stride"


_COUNT = """
__global__ void count_matches(const int *keys, int n, int key, unsigned int *count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && keys[i] == key) {
        atomicAdd(count, 1u);
    }
}
void run(const int *keys, int n, int key, unsigned int *count) {
    count_matches<<<(n + 255) / 256, 256>>>(keys, n, key, count);
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_count_under_a_data_equality_is_privatized(tmp_path):
    """Regression (probe2 c06b): ``if (i < n && keys[i] == key) atomicAdd(count, 1u);`` was read as one thread's
    block result (as under ``if (tid == 0)``), so the step was refused and the grid taken as free of any block
    result. The data test selects elements: the count is privatized, grid-stride first, and compiles."""
    model = parse_text(_COUNT, "cuda", "count.cu")
    k = model.kernel("count_matches")
    facts = compute_facts(k.features, k.language, kernel=k, model=model)
    assert facts["uniform_atomic"] is True and facts["grid_free_tree"] is False
    cs = registry.propose(TID, model, k)
    assert not isinstance(cs, NotApplicable), cs.reason
    assert [c.params["form"] for c in cs] == ["grid_stride", "inline"]
    assert all("keys[i] == key" in c.new_text and c.new_text.count("atomicAdd(") == 1 for c in cs)
    for c in cs:
        assert_nvcc_compiles(c.new_text, tmp_path)
