"""The nodes at file scope (:func:`htam_core.source.analysis.syntax.file_scope_nodes`): in namespaces, ``extern "C"``
blocks, template declarations and preprocessor branches, never in a function body; and its two readers, the
float64 twin's host functions and the file's constants. Code written for these tests."""

from __future__ import annotations

import pytest

from htam_core.harness.promote64 import float64_twin
from htam_core.source.analysis.syntax import file_scope_nodes, parse_cuda
from htam_core.source.parsing import node_text

#: spelling -> a unit defining the function ``f`` at file scope (and a ``g`` nested in nothing else)
SPELLINGS = {
    "plain": "int f() { return 1; }",
    "namespace": "namespace ns { int f() { return 1; } }",
    "extern_c": 'extern "C" { int f() { return 1; } }',
    "template": "template <typename T> T f() { return T(1); }",
    "ifdef": "#ifdef A\nint f() { return 1; }\n#endif",
    "elif": "#if defined(A)\nint h() { return 0; }\n#elif defined(B)\nint f() { return 1; }\n#endif",
    "nested_namespace": "namespace a { namespace b { int f() { return 1; } } }",
}


def _names(src: str, types: str = "function_definition") -> list[str]:
    root = parse_cuda(src.encode()).root_node
    return [node_text(n.child_by_field_name("declarator")).split("(")[0].split()[-1]
            for n in file_scope_nodes(root, types)]


@pytest.mark.parametrize("case", sorted(SPELLINGS))
def test_a_function_at_file_scope_is_found_in_each_spelling(case):
    assert "f" in _names(SPELLINGS[case])


def test_nothing_inside_a_function_body_is_found():
    src = "int f() { struct L { int g() { return 0; } }; const int N = 4; return N; }\nconst int M = 2;"
    assert _names(src) == ["f"]
    root = parse_cuda(src.encode()).root_node
    assert [node_text(d) for d in file_scope_nodes(root, "declaration")] == ["const int M = 2;"]


def test_the_unit_s_own_nodes_come_before_those_of_its_scopes():
    src = "namespace a { const int N = 8; }\nconst int N = 4;\nconst int M = 1;"
    root = parse_cuda(src.encode()).root_node
    assert [node_text(d) for d in file_scope_nodes(root, "declaration")] == [
        "const int N = 4;", "const int M = 1;", "const int N = 8;"]


def test_a_host_function_in_an_elif_branch_is_left_out_of_the_twin():
    text = ("#include <cuda_fp16.h>\n__global__ void k(const float *x, float *o) { atomicAdd(o, x[threadIdx.x]); }\n"
            "#if defined(USE_A)\nint main() { return 0; }\n"
            "#elif defined(USE_B)\nint main() { __half h = __float2half(1.0f); (void)h; return 0; }\n#endif\n")
    twin = float64_twin(text, "k")
    assert twin.text is not None, twin.reason
    assert "__float2half" not in twin.text
