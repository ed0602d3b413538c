"""The stencil tile (``cuda.stencil_smem_tile``) keeps the user's names for sizes: a bound or pitch written as an
overridable ``#define`` (``#ifndef N``), a file-scope ``constexpr`` or a template parameter stays that name in the
edit (never its value folded in), so the edited file still builds, and still reads the right rows, with ``-DN=2048``.
The load's guard is written over several short lines.
"""

from __future__ import annotations

import re
import shutil

import pytest

from htam_core.source import parse_text
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

ID = "cuda.stencil_smem_tile"

MACRO_2D = """#ifndef N
#define N 1024
#endif
#define AT(y, x) ((y) * N + (x))
__global__ void smooth(const float *src, float *dst) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= N - 1 || y >= N - 1) return;
    dst[AT(y, x)] = 0.2f * (src[AT(y, x)] + src[AT(y - 1, x)] + src[AT(y + 1, x)] + src[AT(y, x - 1)]
                            + src[AT(y, x + 1)]);
}
void run(const float *s, float *d) { smooth<<<dim3(N / 32, N / 8), dim3(32, 8)>>>(s, d); }
"""

#: the same kernel with two sizes, a row pitch that is not the height (a wide image)
MACRO_2D_WH = """#ifndef WIDTH
#define WIDTH 2000
#endif
#ifndef HEIGHT
#define HEIGHT 700
#endif
__global__ void lap(const float *in, float *out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < WIDTH - 1 && y < HEIGHT - 1)
        out[y * WIDTH + x] = in[(y - 1) * WIDTH + x] + in[(y + 1) * WIDTH + x] + in[y * WIDTH + x - 1]
                             + in[y * WIDTH + x + 1] - 4.0f * in[y * WIDTH + x];
}
void run(const float *a, float *b) { lap<<<dim3((WIDTH + 15) / 16, (HEIGHT + 15) / 16), dim3(16, 16)>>>(a, b); }
"""

CONSTEXPR_2D = """constexpr int W = 640;
constexpr int H = 480;
__global__ void blur(const float *in, float *out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= 1 && y >= 1 && x + 1 < W && y + 1 < H)
        out[y * W + x] = (in[y * W + x - 1] + in[y * W + x + 1] + in[(y - 1) * W + x] + in[(y + 1) * W + x]) * 0.25f;
}
void run(const float *a, float *b) { blur<<<dim3(W / 16, H / 16), dim3(16, 16)>>>(a, b); }
"""

TEMPLATE_2D = """template <int P>
__global__ void cross(const float *in, float *out, int rows) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < P - 1 && y > 0 && y < rows - 1)
        out[y * P + x] = in[y * P + x + 1] + in[y * P + x - 1] + in[(y + 1) * P + x] + in[(y - 1) * P + x];
}
void run(const float *a, float *b, int rows) { cross<768><<<dim3(768 / 32, rows / 8), dim3(32, 8)>>>(a, b, rows); }
"""

MACRO_1D = """#ifndef LEN
#define LEN 100000
#endif
__global__ void avg3(const double *a, double *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < LEN - 1) b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
}
void run(const double *a, double *b) { avg3<<<(LEN + 255) / 256, 256>>>(a, b); }
"""

#: a window radius that is a macro too: the radius is folded (it fixes the tile's shape), the size stays a name
RADIUS_1D = """#define R 2
#ifndef N
#define N 100000
#endif
__global__ void box1d(const float *in, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= R && i < N - R) {
        float s = 0.0f;
        for (int k = -R; k <= R; ++k) s += in[i + k];
        out[i] = s;
    }
}
void run(const float *a, float *b) { box1d<<<(N + 127) / 128, 128>>>(a, b); }
"""

#: text -> (kernel, the names the edit must keep, their values that must not appear in the edit)
CASES = {
    "macro_2d": (MACRO_2D, "smooth", ("N",), ("1024", "1022", "1023")),
    "macro_2d_wh": (MACRO_2D_WH, "lap", ("WIDTH", "HEIGHT"), ("2000", "1999", "1998", "700", "699", "698")),
    "constexpr_2d": (CONSTEXPR_2D, "blur", ("W", "H"), ("640", "639", "638", "480", "479", "478")),
    "template_2d": (TEMPLATE_2D, "cross", ("P",), ("768", "767", "766")),
    "macro_1d": (MACRO_1D, "avg3", ("LEN",), ("100000", "99999", "99998")),
    "radius_1d": (RADIUS_1D, "box1d", ("N",), ("100000", "99999", "99998", "99997", "99996")),
}


def _edit(text: str, kernel: str) -> str:
    """The text the step adds or changes (the candidate's lines that the original does not hold)."""
    model = parse_text(text, "cuda")
    cs = registry.propose(ID, model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    old = set(text.splitlines())
    return "\n".join(ln for ln in cs[0].new_text.splitlines() if ln not in old)


def _candidate_text(text: str, kernel: str) -> str:
    model = parse_text(text, "cuda")
    cs = registry.propose(ID, model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    return cs[0].new_text


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_edit_keeps_the_size_names(case):
    text, kernel, names, values = CASES[case]
    added = _edit(text, kernel)
    assert "htam_tile" in added
    load = next(ln for ln in added.splitlines() if "htam_tile[htam_" in ln and "] = " in ln)
    for name in names[:1]:  # the pitch (or the 1-D bound) reads the name
        assert re.search(rf"\b{name}\b", added), added
    for v in values:
        assert not re.search(rf"(?<![\w.]){v}(?![\w.])", added), (v, added)
    assert load


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_guard_is_written_in_short_lines(case):
    text, kernel, _, _ = CASES[case]
    added = _edit(text, kernel)
    assert max(len(ln) for ln in added.splitlines()) <= 240, max(added.splitlines(), key=len)


@pytest.mark.parametrize("case", ["macro_2d", "macro_2d_wh", "macro_1d", "radius_1d"])
def test_the_edited_file_compiles_with_the_macro_overridden(case, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text, kernel, names, _ = CASES[case]
    (tmp_path / "k.cu").write_text(_candidate_text(text, kernel))
    for flags in ([], [f"-D{n}=2048" for n in names]):
        assert_compiles(tmp_path / "k.cu", flags=flags, tmp=tmp_path, context=flags)


def test_the_folded_facts_still_decide():
    """The plain facts read the macro's value (the window's pitch is 1024), the spelled ones its name."""
    from htam_core.source.analysis import analyze

    model = parse_text(MACRO_2D, "cuda")
    k = model.kernel("smooth")
    assert str(analyze(model, k).stencils2d[0].pitch) == "1024"
    assert str(analyze(model, k, spell=True).stencils2d[0].pitch) == "N"
