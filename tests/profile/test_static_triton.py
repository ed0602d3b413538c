"""Static Triton profiles of the corpus: AOT compile for GPUTarget("cuda", 90, 32) in a worker.

Independent check: this test compiles each kernel again itself (``triton.compile`` in a separate
interpreter, with the signature and constexprs the profile reports) and reads registers with a
different tool, ``cuobjdump --dump-resource-usage`` on the cubin, and shared memory from the
compiled metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.profile.api import profile_kernel
from htam_core.profile.static_triton import build_request, python_constants
from htam_core.runtime.cache import CompileCache
from htam_core.source import load, parse_text
from htam_core.types.errors import ProfileError

triton = pytest.importorskip("triton")

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
CASES = [(e["file"], k["name"]) for e in MANIFEST if e["language"] == "triton" for k in e["kernels"]]

_REFERENCE = r"""
import importlib.util, json, re, subprocess, sys, tempfile, os
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia import compiler as nv
cases = json.loads(sys.stdin.read())
out = {}
for c in cases:
    spec = importlib.util.spec_from_file_location("m_" + c["kernel"], c["path"])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    fn = getattr(mod, c["kernel"])
    while not isinstance(fn, triton.runtime.jit.JITFunction):
        fn = fn.fn
    consts = {k: v["value"] for k, v in c["constexprs"].items()}
    sig = dict(c["signature"])
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(fn.arg_names) if sig.get(n, "").startswith("*")}
    target = GPUTarget("cuda", 90, 32)
    opts = triton.compiler.make_backend(target).parse_options({"num_warps": c["num_warps"], "num_stages": c["num_stages"]})
    k = triton.compile(triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                       target=target, options=opts.__dict__)
    cub = tempfile.NamedTemporaryFile(suffix=".cubin", delete=False); cub.write(k.asm["cubin"]); cub.close()
    cuobjdump = os.path.join(os.path.dirname(nv.get_ptxas(90).path), "cuobjdump")
    res = subprocess.run([cuobjdump, "--dump-resource-usage", cub.name], capture_output=True, text=True, check=True)
    regs = int(re.search(r"REG:(\d+)", res.stdout).group(1))
    out[c["kernel"]] = {"registers": regs, "shared": k.metadata.shared}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    cache = CompileCache(tmp_path_factory.mktemp("htam-cache"))
    return {(f, k): profile_kernel(CORPUS / f, k, static=True, cache=cache) for f, k in CASES}


def test_profiles_match_independent_compile(profiles):
    cases = [{"path": str(CORPUS / f), "kernel": k, "signature": p.extra["signature"],
              "constexprs": p.extra["constexprs"], "num_warps": p.extra["num_warps"],
              "num_stages": p.extra["num_stages"]} for (f, k), p in profiles.items()]
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    proc = subprocess.run([sys.executable, "-c", _REFERENCE], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = json.loads(proc.stdout.strip().splitlines()[-1])
    for (_, k), p in profiles.items():
        assert p.registers == ref[k]["registers"], k
        assert p.shared_bytes == ref[k]["shared"], k
        assert p.block_size == p.extra["num_warps"] * 32
        assert p.mode == "static" and p.time_ms is None and p.sol is None
        assert 0 < p.theoretical_occupancy <= 1


def test_constexpr_sources(profiles):
    vadd = profiles[("vector_add_small_block.py", "vadd_kernel")]
    assert vadd.extra["constexprs"]["BLOCK_SIZE"] == {"value": 64, "source": "launch site line 27"}
    assert vadd.extra["num_warps"] == 4 and vadd.block_size == 128
    mm = profiles[("matmul_autotune.py", "mm_kernel")]
    assert mm.extra["constexprs"]["BM"]["source"] == "autotune config 0"
    assert mm.extra["num_warps"] == 8 and mm.shared_bytes > 0
    ln = profiles[("layernorm_heuristics.py", "ln_fwd_kernel")]
    assert ln.extra["constexprs"]["EVEN_N"]["source"] == "fallback"
    assert any("EVEN_N" in w and "heuristic" in w for w in ln.warnings)
    sm = profiles[("softmax_rows.py", "row_softmax_kernel")]
    assert sm.extra["signature"]["in_ptr"] == "*fp32" and sm.extra["signature"]["n_cols"] == "i32"
    assert sm.block_size == 32  # num_warps=1 at the launch site


def test_user_constexpr_override(tmp_path):
    p = profile_kernel(CORPUS / "vector_add_small_block.py", "vadd_kernel", static=True,
                       constexprs={"BLOCK_SIZE": 1024}, cache=CompileCache(tmp_path))
    assert p.extra["constexprs"]["BLOCK_SIZE"] == {"value": 1024, "source": "user"}


def test_compile_error_is_clear(tmp_path):
    bad = tmp_path / "bad_kernel.py"
    bad.write_text("import triton\nimport triton.language as tl\n\n@triton.jit\ndef bad(x_ptr, BLOCK: tl.constexpr):\n"
                   "    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, undefined_name)\n")
    with pytest.raises(ProfileError, match="Triton could not compile bad"):
        profile_kernel(bad, "bad", static=True, constexprs={"BLOCK": 128}, cache=CompileCache(tmp_path / "c"))


def test_python_constants_and_request():
    text = "B = 8\ndef launch(x):\n    BLOCK = 64\n    W = x.size(0)\n    k[(1,)](x, BLOCK=BLOCK, num_warps=2)\n"
    assert python_constants(text, text.index("k[")) == {"B": 8, "BLOCK": 64}
    model = load(CORPUS / "vector_add_small_block.py")
    req = build_request(model.kernel("vadd_kernel"), text=model.text)
    assert req["constexprs"] == {"BLOCK_SIZE": 64} and req["num_warps"] == 4
    assert req["signature"] == {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "numel": "i32"}
    m2 = parse_text(model.text, "python", path=None)
    assert build_request(m2.kernel("vadd_kernel"), constexprs={"BLOCK_SIZE": 256})["constexprs"]["BLOCK_SIZE"] == 256
