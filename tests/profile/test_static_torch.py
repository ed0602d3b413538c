"""CUDA in a Python string that includes ``torch/extension.h``: the fast kernel-only compile gives
the same ptxas report as the full unit compiled by nvcc with torch's own include paths
(``torch.utils.cpp_extension.include_paths()``; slow: ~45 s of torch headers)."""

from __future__ import annotations

import re
import subprocess
import sysconfig
from pathlib import Path

import pytest

from htam_core.profile import static_cuda as sc
from htam_core.profile.api import profile_kernel
from htam_core.runtime.cache import CompileCache
from htam_core.source import load

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sc.find_nvcc() is None, reason="needs nvcc")]


def test_kernel_only_matches_full_torch_unit(tmp_path):
    cpp_ext = pytest.importorskip("torch.utils.cpp_extension")
    model = load(CORPUS / "kb_swish.py")
    k = model.kernel("swish_fwd_kernel")
    source = k.attributes["cuda_source"]
    unit = tmp_path / "swish.cu"
    unit.write_text(source)
    incs = [*cpp_ext.include_paths(), sysconfig.get_paths()["include"], *sc.torch_include_dirs()[3:]]
    ref = subprocess.Popen([sc.find_nvcc(), "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-std=c++17",
                            *[f"-I{d}" for d in incs], "-o", str(tmp_path / "ref.cubin"), str(unit)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    fast = profile_kernel(CORPUS / "kb_swish.py", "swish_fwd_kernel", static=True, cache=CompileCache(tmp_path / "c2"))
    out, _ = ref.communicate(timeout=400)
    assert ref.returncode == 0, out[-3000:]
    regs = [int(m) for m in re.findall(r"Used (\d+) registers", out)]
    assert fast.extra["compile"]["mode"] == "kernel-only"
    assert fast.registers == max(regs)
    smem = [int(m) for m in re.findall(r"(\d+) bytes smem", out)] or [0]
    assert fast.shared_bytes == max(smem)


def test_torch_include_dirs_cover_cpp_extension():
    cpp_ext = pytest.importorskip("torch.utils.cpp_extension")
    dirs = sc.torch_include_dirs()
    assert set(cpp_ext.include_paths()) <= set(dirs)
    assert all(Path(d).is_dir() for d in dirs)
    assert any((Path(d) / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").exists() for d in dirs)
