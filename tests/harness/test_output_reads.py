"""No harness declares a write-only output (``init = "empty"``) that its kernel reads.

A kernel that reads such a buffer computes with the NaN poison (``beta * C`` with beta = 0 is still NaN),
so its start fails its own check and every candidate is judged against a broken harness (the
``sgemm_naive`` bug). Such a buffer is in-out and needs another init (``zeros``). The reads are found with
tree-sitter on the kernel's body: CUDA subscripts / dereferences of the parameter (or a pointer derived
from it) other than the left side of a plain ``=``; Triton ``tl.load`` from it. An output whose name is
not a kernel parameter (a host launcher renaming it) cannot be followed and is left out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tree_sitter as ts

from htam_core.harness.spec import load_toml
from htam_core.source import load
from htam_core.source.parsing import new_parser, node_text

REPO = Path(__file__).resolve().parents[2]
TOMLS = sorted([REPO / "bench" / "suite" / "htam.toml", REPO / "examples" / "htam.toml",
                *(REPO / "tests" / "fixtures").rglob("htam.toml")])


def _roots(node: ts.Node | None) -> list[str]:
    """Identifiers a pointer expression is based on (``C``, ``C + off``, ``(float*)(C + 1)``)."""
    if node is None:
        return []
    if node.type == "identifier":
        return [node_text(node)]
    if node.type in ("binary_expression", "binary_operator"):
        return _roots(node.child_by_field_name("left")) + _roots(node.child_by_field_name("right"))
    if node.type in ("parenthesized_expression", "cast_expression"):
        inner = node.child_by_field_name("value") or (node.named_children[-1] if node.named_children else None)
        return _roots(inner)
    return []


def _walk(node: ts.Node):
    yield node
    for c in node.children:
        yield from _walk(c)


def _declared_name(decl: ts.Node | None) -> str | None:
    while decl is not None and decl.type in ("pointer_declarator", "reference_declarator"):
        decl = decl.child_by_field_name("declarator")
    return node_text(decl) if decl is not None and decl.type == "identifier" else None


def read_outputs(path: Path, kernel: str, watched: set[str]) -> set[str]:
    """The names of ``watched`` pointer parameters that ``kernel`` in ``path`` reads."""
    model = load(path)
    k = model.kernel(kernel)
    data = path.read_bytes()
    lang = "cuda" if path.suffix in (".cu", ".cuh") else "python"
    body = new_parser(lang).parse(data).root_node.descendant_for_byte_range(k.body_span.start, k.body_span.end)
    alias: dict[str, str] = {name: name for name in watched}  # pointer derived from a watched one -> its root
    read: set[str] = set()
    nodes = list(_walk(body))
    for n in nodes:  # aliases first: float* yr = y + row * cols;  y_row = y_ptr + row * N
        if n.type == "init_declarator":
            name, src = _declared_name(n.child_by_field_name("declarator")), _roots(n.child_by_field_name("value"))
        elif n.type == "assignment" and lang == "python":
            name, src = node_text(n.child_by_field_name("left")), _roots(n.child_by_field_name("right"))
        else:
            continue
        hit = next((alias[s] for s in src if s in alias), None)
        if name and hit:
            alias[name] = hit
    for n in nodes:
        if lang == "cuda" and (n.type == "subscript_expression"
                               or (n.type == "pointer_expression" and node_text(n).lstrip().startswith("*"))):
            hit = next((alias[s] for s in _roots(n.child_by_field_name("argument")) if s in alias), None)
            if hit is None:
                continue
            parent = n.parent
            plain_store = (parent is not None and parent.type == "assignment_expression"
                           and parent.child_by_field_name("left") == n
                           and node_text(parent.child_by_field_name("operator")) == "=")
            if not plain_store:
                read.add(hit)
        elif lang == "python" and n.type == "call" and node_text(n.child_by_field_name("function")).endswith("load"):
            args = [a for a in n.child_by_field_name("arguments").named_children if a.type != "keyword_argument"]
            hit = next((alias[s] for s in _roots(args[0] if args else None) if s in alias), None)
            if hit is not None:
                read.add(hit)
    return read


def offenders(toml: Path) -> list[str]:
    """``"[kernel.K] <file>: <output>"`` for each write-only output of ``toml`` that the kernel reads."""
    found: list[str] = []
    for kernel, table in (load_toml(toml).get("kernel") or {}).items():
        empties = {i["name"] for i in table.get("inputs", []) if i.get("init") == "empty"}
        watched_all = empties & set(table.get("outputs", []))
        if not watched_all:
            continue
        files = ([toml.parent / table["file"]] if "file" in table else
                 sorted(p for p in toml.parent.iterdir() if p.suffix in (".py", ".cu", ".cuh")))
        for f in files:
            try:
                params = {p.name for p in load(f).kernel(kernel).params}
            except KeyError:
                continue  # this file does not define the kernel
            for name in sorted(read_outputs(f, kernel, watched_all & params)):
                found.append(f"[kernel.{kernel}] {f.name}: {name}")
    return found


@pytest.mark.parametrize("toml", TOMLS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_write_only_output_is_read_by_its_kernel(toml: Path) -> None:
    assert offenders(toml) == [], 'these outputs are read by their kernel: give them init = "zeros", not "empty"'


def test_the_check_finds_the_sgemm_naive_bug(tmp_path: Path) -> None:
    """The check can fail: the suite's table as it was (C init = "empty") is caught, the Triton fixture
    with y write-only too, and a kernel that only stores into its output is not."""
    suite = REPO / "bench" / "suite"
    text = (suite / "htam.toml").read_text()
    fixed = '{ name = "C", shape = ["M", "N"], dtype = "float32", init = "zeros" }'
    assert fixed in text
    (tmp_path / "htam.toml").write_text(text.replace(fixed, fixed.replace('"zeros"', '"empty"')))
    for f in suite.iterdir():
        if f.suffix in (".cu", ".py"):
            (tmp_path / f.name).write_bytes(f.read_bytes())
    assert offenders(tmp_path / "htam.toml") == ["[kernel.sgemm_naive] sgemm_naive.cu: C"]
    assert read_outputs(tmp_path / "sgemm_naive.cu", "sgemm_naive", {"C"}) == {"C"}
    assert read_outputs(tmp_path / "transpose_naive.cu", "transpose_naive", {"out"}) == set()
    assert read_outputs(tmp_path / "layernorm_thread_per_row.cu", "layernorm_thread_per_row", {"y"}) == set()
    inout = REPO / "tests" / "fixtures" / "harness" / "inout" / "axpby.py"
    assert read_outputs(inout, "axpby_kernel", {"y_ptr"}) == {"y_ptr"}
    assert read_outputs(inout, "axpby_kernel", {"x_ptr"}) == {"x_ptr"}
    vadd = REPO / "examples" / "vector_add.py"
    assert read_outputs(vadd, "add_kernel", {"out_ptr"}) == set()
