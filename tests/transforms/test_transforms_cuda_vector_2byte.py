"""The 16-byte vector form of ``cuda.vectorize_float4`` on 2-byte elements (``__half``, ``__nv_bfloat16``,
``short``), pinned by what it writes and by what nvcc makes of it (PTX for sm_90):

* 8 elements per vector, so every input is one 16-byte load (``ld.global.v4``) and the output one 16-byte store per
  thread step;
* the lanes compute with the kernel's own operations on the loaded elements (``__hmul``/``__hadd`` on ``__half``,
  bit for bit what each thread computed; no conversion through float);
* no bounds check per element inside the vector loop (only the scalar tail checks), no local memory for the
  per-pointer structs (the lane loop unrolls), no division in the vector body (the width is a compile-time
  constant: ``htam_n / htam_V`` is a shift, once per thread);
* the scalar tail after the vector loop, and the same properties for the row form of a 2-D kernel.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from transform_helpers import candidates, fixture_path

TID = "cuda.vectorize_float4"
FILE = "fused_2byte.cu"

#: kernel -> (element type, inputs, the lane's statement as the vector loop writes it)
KERNELS = {
    "fma4_half": ("__half", 4, "htam_out = __hadd(__hmul(htam_p, htam_q), __hmul(htam_r, htam_s));"),
    "blend_bf16": ("__nv_bfloat16", 2, "htam_z = __hadd(__hmul(htam_x, __float2bfloat16(0.75f)), htam_y);"),
    "sat_add_i16": ("short", 2, "int v = (int)htam_a + (int)htam_b;"),
}


def _vector_loop(text: str) -> str:
    """The text of the vector loop: from its header to the line that sets the tail's start."""
    start = text.index("for (long long htam_v = htam_gid;")
    return text[start : text.index("htam_tail = htam_nv * htam_V;", start)]


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_eight_elements_per_vector_and_the_kernels_own_ops(kernel):
    elem, _inputs, lane = KERNELS[kernel]
    (c,) = candidates(TID, FILE, kernel)
    assert c.params["vector_width"] == 8
    assert "constexpr int htam_V = 8;" in c.new_text and f"{{ {elem} v[htam_V]; }};" in c.new_text
    loop = _vector_loop(c.new_text)
    assert lane in loop and "__half2float" not in loop and "__bfloat162float" not in loop
    assert "htam_n" not in loop.replace("htam_nv", "")  # no per-element check against the element count
    assert re.search(r"for \(long long htam_j = htam_tail \+ htam_gid; htam_j < htam_n;", c.new_text)  # the tail


def _ptx_of(text: str, kernel: str, tmp_path) -> str:
    """The PTX (sm_90) of ``kernel``'s entry in CUDA ``text``."""
    src = tmp_path / "k.cu"
    src.write_text(text)
    p = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", str(src), "-o", str(tmp_path / "k.ptx")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    ptx = (tmp_path / "k.ptx").read_text()
    entries = [m.start() for m in re.finditer(r"\.entry ", ptx)] + [len(ptx)]
    for a, b in zip(entries, entries[1:], strict=False):
        if kernel in ptx[a : ptx.index("(", a)]:
            return ptx[a:b]
    raise AssertionError(f"no entry for {kernel}")


def _pin_ptx(ptx: str, loads: int) -> None:
    """One 16-byte load per input for every 16-byte store (nvcc may unroll the vector loop: several of each)."""
    stores = len(re.findall(r"st\.global\.v4\.", ptx))
    assert stores >= 1 and len(re.findall(r"ld\.global(?:\.nc)?\.v4\.", ptx)) == loads * stores
    assert ".local" not in ptx
    # no division in the vector body: nvcc may divide once per loop for its unrolling's trip count (64-bit behind a
    # 32-bit fast path), before the loop, never per vector
    body = ptx[re.search(r"ld\.global(?:\.nc)?\.v4\.", ptx).start() : ptx.rindex("st.global.v4.")]  # type: ignore[union-attr]
    assert not re.search(r"\b(div|rem)\.", body)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_nvcc_moves_16_bytes_per_access(kernel, tmp_path):
    _elem, inputs, _lane = KERNELS[kernel]
    (c,) = candidates(TID, FILE, kernel)
    _pin_ptx(_ptx_of(c.new_text, kernel, tmp_path), inputs)
    # the start moves 2 bytes per access: the pin can fail
    start = _ptx_of(fixture_path(FILE).read_text(), kernel, tmp_path)
    assert "v4" not in start


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_row_form_moves_16_bytes_of_half(tmp_path):
    (c,) = candidates(TID, "vector_rows2d.cu", "ramp_half")
    assert c.params["form"] == "rows" and c.params["vector_width"] == 8
    _pin_ptx(_ptx_of(c.new_text, "ramp_half", tmp_path), 1)
