"""Every transform's output on the corpus leaves no dead code behind it.

A transform that rewrites a launch (``BLOCK_SIZE=BLOCK_SIZE`` tuned by ``@triton.autotune``, a grid that becomes
``lambda meta: ...``) must also remove the assignments it orphaned. The check is differential, so that dead code
already in the input is not held against a transform:

* Python files (Triton, CUDA in ``load_inline`` strings): ruff's pyflakes rules (``ruff check --select F``, e.g.
  F841 local variable assigned but never used, F811 redefinition, F821 undefined name) on the input and on each
  candidate; a diagnostic the candidate has and the input has not is a finding. Module-level names (which ruff
  does not flag) are checked with Python's own parser (``ast``): a module-level name the input reads and the
  candidate still assigns but no longer reads.
* CUDA files: with tree-sitter-cuda (the source layer's parser), a local variable declared in a kernel that the
  input reads and the candidate declares but no longer reads.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.source.analysis import nodes as syn
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, NotApplicable

REPO = Path(__file__).resolve().parents[2]
_DIRS = [REPO / "tests" / "fixtures" / "corpus", REPO / "tests" / "fixtures" / "transforms",
         REPO / "tests" / "fixtures" / "panel", REPO / "bench" / "suite", REPO / "examples"]
#: The corpus copies, our own transform fixtures (the operand-panel ones in their own folder), the naive-kernel
#: suite and the bundled example (the chain
#: block_size → warps_stages → autotune on it is checked too); half-typed files are the parser's business.
INPUTS = sorted(p for d in _DIRS for p in d.iterdir() if p.suffix in (".py", ".cu") and not p.name.startswith("broken_"))


def _ruff() -> str:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed (pip install -e .[test])")
    return exe


def ruff_findings(text: str, name: str = "candidate.py") -> Counter[tuple[str, str]]:
    """``(code, message)`` of every pyflakes (F) diagnostic ruff reports for ``text`` (positions left out, so
    that an edit above a line does not make its old diagnostic look new)."""
    proc = subprocess.run([_ruff(), "check", "--isolated", "--select", "F", "--output-format", "json",
                           "--stdin-filename", name, "-"], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return Counter((d["code"], d["message"]) for d in json.loads(proc.stdout or "[]"))


def module_reads(text: str) -> tuple[set[str], set[str]]:
    """``(names assigned at module level, names read anywhere)`` of a Python module, by ``ast``."""
    tree = ast.parse(text)
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    reads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return assigned, reads


def cuda_local_reads(text: str) -> dict[tuple[str, str], int]:
    """``(function, local variable) -> reads`` for every variable declared in a function body (tree-sitter)."""
    src = text.encode()
    tree = syn.parse(src, "cuda")
    out: dict[tuple[str, str], int] = {}
    for fn in syn.of_type(tree.root_node, "function_definition"):
        decl = fn.child_by_field_name("declarator")
        names = [syn.text(n, src) for n in syn.of_type(decl, "identifier")] if decl is not None else []
        fname = names[0] if names else "?"
        body = fn.child_by_field_name("body")
        if body is None:
            continue
        declared: dict[str, set[int]] = {}
        for d in syn.of_type(body, "declaration"):
            for child in d.children_by_field_name("declarator"):
                node = child.child_by_field_name("declarator") if child.type == "init_declarator" else child
                while node is not None and node.type != "identifier":
                    node = node.child_by_field_name("declarator")
                if node is not None:
                    declared.setdefault(syn.text(node, src), set()).add(node.start_byte)
        idents = Counter(syn.text(n, src) for n in syn.of_type(body, "identifier"))
        for name, decl_sites in declared.items():
            out[(fname, name)] = idents[name] - len(decl_sites)
    return out


def orphans(before: str, after: str, file_language: str) -> list[str]:
    """Names the edit ``before`` -> ``after`` left assigned but unused, and new pyflakes findings."""
    found: list[str] = []
    if file_language == "python":
        new = ruff_findings(after) - ruff_findings(before)
        found += [f"ruff {code}: {msg}" for code, msg in new]
        a0, r0 = module_reads(before)
        a1, r1 = module_reads(after)
        found += [f"module-level {n} is assigned but no longer read" for n in sorted((a0 & a1 & r0) - r1)]
    else:
        r0, r1 = cuda_local_reads(before), cuda_local_reads(after)
        found += [f"{fn}: local {n} is declared but no longer read" for (fn, n), k in r1.items()
                  if k == 0 and r0.get((fn, n), 0) > 0]
    return found


def _cases() -> list[tuple[Path, str, str]]:
    cases = []
    for path in INPUTS:
        model = load(str(path))
        for k in model.kernels:
            for t in registry.for_language(k.language):
                cases.append((path, k.name, t.id))
    return cases


CASES = _cases()
#: The quick tier (``HTAM_TEST_TIER=fast``, ``make test-fast``) checks this many applicable (file, kernel) pairs
#: per transform, the first in path order; the full tier checks every pair.
FAST_PAIRS_PER_TRANSFORM = 2


@functools.cache
def _candidates(path: Path, kernel: str, transform_id: str) -> tuple[Candidate, ...]:
    model = load(str(path))
    res = registry.propose(transform_id, model, model.kernel(kernel))
    return () if isinstance(res, NotApplicable) else tuple(res)


@pytest.mark.slow
def test_the_corpus_exercises_every_transform() -> None:
    made = {t for path, k, t in CASES if _candidates(path, k, t)}
    assert made == {t.id for t in registry.all_transforms()}, {t.id for t in registry.all_transforms()} - made


@pytest.mark.parametrize("transform_id", sorted(t.id for t in registry.all_transforms()))
def test_transform_output_has_no_orphaned_names(transform_id: str) -> None:
    """Every candidate of the transform on every (file, kernel) of the inputs where it applies (a sample of
    ``FAST_PAIRS_PER_TRANSFORM`` pairs in the quick tier) leaves no orphaned name and stays valid Python."""
    limit = FAST_PAIRS_PER_TRANSFORM if os.environ.get("HTAM_TEST_TIER") == "fast" else len(CASES)
    pairs: list[tuple[Path, str]] = []
    for path, k, t in CASES:
        if len(pairs) >= limit:
            break
        if t == transform_id and _candidates(path, k, t):
            pairs.append((path, k))
    assert pairs, f"{transform_id} applies to none of the inputs"
    problems: list[str] = []
    for path, kernel in pairs:
        model = load(str(path))
        for cand in _candidates(path, kernel, transform_id):
            if model.file_language == "python":
                try:  # the output must stay valid Python (the validator checks only edited spans)
                    ast.parse(cand.new_text)
                except SyntaxError as exc:
                    problems.append(f"{path.name}:{kernel}: {cand.description}: not valid Python: {exc}")
                    continue
            problems += [f"{path.name}:{kernel}: {cand.description}: {o}"
                         for o in orphans(model.text, cand.new_text, model.file_language)]
    assert problems == []


def test_the_checks_find_what_they_look_for() -> None:
    """The checks themselves: each finds an orphan planted on purpose (so a passing run means something)."""
    host = "def f(n):\n    B = 64\n    g = (n // B,)\n    return k(g, B)\n"
    orphaned = "def f(n):\n    B = 64\n    g = (n // B,)\n    return k(n)\n"
    assert {f.split(":")[0] for f in orphans(host, orphaned, "python")} == {"ruff F841"}
    assert orphans("X = 1\nprint(X)\n", "X = 1\nprint(2)\n", "python") == ["module-level X is assigned but no longer read"]
    cu0 = "__global__ void k(float *x) { int i = threadIdx.x; float s = 2.0f; x[i] = s * x[i]; }\n"
    cu1 = "__global__ void k(float *x) { int i = threadIdx.x; float s = 2.0f; x[i] = 2.0f * x[i]; }\n"
    assert orphans(cu0, cu1, "cuda") == ["k: local s is declared but no longer read"]
    assert orphans(cu0, cu0, "cuda") == [] and orphans(host, host, "python") == []


def _chain(path: Path, kernel: str, ids: list[str]) -> str:
    from htam_core.source import parse_text

    text = path.read_text()
    for tid in ids:
        model = parse_text(text, "python", str(path))
        res = registry.propose(tid, model, model.kernel(kernel))
        assert not isinstance(res, NotApplicable), res.reason
        text = res[0].new_text
    return text


def test_autotune_removes_the_constants_and_grid_it_replaced() -> None:
    """Regression: best.py kept ``BLOCK_SIZE = 1024`` and ``grid = (...)`` after triton.autotune."""
    example = REPO / "examples" / "vector_add.py"
    start = example.read_text()
    text = _chain(example, "add_kernel", ["triton.block_size", "triton.warps_stages", "triton.autotune"])
    host = text[text.index("def add("):text.index('if __name__ == "__main__":')]
    assert "BLOCK_SIZE = " not in host and "BLOCK_SIZE=" not in host and "num_warps" not in host
    assert '    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)\n    add_kernel[grid](x, y, out, ' \
           'n_elements)\n' in host
    assert orphans(start, text, "python") == []
    compile(text, "best.py", "exec")


def test_changed_settings_are_noted_in_the_docstring_that_describes_them() -> None:
    """The example's docstring describes the 64-element tile with 4 warps; each step notes what it changed."""
    example = REPO / "examples" / "vector_add.py"
    text = _chain(example, "add_kernel", ["triton.block_size", "triton.warps_stages", "triton.autotune"])
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert doc.splitlines()[-1] == ("Changed by HTAM since this text was written: BLOCK_SIZE 64 → 1024; num_warps "
                                    "4 → 8; BLOCK_SIZE, num_warps chosen by @triton.autotune (was BLOCK_SIZE=1024, "
                                    "num_warps=8).")
    assert doc.count("Changed by HTAM") == 1
    # a comment that states the old value gets the note; one that only names the parameter does not
    src = example.read_text().replace("    BLOCK_SIZE = 64\n", "    BLOCK_SIZE = 64  # a tiny tile of 64\n").replace(
        "    pid = tl.program_id(axis=0)\n", "    pid = tl.program_id(axis=0)  # one BLOCK_SIZE chunk each\n")
    tmp = REPO / "tests" / "fixtures" / "corpus" / "vector_add_small_block.py"  # any Triton path for the parser
    from htam_core.source import parse_text

    model = parse_text(src, "python", str(tmp))
    (cand,) = [c for c in registry.propose("triton.block_size", model, model.kernel("add_kernel"))
               if c.params["BLOCK_SIZE"] == 1024]
    assert "    BLOCK_SIZE = 1024  # a tiny tile of 64 (changed by HTAM: BLOCK_SIZE 64 → 1024)\n" in cand.new_text
    assert "    pid = tl.program_id(axis=0)  # one BLOCK_SIZE chunk each\n" in cand.new_text
