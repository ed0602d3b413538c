"""2-D window reads in normal form (:attr:`KernelFacts.stencils2d`, :mod:`htam_core.source.analysis.stencil2d`): the
pointer, the row pitch, the window's offsets per axis and the bounds checks per axis, whatever the spelling; the exact
set of elements a block reads (:func:`tile_conditions_2d`) checked against an enumeration of the block's threads and
taps; one line for what is not read."""

from __future__ import annotations

import itertools

import pytest
import sympy
from conftest import facts_of_text

from htam_core.source.analysis import sym
from htam_core.source.analysis.stencil import ELEMENT, THREAD
from htam_core.source.analysis.stencil2d import ELEMENT_Y, tile_conditions_2d

HEAD = "__global__ void k(const float *in, float *out, int W, int H, int P) {\n"
TAIL = ("\n}\nvoid launch(const float *in, float *out, int W, int H) {\n"
        "    k<<<dim3((W + 7) / 8, (H + 3) / 4), dim3(8, 4)>>>(in, out, W, H, W + 2);\n}\n")
XY = "int x = blockIdx.x * blockDim.x + threadIdx.x;\nint y = blockIdx.y * blockDim.y + threadIdx.y;\n"

#: body -> (prefix, body, (x lo, x hi), (y lo, y hi), pitch)
SPELLINGS = {
    "5-point, interior": (
        "", XY + "if (x > 0 && x < W - 1 && y > 0 && y < H - 1)\n"
        "out[y * W + x] = in[(y - 1) * W + x] + in[(y + 1) * W + x] + in[y * W + x - 1] + in[y * W + x + 1];",
        (-1, 1), (-1, 1), "W"),
    "window loops, per-tap checks": (
        "#define R 2\n", XY + "if (x >= W || y >= H) return;\nfloat s = 0;\n"
        "for (int j = -R; j <= R; ++j) for (int i = -R; i <= R; ++i)\n"
        "if (x + i >= 0 && y + j >= 0 && x + i < W && y + j < H) s += in[(y + j) * W + x + i];\nout[y * W + x] = s;",
        (-2, 2), (-2, 2), "W"),
    "taps 0..2R with continue, row pitch": (
        "constexpr int R = 1;\n", XY + "if (x >= W || y >= H) return;\nfloat s = 0;\n"
        "for (int ty = 0; ty < 2 * R + 1; ty++) { int r = y + ty - R; if (r < 0 || r >= H) continue;\n"
        "for (int tx = 0; tx < 2 * R + 1; tx++) { int c = x + tx - R; if (c < 0 || c >= W) continue;\n"
        "s += in[r * P + c]; } }\nout[y * P + x] = s;",
        (-1, 1), (-1, 1), "P"),
    "samples aliases, right-sided, rows unrolled": (
        "", "int tx = threadIdx.x, ty = threadIdx.y;\nint gx = blockIdx.x * 8 + tx, gy = blockIdx.y * 4 + ty;\n"
        "if (gx + 2 < W && gy + 1 < H) { float s = 0;\n"
        "for (int d = 0; d <= 2; ++d) s += in[gy * W + gx + d] - in[(gy + 1) * W + gx + d];\nout[gy * W + gx] = s; }",
        (0, 2), (0, 1), "W"),
    "64-bit index, padded pitch": (
        "", "long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "long long y = (long long)blockIdx.y * blockDim.y + threadIdx.y;\n"
        "if (x >= 1 && y >= 1 && x < W && y < H) out[y * (W + 2) + x] = in[(y - 1) * (W + 2) + x - 1] + in[y * (W + 2) + x];",
        (-1, 0), (-1, 0), "W + 2"),
}


def _stencil(prefix: str, body: str):
    f = facts_of_text(prefix + HEAD + body + TAIL, "k")
    assert f.stencils2d, f.stencil2d_refusal or f.stencil_refusal
    assert not f.stencils
    return f.stencils2d[0]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_gives_the_window_its_pitch_and_its_checks(name):
    prefix, body, xs, ys, pitch = SPELLINGS[name]
    st = _stencil(prefix, body)
    assert st.pointer == "in" and st.pitch == sympy.sympify(pitch, locals={p: sym(p) for p in ("W", "P")})
    assert (st.lo[0], st.hi[0]) == xs and (st.lo[1], st.hi[1]) == ys


def _holds(terms, subs) -> bool:
    return all(sympy.expand(t).subs(subs) > 0 for t in terms)


def _read_by_the_block(st, env, bx, by, block):
    """Every element (x, y) the block's threads read, by enumeration of its threads and its taps."""
    out = set()
    for r in st.reads:
        for gx, gy in itertools.product(range(bx * block[0], (bx + 1) * block[0]),
                                         range(by * block[1], (by + 1) * block[1])):
            if not (_holds(r.x.thread_terms, {**env, THREAD: gx}) and _holds(r.y.thread_terms, {**env, THREAD: gy})):
                continue
            for u, v in itertools.product(range(r.x.first, r.x.last + 1), range(r.y.first, r.y.last + 1)):
                ex, ey = gx + r.x.offset + u, gy + r.y.offset + v
                if _holds(r.x.element_terms, {**env, ELEMENT: ex}) and _holds(r.y.element_terms, {**env, ELEMENT: ey}):
                    out.add((ex, ey))
    return out


@pytest.mark.parametrize("name", sorted(SPELLINGS))
@pytest.mark.parametrize("w, h, bx, by", [(20, 9, 0, 0), (20, 9, 2, 2), (5, 3, 0, 0), (13, 11, 1, 2)])
def test_the_tile_conditions_are_exactly_the_elements_the_block_reads(name, w, h, bx, by):
    prefix, body, _, _, _ = SPELLINGS[name]
    st = _stencil(prefix, body)
    block = (8, 4)
    env = {sym("W"): w, sym("H"): h, sym("P"): w + 2, sym("blockDim.x"): block[0], sym("blockDim.y"): block[1],
           sym("blockIdx.x"): bx, sym("blockIdx.y"): by}
    want = _read_by_the_block(st, env, bx, by, block)
    groups = tile_conditions_2d(st)
    window = itertools.product(range(bx * block[0] + st.lo[0], (bx + 1) * block[0] + st.hi[0]),
                               range(by * block[1] + st.lo[1], (by + 1) * block[1] + st.hi[1]))
    loaded = {(ex, ey) for ex, ey in window if any(_holds(g, {**env, ELEMENT: ex, ELEMENT_Y: ey}) for g in groups)}
    assert loaded == want


@pytest.mark.parametrize("body, why", [
    (XY + "if (y * W + x < H) out[y * W + x] = in[y * W + x - 1] + in[(y + 1) * W + x];", "not a bound on one axis"),
    (XY + "if (x > 0 && y > 0 && x + y < W) out[y * W + x] = in[y * W + x - 1] + in[(y - 1) * W + x];",
     "not a bound on one axis"),
    (XY + "if (x > 0 && y > 0 && x < W && y < H) out[y * W + x] = in[y * W + x - 1] + in[y * W + x + 1] + in[(y - 1) * P + x];",
     "different row pitches"),
    (XY + "float s = 0; if (x < W && y < H) { for (int j = 0; j < 3; ++j) s += in[(y + 2 * j) * W + x]; "
     "out[y * W + x] = s + in[y * W + x + 1]; }", "not by one or a row"),
    (XY + "if (x < W && y < H) out[y * W + x] = in[y * W + 2 * x] + in[y * W + 2 * x + 1];",
     "does not move by one with threadIdx.x"),
])
def test_what_is_not_read_is_said_in_one_line(body, why):
    f = facts_of_text(HEAD + body + TAIL, "k")
    assert not f.stencils2d
    assert why in f.stencil2d_refusal and "\n" not in f.stencil2d_refusal


def test_a_2d_kernel_without_neighbouring_reads_has_no_stencil_and_no_refusal():
    f = facts_of_text(HEAD + XY + "if (x < W && y < H) out[y * W + x] = 2 * in[y * W + x];" + TAIL, "k")
    assert f.stencils2d == () and f.stencil2d_refusal == ""


def test_a_1d_stencil_stays_1d():
    body = "int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i > 0 && i < W - 1) out[i] = in[i - 1] + in[i + 1];"
    f = facts_of_text(HEAD + body + TAIL, "k")
    assert f.stencils and not f.stencils2d


def test_a_bound_the_kernel_computes_is_not_read_as_a_window():
    """A tile is loaded at the top of the body: a bound or a pitch read from memory there (``int W = dims[0];``)
    is not known yet, so the window is not offered (the 1-D window alike)."""
    two = ("__global__ void k(const float *in, float *out, const int *dims) {\nint W = dims[0], H = dims[1];\n" + XY +
           "if (x > 0 && y > 0 && x < W - 1 && y < H - 1) out[y * W + x] = in[y * W + x - 1] + in[(y - 1) * W + x];\n}\n"
           "void launch(const float *in, float *out, const int *d) { k<<<dim3(8, 8), dim3(16, 16)>>>(in, out, d); }\n")
    one = ("__global__ void k(const float *in, float *out, const int *dims) {\nint n = dims[0];\n"
           "int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i > 0 && i < n - 1) out[i] = in[i - 1] + in[i + 1];\n}\n"
           "void launch(const float *in, float *out, const int *d) { k<<<8, 64>>>(in, out, d); }\n")
    f2, f1 = facts_of_text(two, "k"), facts_of_text(one, "k")
    assert not f2.stencils2d and "which the kernel computes" in f2.stencil2d_refusal
    assert not f1.stencils and "which the kernel computes" in f1.stencil_refusal


PLANE_HEAD = "__global__ void k(const float *in, float *out, int C, int H, int W, int HW) {\n"
PLANE_TAIL = ("\n}\nvoid launch(const float *in, float *out, int C, int H, int W) {\n"
              "    k<<<dim3((W + 7) / 8, (H + 3) / 4, C), dim3(8, 4)>>>(in, out, C, H, W, H * W);\n}\n")

#: body -> (the plane offset every read adds, (x lo, x hi), (y lo, y hi))
PLANES = {
    "depthwise taps, 64-bit": (
        XY + "int c = blockIdx.z;\nif (x >= W || y >= H) return;\nfloat s = 0;\n"
        "for (int dy = 0; dy < 3; ++dy) for (int dx = 0; dx < 3; ++dx) { int yy = y + dy - 1, xx = x + dx - 1;\n"
        "if (yy >= 0 && yy < H && xx >= 0 && xx < W) s += in[((size_t)c * H + yy) * W + xx]; }\n"
        "out[((size_t)c * H + y) * W + x] = s;", "H * W * c", (-1, 1), (-1, 1)),
    "flat index local": (
        XY + "int c = blockIdx.z;\nif (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) return;\n"
        "size_t p = ((size_t)c * H + y) * W + x;\nout[p] = in[p - 1] + in[p + 1] + in[p - W] + in[p + W];",
        "H * W * c", (-1, 1), (-1, 1)),
    "base pointer, plane guard": (
        XY + "if (blockIdx.z >= C) return;\nconst float *src = in + (size_t)blockIdx.z * H * W;\n"
        "if (x > 0 && y > 0 && x < W - 1 && y < H - 1) out[blockIdx.z * HW + y * W + x] = "
        "src[y * W + x - 1] + src[(y + 1) * W + x];", "H * W * c", (-1, 0), (0, 1)),
    "plane size parameter": (
        XY + "if (x > 0 && y > 0 && x < W - 1 && y < H - 1) out[blockIdx.z * HW + y * W + x] = "
        "in[blockIdx.z * HW + y * W + x - 1] + in[blockIdx.z * HW + (y - 1) * W + x];", "HW * c", (-1, 0), (-1, 0)),
}


@pytest.mark.parametrize("name", sorted(PLANES))
def test_a_plane_offset_fixed_per_block_is_part_of_the_window(name):
    """``c = blockIdx.z`` selects a plane (a channel, a batch entry) the whole block reads: the window is that
    plane's, its offset read once as the window's base."""
    body, base, xs, ys = PLANES[name]
    f = facts_of_text(PLANE_HEAD + body + PLANE_TAIL, "k")
    assert f.stencils2d, f.stencil2d_refusal
    st = f.stencils2d[0]
    names = {n: sym(n) for n in ("H", "W", "HW")} | {"c": sym("blockIdx.z")}
    assert sympy.expand(st.base - sympy.sympify(base, locals=names)) == 0
    assert st.pitch == sym("W") and (st.lo[0], st.hi[0]) == xs and (st.lo[1], st.hi[1]) == ys


def test_a_plain_2d_window_has_no_plane_offset():
    prefix, body, _, _, _ = SPELLINGS["5-point, interior"]
    assert _stencil(prefix, body).base == 0


@pytest.mark.parametrize("body, why", [
    (XY + "int c = blockIdx.z;\nif (x > 0 && y > 0 && x < W && y < H) out[(c * H + y) * W + x] = "
     "in[(c * H + y) * W + x - 1] + in[((c + 1) * H + y - 1) * W + x];", "different plane offsets"),
    (XY + "int c = threadIdx.z;\nif (x > 0 && y > 0 && x < W && y < H) out[(c * H + y) * W + x] = "
     "in[(c * H + y) * W + x - 1] + in[(c * H + y - 1) * W + x];", "differs between the threads of a block"),
    (XY + "int c = blockIdx.z % C;\nif (x > 0 && y > 0 && x < W && y < H) out[(c * H + y) * W + x] = "
     "in[(c * H + y) * W + x - 1] + in[(c * H + y - 1) * W + x];", "a division or a remainder"),
    (XY + "int c = C;\nif (H > 0) c = blockIdx.z;\nif (x > 0 && y > 0 && x < W && y < H) out[(c * H + y) * W + x] = "
     "in[(c * H + y) * W + x - 1] + in[(c * H + y - 1) * W + x];", "which the kernel computes"),
])
def test_a_plane_offset_that_is_not_one_per_block_is_said_in_one_line(body, why):
    f = facts_of_text(PLANE_HEAD + body + PLANE_TAIL, "k")
    assert not f.stencils2d
    assert why in f.stencil2d_refusal and "\n" not in f.stencil2d_refusal
