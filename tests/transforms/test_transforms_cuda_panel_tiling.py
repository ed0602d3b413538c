"""``cuda.smem_panel_tiling``: a register-tiled NT dot nest (each thread a TM x TN tile of ``q @ k^T``) gets both
operands' row panels staged in shared memory, in the kernel or in the ``__device__`` helper it calls.

Fixtures (``tests/fixtures/panel``, written for these tests): a batched (``blockIdx.z``) kernel with the nest in its
body, the nest in a helper called by name, and the nest in a helper reached through a function-pointer template
argument two host functions up (the shape of llm.c's ``trimat_forward.cu``). Structure tests check what carries the
semantics; the CPU runs (one host thread per CUDA thread, ``__syncthreads`` a barrier) check that the staged kernel
gives exactly the original's outputs, a partial last reduction step included; nvcc compiles the candidates.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest

from htam_core.source import load, parse_text
from htam_core.source.analysis.callees import device_callees
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import nvcc_check
from tests.transforms.cpu_emulation import compiler, run_block_main

TID = "cuda.smem_panel_tiling"
HERE = Path(__file__).resolve().parents[1] / "fixtures" / "panel"


def _propose(name: str, kernel: str, tid: str = TID, text: str | None = None):
    model = parse_text(text, "cuda", str(HERE / name)) if text is not None else load(HERE / name)
    return model, registry.propose(tid, model, model.kernel(kernel))


def test_batched_kernel_nest_is_staged():
    model, cs = _propose("nt_tiles.cu", "nt_tiles")
    assert not isinstance(cs, NotApplicable), cs.reason
    assert [c.params["bk"] for c in cs] == [32, 16]
    c = cs[0]
    assert (c.params["bm"], c.params["bn"], c.params["tm"], c.params["tn"]) == (16, 16, 4, 4)
    assert c.params["batched"] and c.params["callee"] is None and c.params["float4"]
    new = c.new_text
    # the panels: each block's 16 rows of q and k, reduction-major, padded
    assert "__shared__ alignas(16) float htam_pa[32][16 + 4];" in new
    # the panel loads spell the batch and block offsets of the original index, the row stride and the step
    assert "q[" in new and "blockIdx.z" in new.split("htam_pa[htam_c][htam_r] =")[1].split(";")[0]
    assert "htam_s0 + htam_c < HS ?" in new
    # the dot loop became a read of the thread's sum; the epilogue store is the original's
    assert "for (int s = 0; s < HS; ++s)" not in new
    assert "val = htam_acc[io][jo];" in new
    assert "p[(blockIdx.z * T + i) * T + j] = val * alpha;" in new
    # the triangle skip: evaluated before the staging, returned after it (every thread loads and syncs)
    assert "if (j0 > i0)" not in new
    stage, nest = new.split("if (htam_skip) return;")
    assert "const bool htam_skip = (j0 > i0);" in stage and "__syncthreads_or(!htam_skip)" in stage
    assert stage.count("__syncthreads();") == 2 and "for (int io = 0; io < 4; ++io)" in nest


def test_helper_called_by_name_is_staged_and_the_kernel_is_unchanged():
    model, cs = _propose("callee_tiles.cu", "scores")
    assert not isinstance(cs, NotApplicable), cs.reason
    c = cs[0]
    assert c.params["callee"] == "tile_dot" and not c.params["batched"]  # the batch is in the kernel's row pointers
    helper = next(d for d in model.device_functions if d.name == "tile_dot")
    assert all(helper.span.start <= e.start_byte and e.end_byte <= helper.span.end for e in c.edits)
    kernel = model.kernel("scores")
    assert model.text[kernel.span.start:kernel.span.end] in c.new_text
    assert "q[(128 * QS * blockIdx.x" not in c.new_text and "q[" in c.new_text


def test_template_function_pointer_helper_two_hosts_up():
    model = load(HERE / "template_callee.cu")
    callees = device_callees(model, model.kernel("scores_t"))
    assert [(c.name, c.via, c.bound, c.top_level) for c in callees] == [
        ("naive_dot", "dot", ("naive_dot", "row_dot"), True), ("row_dot", "dot", ("naive_dot", "row_dot"), True)]
    naive = callees[0]
    # the helper's facts are facts of the real file: its dot loop and its reads, at their own bytes
    (dot,) = naive.facts.matmul_loops()
    reads = [a for a in naive.facts.accesses if dot.id in a.loops]
    assert sorted(model.text[a.span[0]:a.span[1]] for a in reads) == ["k[j * KS + s]", "q[i * QS + s]"]
    assert str(reads[0].index) == "QS*(128*blockIdx.x + io + 8*threadIdx.x) + s"
    cs = registry.propose(TID, model, model.kernel("scores_t"))
    assert not isinstance(cs, NotApplicable), cs.reason
    assert {c.params["callee"] for c in cs} == {"naive_dot"}
    assert (cs[0].params["bm"], cs[0].params["bn"]) == (128, 128)
    row_dot = next(d for d in model.device_functions if d.name == "row_dot")
    assert model.text[row_dot.span.start:row_dot.span.end] in cs[0].new_text


def test_the_smem_tiling_step_makes_it():
    """The knowledge base's shared-memory tiling step (``cuda.smem_tiling_matmul``) takes the tile nest too."""
    model, cs = _propose("template_callee.cu", "scores_t", "cuda.smem_tiling_matmul")
    assert not isinstance(cs, NotApplicable), cs.reason
    assert {c.transform_id for c in cs} == {TID}


@pytest.mark.parametrize(("old", "new", "needle"), [
    ("if (j0 > i0)\n        return;", "if (i0 >= T)\n        return;", "reads T, which is not a thread or block index"),
    ("k[(blockIdx.z * T + j) * HS + s]", "k[s * T + blockIdx.z * T * HS + j]", "is not read along its row"),
    ("float val = 0.0f;", "float val = p[i * T + j];", "not a constant"),
    ("dim3(4, 4)", "dim3(4, 4, 2)", "threads in z"),
    ("for (int s = 0; s < HS; ++s)\n", "for (int s = 0; s < HS; s += 2)\n", "is not `for (s = 0; s < K; ++s)`"),
])
def test_refusals(old, new, needle):
    text = (HERE / "nt_tiles.cu").read_text()
    assert old in text
    _, r = _propose("nt_tiles.cu", "nt_tiles", text=text.replace(old, new))
    assert isinstance(r, NotApplicable) and needle in r.reason, getattr(r, "reason", r)


def test_a_helper_called_in_a_branch_is_refused():
    text = (HERE / "callee_tiles.cu").read_text()
    text = text.replace("    tile_dot(r, T, k, C3, q, C3, HS, 0.25f);", "    if (nh >= 0) { tile_dot(r, T, k, C3, q, C3, HS, 0.25f); }")
    _, r = _propose("callee_tiles.cu", "scores", text=text)
    assert isinstance(r, NotApplicable) and "tile_dot: its call in scores is inside a branch" in r.reason


def test_a_thread_dependent_return_before_the_call_is_refused():
    text = (HERE / "callee_tiles.cu").read_text().replace("if (blockIdx.y > blockIdx.x)", "if (threadIdx.y > 2)")
    _, r = _propose("callee_tiles.cu", "scores", text=text)
    assert isinstance(r, NotApplicable) and "thread-dependent return before the call" in r.reason


_NT_MAIN = """
#include <cmath>
int main() {
    const int B = 2, T = 32, HS = HSV;
    std::vector<float> q((size_t)B * T * HS), k((size_t)B * T * HS), p((size_t)B * T * T, -7.0f);
    for (size_t n = 0; n < q.size(); ++n) { q[n] = std::sin(0.37f * (float)n); k[n] = std::cos(0.11f * (float)n) - 0.3f; }
    htam_launch3(T / 16, T / 16, B, 4, 4, [&] { nt_tiles(p.data(), q.data(), k.data(), T, HS, 0.5f); });
    for (float v : p) std::printf("%.9g\\n", v);
    return 0;
}
"""

_SCORES_MAIN = """
#include <cmath>
int main() {
    const int B = 2, NH = 2, T = 32, C = NH * HSV;
    std::vector<float> inp((size_t)B * T * 3 * C), out((size_t)B * NH * T * T, -7.0f);
    for (size_t n = 0; n < inp.size(); ++n) inp[n] = std::sin(0.23f * (float)n) + 0.01f * (float)(n % 7);
    htam_launch3(T / 16, T / 16, NH * B, 4, 4, [&] { scores(out.data(), inp.data(), T, C, NH); });
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("hs", [37, 64])
def test_staged_kernel_gives_the_same_outputs_on_the_cpu(hs, tmp_path):
    text = (HERE / "nt_tiles.cu").read_text()
    _, cs = _propose("nt_tiles.cu", "nt_tiles")
    main = _NT_MAIN.replace("HSV", str(hs))
    want = run_block_main(text, "nt_tiles", main, tmp_path)
    assert sum(v == -7.0 for v in want) > 0 and sum(v != -7.0 for v in want) > 0  # the skip and the sums
    for c in cs:  # both depths: 37 leaves a partial last step at 32 and at 16
        got = run_block_main(c.new_text, "nt_tiles", main, tmp_path)
        assert got == want, c.description


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
def test_staged_helper_gives_the_same_outputs_on_the_cpu(tmp_path):
    text = (HERE / "callee_tiles.cu").read_text()
    _, cs = _propose("callee_tiles.cu", "scores")
    main = _SCORES_MAIN.replace("HSV", "37")
    want = run_block_main(text, "scores", main, tmp_path, helpers=("tile_dot",))
    assert all(math.isfinite(v) for v in want) and len(set(want)) > 100
    got = run_block_main(cs[-1].new_text, "scores", main, tmp_path, helpers=("tile_dot",))
    assert got == want


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize(("name", "kernel"), [("nt_tiles.cu", "nt_tiles"), ("template_callee.cu", "scores_t")])
def test_candidates_compile_without_spills(name, kernel, tmp_path):
    _, cs = _propose(name, kernel)
    for c in cs:
        text = c.new_text + ("\ntemplate void launch_with<naive_dot>(float *, const float *, int, int, int, int);\n"
                             if kernel == "scores_t" else "")
        p = nvcc_check(text, flags=("-std=c++17", "-Xptxas", "-v"), tmp=tmp_path, name="cand.cu")
        assert p.returncode == 0, p.stderr[-3000:]
        assert " 0 bytes spill stores" in p.stderr, p.stderr[-2000:]


LLMC = Path(os.environ.get("HTAM_LLMC") or Path(__file__).resolve().parents[3] / "shared" / "corpus" / "llmc")


@pytest.mark.skipif(not (LLMC / "trimat_forward.cu").is_file(), reason="the llm.c folder (shared corpus) is not present")
def test_llmc_trimat_naive_gets_the_panels_and_compiles(tmp_path):
    """llm.c's ``trimat_forward.cu`` (read where it is, never copied): the naive helper behind
    ``trimul_launcher<matmul_tri_naive>`` is staged, the authors' other helpers are left as they are."""
    from htam_core.bench import llmc

    (entry,) = [e for e in llmc.discover(LLMC) if e.name == "trimat_forward"]
    text = llmc.work_copy_text(entry, 1)
    model = parse_text(text, "cuda", str(tmp_path / "trimat_forward.cu"))
    cs = registry.propose("cuda.smem_tiling_matmul", model, model.kernel("trimul_global"))
    assert not isinstance(cs, NotApplicable), cs.reason
    assert {c.params["callee"] for c in cs} == {"matmul_tri_naive"}
    assert (cs[0].params["bm"], cs[0].params["tm"]) == (128, 8)
    for name in ("matmul_tri_registers", "matmul_tri3", "matmul_tri4"):
        d = next(d for d in model.device_functions if d.name == name)
        assert text[d.span.start:d.span.end] in cs[0].new_text
    if shutil.which("nvcc") is None:
        return
    stub = llmc.cublas_stub(tmp_path / "stub")
    p = nvcc_check(cs[0].new_text, flags=("-std=c++17", "-Xptxas", "-v"), includes=(stub,), tmp=tmp_path,
                   name="trimat_forward.cu")
    assert p.returncode == 0, p.stderr[-3000:]
    naive = p.stderr.split("matmul_tri_naive")[-1]
    assert " 0 bytes spill stores" in naive and "bytes smem" in naive, naive[:1500]


@pytest.mark.parametrize(("old", "new", "needle"), [
    ("float val = 0.0f;", "float val = 0.0f;\n            val += 1.0f;", "val is changed between its declaration"),
    ("p[(blockIdx.z * T + i) * T + j] = val * alpha;", "p[(blockIdx.z * T + i) * T + j] = val * alpha;\n"
     "            ((float *)k)[j] = 0.0f;", "is written in the function too"),
])
def test_refusals_that_keep_the_sums_right(old, new, needle):
    text = (HERE / "nt_tiles.cu").read_text()
    assert old in text
    _, r = _propose("nt_tiles.cu", "nt_tiles", text=text.replace(old, new))
    assert isinstance(r, NotApplicable) and needle in r.reason, getattr(r, "reason", r)
