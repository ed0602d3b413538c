"""``htam suggest FILE --kernel K --why STRATEGY``: a strategy the ranking leaves out (its ``applies`` predicate is
false on the kernel's facts) is explained in one or two lines: the predicate, the facts that decide it, and the
rules engine's verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import htam_core.profile.api as profile_api
from htam_core.cli.main import main
from htam_core.types.profile import Bottleneck, Profile

#: a 2-D window launched with a block known only at run time: the 2-D tile has no size, so no stencil window
RUNTIME_BLOCK = """__global__ void heat(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1)
        out[y * W + x] = in[y * W + x - 1] + in[y * W + x + 1] + in[(y - 1) * W + x] + in[(y + 1) * W + x];
}
void launch(const float *in, float *out, int W, int H, int b) {
    heat<<<dim3((W + b - 1) / b, (H + b - 1) / b), dim3(b, b)>>>(in, out, W, H);
}
"""

#: a clamp-to-edge blur: the tile applies and is made
CLAMPED = """__global__ void blur(const float *src, float *dst, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) s += src[min(max(y + dy, 0), h - 1) * w + min(max(x + dx, 0), w - 1)];
    dst[y * w + x] = s;
}
void launch(const float *src, float *dst, int w, int h) { blur<<<dim3((w + 15) / 16, (h + 15) / 16), dim3(16, 16)>>>(src, dst, w, h); }
"""


@pytest.fixture(autouse=True)
def fake_profiler(monkeypatch):
    """A constructed profile: these tests read the source only."""
    monkeypatch.setattr(profile_api, "profile_kernel",
                        lambda path, name, static=None, **kw: Profile(name, bottleneck=Bottleneck("memory-bound")))


def _file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "k.cu"
    p.write_text(text)
    return str(p)


def test_a_strategy_left_out_says_which_facts_made_its_predicate_false(tmp_path, capsys):
    assert main(["suggest", _file(tmp_path, RUNTIME_BLOCK), "--kernel", "heat", "--why", "stencil_smem_tile",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert '"stencil_window and not uses_shared" is false' in lines[0] and "not ranked" in lines[0]
    assert "stencil_window = False" in lines[0] and "uses_shared" not in lines[0].split(":", 2)[2]
    assert lines[1].startswith("  rules engine: does not make it:") and "constant 2-D block" in lines[1]


def test_a_ranked_strategy_says_its_predicate_holds(tmp_path, capsys):
    assert main(["suggest", _file(tmp_path, CLAMPED), "--kernel", "blur", "--why", "stencil_smem_tile", "--json",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["value"] is True and got["ranked"] and got["makes_edit"] and got["refusal"] is None
    assert "stencil_window = True" in got["because"] and "uses_shared = False" in got["because"]


def test_another_language_is_the_reason(tmp_path, capsys):
    assert main(["suggest", _file(tmp_path, CLAMPED), "--kernel", "blur", "--why", "triton_cache_hints", "--json",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["value"] is False and not got["ranked"] and "language = 'cuda'" in got["because"][0]


def test_an_unknown_strategy_is_a_usage_error(tmp_path, capsys):
    assert main(["suggest", _file(tmp_path, CLAMPED), "--kernel", "blur", "--why", "warp_magic",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 2
    err = capsys.readouterr().err
    assert "unknown strategy id for --why: warp_magic" in err and "stencil_smem_tile" in err


def test_a_ranked_strategy_says_its_place_in_the_list(tmp_path, capsys):
    """Regression (a new user's report): ``--why`` said "raise --top to see it" about the step the default list
    showed first; it now gives the step's number in the same ranking and says when ``--top`` must be raised."""
    f, mem = _file(tmp_path, CLAMPED), str(tmp_path / "m.sqlite3")
    assert main(["suggest", f, "--kernel", "blur", "--json", "--top", "30", "--memory", mem]) == 0
    ranked = [s["strategy"] for s in json.loads(capsys.readouterr().out)]
    assert len(ranked) > 5
    for pos in (1, len(ranked)):
        assert main(["suggest", f, "--kernel", "blur", "--why", ranked[pos - 1], "--memory", mem]) == 0
        line = capsys.readouterr().out.splitlines()[0]
        assert f"ranked number {pos} " in line, line
        assert ("(listed)" in line) == (pos <= 5) and ("--top" in line) == (pos > 5), line
        assert main(["suggest", f, "--kernel", "blur", "--why", ranked[pos - 1], "--json", "--memory", mem]) == 0
        assert json.loads(capsys.readouterr().out)["rank"] == pos
