"""Generator registry (htam_core.generate.registry)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.generate import registry
from htam_core.generate.config import LLMConfig
from htam_core.generate.errors import GenerationError
from htam_core.generate.registry import GenerationRequest, create, kinds
from htam_core.transforms.base import apply_edits
from tests.support.openai_server import OpenAIServer, Scripted

REQ = GenerationRequest(kernel_text="x = 1\n", language="triton", kernel_name="k",
                        direction={"name": "Memory Access", "description": "d"},
                        strategies=[{"id": "triton.cache_hints", "name": "cache hints", "transform": "t.hints"}],
                        transition_hints=["after A, B paid off 2 of 3 times"])


def test_kinds() -> None:
    assert {"llm", "rules"} <= set(kinds())
    with pytest.raises(GenerationError, match="unknown generator 'nope'; known: .*llm"):
        create("nope")


def test_llm_kind_proposes_a_candidate(api_key: str, tmp_path: Path) -> None:
    code = "import triton\n\n\n@triton.jit\ndef k(x):\n    pass\n"
    with OpenAIServer([Scripted.content(f"```python\n{code}```")]) as srv:
        cfg = LLMConfig(base_url=srv.base_url, model="m", api_key_env="HTAM_TEST_LLM_KEY")
        cands = create("llm", config=cfg, log_dir=tmp_path).propose(REQ)
        assert "after A, B paid off 2 of 3 times" in srv.requests[0].body["messages"][-1]["content"]
    assert len(cands) == 1 and cands[0].code == code and cands[0].generator == "llm"
    assert cands[0].strategy == "triton.cache_hints"
    # the whole-file reply comes with its edit of the request's text (one span: the editor applies it as is)
    (only,) = cands[0].edits
    assert only.path is None and apply_edits(REQ.kernel_text, list(only.edits)) == code


def test_rules_kind_wraps_the_real_transforms() -> None:
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "vector_add_small_block.py").read_text()
    gen = registry.create("rules")
    req = GenerationRequest(kernel_text=text, language="triton", kernel_name=None,
                            strategies=[{"id": "triton_block_size", "transform": "triton.block_size"},
                                        {"id": "unroll_loops", "transform": "cuda.unroll"},
                                        {"id": "no_transform"}])
    cands = gen.propose(req)
    assert cands and all(c.generator == "rules" and c.strategy == "triton_block_size" for c in cands)
    assert all(c.code != text and c.params["transform_id"] == "triton.block_size" for c in cands)
    # each candidate carries the transform's own edits, which make its text
    assert all([f.path for f in c.edits] == [None] and apply_edits(text, list(c.edits[0].edits)) == c.code
               for c in cands)
    assert [tid for tid, _ in gen.skipped] == ["cuda.unroll"] and "triton" in gen.skipped[0][1]


def test_rules_kind_names_the_kernels_when_the_kernel_is_missing() -> None:
    req = GenerationRequest(kernel_text="import triton\n", language="triton", kernel_name="nope",
                            strategies=[{"id": "s", "transform": "triton.block_size"}])
    with pytest.raises(GenerationError, match="kernel 'nope' is not in the file"):
        registry.create("rules").propose(req)
