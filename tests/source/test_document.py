"""Incremental re-parsing: random edits through Document give the same model as a full parse;
the per-keystroke fast path of kernel_at agrees with the full model."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from htam_core.source import Document, SourceError, kernel_at, load, parse_text
from htam_core.source.positions import LineIndex

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
FILES = {"cuda": (CORPUS / "bias_gelu_templates.cu").read_text(),
         "python": (CORPUS / "layernorm_heuristics.py").read_text()}
SNIPPETS = ["", "x", "\n", "}", "{", "__global__ ", "é", "\U0001f600", "for (int i = 0; i < 4; ++i) {", "(", ")",
            "@triton.jit\ndef z(p_ptr):\n    pass\n", "    ", "tl.store(y_ptr, 1)\n", "/*", "*/", '"""']


def _comparable(model):
    return [(k.to_json(), k.incomplete, k.span, k.body_span, k.features.to_dict(),
             [(p.name, p.written, p.is_pointer) for p in k.params]) for k in model.kernels]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lang=st.sampled_from(["cuda", "python"]),
       edits=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.sampled_from(SNIPPETS)), min_size=1,
                      max_size=6),
       encoding=st.sampled_from(["utf-16", "utf-8", "utf-32"]))
# regression: after error recovery the incremental tree listed the same calls in another order, so
# math_calls came out ['tanh', 'fabs', ...] instead of ['fabs', 'tanh', ...]; features now walk calls in source order
@example(lang="cuda", edits=[(0.5234375, 0.5, ""), (0.5, 1.0, "")], encoding="utf-16")
def test_random_edits_match_full_parse(lang: str, edits, encoding: str) -> None:
    text = FILES[lang]
    doc = Document(text, lang)
    for a, b, snippet in edits:
        lines = text.split("\n")
        sl = int(a * (len(lines) - 1))
        el = min(len(lines) - 1, sl + int(b * 3))
        idx = LineIndex(text.encode())
        sc = len(lines[sl]) // 2
        ec = len(lines[el]) if el > sl else max(sc, len(lines[el]) * 3 // 4)
        # columns in the requested encoding
        start_b = idx.to_byte(sl, 0) + len(lines[sl][:sc].encode())
        end_b = idx.to_byte(el, 0) + len(lines[el][:ec].encode())
        spos, epos = idx.to_position(start_b, encoding), idx.to_position(end_b, encoding)
        doc.apply_change(spos[0], spos[1], epos[0], epos[1], snippet, encoding)
        data = text.encode()
        text = (data[:start_b] + snippet.encode() + data[end_b:]).decode()
        assert doc.text == text
        # the keystroke fast path must agree with a full parse
        probe = int((a + b) * 7) % max(1, len(text.split("\n")))
        fast = doc.kernel_at(probe, 4)
        full = parse_text(text, lang)
        if not doc.model.stale:
            slow = kernel_at(full, probe, 4)
            assert (fast is None) == (slow is None)
            if fast is not None:
                assert fast == slow
    if not doc.model.stale:
        assert _comparable(doc.model) == _comparable(parse_text(text, lang))
    assert doc.tree.root_node.end_byte == len(text.encode())


def test_fast_path_typing_inside_a_kernel_equals_full_parse() -> None:
    text = FILES["cuda"]
    doc = Document(text, "cuda")
    assert doc.model.kernels
    line = next(i for i, s in enumerate(text.split("\n")) if "const int row = blockIdx.y;" in s)
    col = len("    const int row")
    for n, ch in enumerate("_idx+"):
        doc.apply_change(line, col + n, line, col + n, ch)
        k = doc.kernel_at(line, 4)
        ref = parse_text(doc.text, "cuda")
        assert k == ref.kernel("bias_gelu_fwd")
        assert [s.line for s in k.launch_sites] == [121]


def test_edits_shift_launch_sites_and_lines() -> None:
    text = FILES["python"]
    doc = Document(text, "python")
    assert doc.model.kernels[0].launch_sites[0].line == 70
    doc.apply_change(30, 0, 30, 0, "        # new line\n        # another\n")
    k = doc.kernel_at(30, 8)
    assert k.name == "ln_fwd_kernel" and k.end_line == 61 and k.launch_sites[0].line == 72
    assert doc.model.kernels[0].launch_sites[0].line == 72


def test_error_root_collapse_recovers_the_kernels_in_place() -> None:
    """An unclosed bracket at the top collapses the tree into errors; the kernel is still found in
    the current text (one line further down), not taken from the last good parse."""
    text = (CORPUS / "vector_add_small_block.py").read_text()
    doc = Document(text, "python")
    (before,) = doc.model.kernels
    doc.apply_change(0, 0, 0, 0, "lambda: (\n")
    assert doc.tree.root_node.named_children[0].type == "ERROR"
    model = doc.model
    assert not model.stale and model.errors
    (after,) = model.kernels
    assert (after.name, after.start_line, after.end_line) == (before.name, before.start_line + 1, before.end_line + 1)
    assert not after.incomplete and doc.kernel_at(after.start_line, 4) == after


def test_bad_input() -> None:
    with pytest.raises(SourceError, match="no such file"):
        load("/nonexistent/k.cu")
    with pytest.raises(SourceError, match="unsupported file type"):
        load(CORPUS / "manifest.json")
    with pytest.raises(SourceError):
        Document("", "rust")  # type: ignore[arg-type]
    doc = Document("x\n", "cuda")
    with pytest.raises(ValueError):
        doc.apply_change(0, 1, 0, 0, "")
