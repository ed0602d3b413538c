"""Local ``#include "x.h"`` headers: found next to the file, recursively, never system headers."""

from __future__ import annotations

from pathlib import Path

from htam_core.profile.static_cuda import resolve_block_size
from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.includes import MAX_DEPTH, local_headers, quoted_includes
from htam_core.source.analysis.syntax import parse_cuda
from htam_core.source.api import load

_MAIN = """#include <cstdio>
#include "helpers.h"
__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }
void go(float* y) {
  dim3 block(TILE, TILE);
  k<<<1, block>>>(y);
}
"""


def _write(tmp: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_quoted_includes_only():
    assert quoted_includes(b'#include <cuda.h>\n  #  include "a.h"\n// #include "c.h"\n#include "sub/b.cuh"\n') == \
        ["a.h", "sub/b.cuh"]


def test_headers_are_followed_recursively_and_read_by_the_constant_evaluator(tmp_path):
    _write(tmp_path, {"k.cu": _MAIN, "helpers.h": '#include "inc/base.h"\n#define TILE (BASE * 2)\n',
                      "inc/base.h": "constexpr int BASE = 8;\n"})
    src = (tmp_path / "k.cu").read_bytes()
    hs = local_headers(src, tmp_path / "k.cu")
    assert [h.path.name for h in hs] == ["base.h", "helpers.h"]  # innermost first
    env = ConstEnv(src, parse_cuda(src).root_node, path=str(tmp_path / "k.cu"))
    assert env.value_of_text("TILE * TILE") == 256
    assert ConstEnv(src, parse_cuda(src).root_node).value_of_text("TILE") is None  # in-memory text: no headers
    model = load(str(tmp_path / "k.cu"))
    block, why, _ = resolve_block_size(model.text, model.kernel("k"), 0, model.path)
    assert block == 256, why


def test_include_cycles_and_depth_are_bounded(tmp_path):
    files = {"a.h": '#include "b.h"\n#define A 1\n', "b.h": '#include "a.h"\n#define B 2\n'}
    chain = {f"d{i}.h": f'#include "d{i + 1}.h"\n' for i in range(MAX_DEPTH + 3)}
    _write(tmp_path, {**files, **chain, "k.cu": '#include "a.h"\n#include "d0.h"\n#include "missing.h"\n'})
    names = [h.path.name for h in local_headers((tmp_path / "k.cu").read_bytes(), tmp_path / "k.cu")]
    assert names.count("a.h") == 1 and names.count("b.h") == 1
    assert f"d{MAX_DEPTH - 1}.h" in names and f"d{MAX_DEPTH}.h" not in names
