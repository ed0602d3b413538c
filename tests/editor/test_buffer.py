"""Buffer: cheap per-keystroke changes, one coalesced re-parse, positions mapped over pending changes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from htam_core.editor.buffer import Buffer, _widen
from htam_core.source import parse_text
from htam_core.source.positions import LineIndex

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def _kernels(model):
    return [(k.name, k.span.start, k.span.end, k.incomplete, k.features) for k in model.kernels]


def _random_change(rng: random.Random, text: str) -> tuple[int, int, str]:
    data = text.encode()
    s = rng.randint(0, len(data))
    e = min(len(data), s + rng.choice([0, 0, 1, 3]))
    return s, e, rng.choice(["x", " ", "\n", "", "// é\n", "{", "}", "("])


def test_widen_matches_the_text_it_describes():
    rng = random.Random(7)
    for _ in range(300):
        doc = bytes(rng.choice(b"ab\n") for _ in range(40))
        cur, window = doc, None
        for _ in range(rng.randint(1, 8)):
            s = rng.randint(0, len(cur))
            e = rng.randint(s, min(len(cur), s + 4))
            new = bytes(rng.choice(b"xy\n") for _ in range(rng.randint(0, 3)))
            cur = cur[:s] + new + cur[e:]
            window = _widen(window, s, e, s + len(new))
            ws, we_doc, we_now = window
            assert doc[:ws] + cur[ws:we_now] + doc[we_doc:] == cur


def test_burst_of_changes_is_one_reparse_equal_to_a_full_parse():
    text = (CORPUS / "softmax_row_per_thread.cu").read_text()
    buf = Buffer(text, "cuda", "k.cu", 1)
    first = buf.sync()
    assert not buf.pending and first.model.kernels
    rng = random.Random(3)
    cur = text
    for v in range(2, 60):  # a burst: no parse in between
        cur_b = cur.encode()
        s, e, new = _random_change(rng, cur)
        line, col = LineIndex(cur_b).to_position(s, "utf-8")
        line2, col2 = LineIndex(cur_b).to_position(e, "utf-8")
        buf.apply_change(line, col, line2, col2, new, "utf-8", v)
        cur = (cur_b[:s] + new.encode() + cur_b[e:]).decode()
        assert buf.text == cur
    assert buf.pending and buf.snapshot is first  # nothing parsed yet
    snap = buf.sync()
    assert snap.text == cur and snap.version == 59 and not buf.pending
    assert _kernels(snap.model) == _kernels(parse_text(cur, "cuda", "k.cu"))


def test_kernel_at_maps_positions_over_pending_changes():
    text = (CORPUS / "softmax_row_per_thread.cu").read_text()
    buf = Buffer(text, "cuda", "k.cu", 1)
    buf.sync()
    k0 = buf.snapshot.model.kernels[0]
    name = k0.name
    line, col = buf.snapshot.index.to_position(k0.name_span.start, "utf-16")
    for i in range(5):  # five new lines above the kernel, not parsed yet
        buf.apply_change(0, 0, 0, 0, f"// line {i}\n", "utf-16", 2 + i)
    k = buf.kernel_at(line + 5, col + 1)  # where the kernel's name is in the current text
    assert k is not None and k.name == name
    start = buf.to_current(k.name_span.start)
    assert buf.text.encode()[start:start + len(name)] == name.encode()
    assert buf.to_snapshot(start) == k.name_span.start


def test_full_text_change_and_errors():
    buf = Buffer("__global__ void a(float* x) { x[0] = 1; }\n", "cuda", None, 1)
    buf.apply_change(None, None, None, None, "__global__ void b(float* y) { y[0] = 2; }\n", "utf-16", 2)
    assert [k.name for k in buf.sync().model.kernels] == ["b"]
    with pytest.raises(ValueError):
        buf.apply_change(0, 5, 0, 1, "x", "utf-16", 3)
    assert buf.kernel_at(0, 20).name == "b"


def test_no_snapshot_means_no_kernel_and_no_parse():
    buf = Buffer("__global__ void a(float* x) { x[0] = 1; }\n", "cuda", None, 1)
    assert buf.snapshot is None and buf.kernel_at(0, 20) is None


def test_served_files_every_cuda_file_and_python_only_with_kernels() -> None:
    """Which open files get answers (moved from the server's document into the buffer)."""
    assert Buffer("int main() { return 0; }\n", "cuda").served()
    plain = Buffer("import os\nprint(os.getcwd())\n", "python")
    assert not plain.served()
    mentions = Buffer("# uses triton elsewhere\nx = 1\n", "python")
    assert mentions.served()  # not parsed yet: counts as served
    mentions.sync()
    assert not mentions.served()  # parsed: no kernel
    kernel = Buffer("import triton\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\n", "python")
    kernel.sync()
    assert kernel.served()
