"""The rules engine never loads the LLM client: ``openai`` and its HTTP library are imported when the ``llm``
generator is created, not when the registry (or the optimize loop) is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from htam_core.generate.registry import GenerationRequest, create
import htam_core.optimize.loop  # the loop imports the generators' types
text = open(sys.argv[1]).read()
gen = create("rules")
gen.propose(GenerationRequest(kernel_text=text, language="triton", kernel_name=None,
                              strategies=[{"id": "triton_block_size", "transform": "triton.block_size"}]))
print(sorted(m for m in ("openai", "httpx", "httpx2") if m in sys.modules))
if sys.argv[2] == "llm":
    from htam_core.generate.config import LLMConfig
    create("llm", config=LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    print(sorted(m for m in ("openai", "httpx", "httpx2") if m in sys.modules))
"""


def _run(mode: str) -> list[str]:
    fixture = REPO / "tests" / "fixtures" / "corpus" / "vector_add_small_block.py"
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(fixture), mode], cwd=REPO,
                         text=True, capture_output=True, timeout=300,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


def test_creating_the_rules_generator_does_not_import_the_llm_client() -> None:
    assert _run("rules") == ["[]"]


def test_creating_the_llm_generator_imports_it() -> None:
    rules, llm = _run("llm")
    assert rules == "[]" and "'openai'" in llm and "'httpx2'" in llm
