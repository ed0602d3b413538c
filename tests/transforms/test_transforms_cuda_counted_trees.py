"""Reduction trees written as ``while`` / ``do``/``while`` loops take the tree steps (sequential addressing, the warp
finish, the add during load) like their ``for`` spelling: offered, made (the loop becomes a ``for`` loop, its
initialisation and trailing update gone), nvcc-compiled for sm_90, and run on the CPU
(:func:`cpu_emulation.run_block_main`) with the same per-block sums as the original (inputs multiples of a half, so
every summation order gives the same sums). A ``do`` loop whose first test is not provably true is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import SM_GRID_PRELUDE, compiler, run_block_main
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

SEQ, WARP, COARSEN = "cuda.sequential_addressing", "cuda.warp_shuffle_finish", "cuda.coarsen_reduction"
TREES = {
    "do_mask": "int s = 1;\n    do {\n        if ((t & (2 * s - 1)) == 0) buf[t] += buf[t + s];\n        __syncthreads();\n"
               "        s <<= 1;\n    } while (s < BLOCK);",
    "while_mod": "unsigned s = 1;\n    while (s < BLOCK) {\n        if (t % (2 * s) == 0) buf[t] += buf[t + s];\n"
                 "        __syncthreads();\n        s *= 2;\n    }",
    "while_halving": "int s = BLOCK / 2;\n    while (s > 0) {\n        if (t < s) buf[t] += buf[t + s];\n"
                     "        __syncthreads();\n        s >>= 1;\n    }",
    "do_halving": "int s = BLOCK >> 1;\n    do {\n        if (t < s) buf[t] = buf[t] + buf[t + s];\n"
                  "        __syncthreads();\n        s /= 2;\n    } while (s > 0);",
}


def _kernel(tree: str, head: str = "constexpr int BLOCK = 256;") -> str:
    return f"""{head}
__global__ void tsum(const float* a, float* out, int n) {{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = (i < n) ? a[i] : 0.0f;
    __syncthreads();
    {tree}
    if (t == 0) atomicAdd(out, buf[0]);
}}

void run(const float* a, float* out, int n) {{ tsum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(a, out, n); }}
"""


def _made(text: str, tid: str) -> str:
    model = parse_text(text, "cuda", "trees.cu")
    res = registry.propose(tid, model, model.kernel("tsum"))
    assert not isinstance(res, NotApplicable), res.reason
    return res[0].new_text


def _body(text: str) -> str:
    return text[text.index("__global__"):text.index("\nvoid run")]


@pytest.mark.parametrize("name", list(TREES))
@pytest.mark.parametrize("tid", [SEQ, WARP, COARSEN])
def test_every_tree_step_is_made_on_a_while_or_do_tree(name, tid):
    text = _kernel(TREES[name])
    if tid == SEQ and "halving" in name:
        model = parse_text(text, "cuda", "trees.cu")
        res = registry.propose(tid, model, model.kernel("tsum"))
        assert isinstance(res, NotApplicable) and "already uses sequential addressing" in res.reason
        return
    body = _body(_made(text, tid))
    if tid != COARSEN:
        assert "while" not in body and "do {" not in body and body.count("int s") + body.count("unsigned s") == 1
        assert "s = BLOCK / 2; s > " in body or "s = BLOCK >> 1; s > " in body
    else:
        assert "htam_v" in body and TREES[name].splitlines()[0] in body


def test_a_do_tree_with_an_unknown_start_is_refused_in_one_line():
    text = _kernel(TREES["do_mask"].replace("int s = 1;", "int s = n & 1;"))
    model = parse_text(text, "cuda", "trees.cu")
    for tid in (SEQ, WARP):
        res = registry.propose(tid, model, model.kernel("tsum"))
        assert isinstance(res, NotApplicable) and "not provably true at entry" in res.reason


def test_a_tree_variable_read_after_the_loop_is_refused():
    text = _kernel(TREES["do_mask"]).replace("atomicAdd(out, buf[0]);", "atomicAdd(out, buf[0] + s);")
    model = parse_text(text, "cuda", "trees.cu")
    res = registry.propose(SEQ, model, model.kernel("tsum"))
    assert isinstance(res, NotApplicable) and "used outside the loop" in res.reason


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(tmp_path: Path):
    k = 0
    for name, tree in TREES.items():
        for head in ("constexpr int BLOCK = 256;", "#define BLOCK 128"):
            for tid in (WARP, COARSEN, *(() if "halving" in name else (SEQ,))):
                assert_nvcc_compiles(_made(_kernel(tree, head), tid), tmp_path, f"t{k}.cu")
                k += 1


MAIN = """
int main() {
    for (int n : {77, 1000, 4099}) {
        std::vector<float> a(n), out(1, 0.0f);
        for (int k = 0; k < n; ++k) a[k] = 0.5f * (float)((k * 37) % 41) - 10.0f;
        htam_launch((n + BLOCK - 1) / BLOCK, BLOCK, 1, [&] { tsum(a.data(), out.data(), n); });
        std::printf("%.9g\\n", out[0]);
    }
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("name", ["do_mask", "while_halving"])
def test_the_rewrites_sum_as_the_original_on_the_cpu(name, tmp_path: Path):
    text = _kernel(TREES[name], "#define BLOCK 128")
    want = run_block_main(text, "tsum", MAIN, tmp_path, prelude="#define BLOCK 128\n")
    assert want == [sum(0.5 * ((k * 37) % 41) - 10.0 for k in range(n)) for n in (77, 1000, 4099)]
    for tid in (WARP, COARSEN, *(() if "halving" in name else (SEQ,))):
        main = MAIN.replace("(n + BLOCK - 1) / BLOCK", "4") if tid == COARSEN else MAIN
        got = run_block_main(_made(text, tid), "tsum", main, tmp_path, prelude="#define BLOCK 128\n" + (
            SM_GRID_PRELUDE if tid == COARSEN else ""))
        assert got == want, tid
