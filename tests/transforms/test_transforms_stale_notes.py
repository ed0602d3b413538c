"""Comments that state a setting a CUDA transform changed get a note of the change.

The Triton side (docstrings, ``#`` comments) is in test_transforms_dead_code.py with the autotune regression.
"""

from __future__ import annotations

from pathlib import Path

from htam_core.source import load, parse_text
from htam_core.transforms import registry

REPO = Path(__file__).resolve().parents[2]


def _block(text: str, path: Path, kernel: str, block: list[int]) -> str:
    model = parse_text(text, "cuda", str(path))
    (cand,) = [c for c in registry.propose("cuda.block_size", model, model.kernel(kernel))
               if c.params["block"] == block]
    return cand.new_text


def test_a_header_comment_gets_one_note_line_extended_by_later_steps() -> None:
    path = REPO / "bench" / "suite" / "axpy_tiny_block.cu"  # "... one element per thread and 32-thread blocks, so"
    start = path.read_text()
    one = _block(start, path, "axpy_tiny_block", [256])
    lines = one.splitlines()
    assert lines[:3] == start.splitlines()[:3]  # the prose is left as written
    assert lines[3] == "// Changed by HTAM since this text was written: threads per block 32 → 256."
    two = _block(one, path, "axpy_tiny_block", [512])
    assert two.splitlines()[3] == ("// Changed by HTAM since this text was written: threads per block 32 → 256; "
                                   "threads per block 256 → 512.")
    assert two.count("Changed by HTAM") == 1


def test_a_2d_block_comment_is_noted_after_its_comment_block() -> None:
    path = REPO / "tests" / "fixtures" / "corpus" / "sgemm_naive.cu"  # "// ... 2D blocks of 16 x 16 threads."
    start = load(str(path)).text
    new = _block(start, path, "sgemm_naive", [32, 8])
    assert ("// Build: nvcc -O3 -arch=sm_90 sgemm_naive.cu -o sgemm_naive\n"
            "// Changed by HTAM since this text was written: threads per block 16x16 → 32x8.\n#include") in new
    assert new.count("Changed by HTAM") == 1
    # every other comment line is as it was
    old_comments = [ln for ln in start.splitlines() if ln.lstrip().startswith("//")]
    new_comments = [ln for ln in new.splitlines() if ln.lstrip().startswith("//") and "Changed by HTAM" not in ln]
    assert new_comments == old_comments
