"""A Triton launch's grid read in the analysis layer: the expression it stands for (a local, a grid function's
``return``) and whether it is a function of the launch's meta-parameters; the assignments to a name."""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.triton import assignments_to, grid_expression, grid_is_function, single_local

HOST = b"""def run(x, n):
    g1 = (triton.cdiv(n, 128),)
    g2 = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    def g3(meta):
        return (triton.cdiv(n, meta["BLOCK"]),)
    g4 = (1,)
    g4 += (2,)
    k[g1](x, n)
    k[g2](x, n)
    k[g3](x, n)
    k[g4](x, n)
    k[(n,)](x, n)
"""


def _launches() -> tuple[syn.Node, list[syn.Node]]:
    root = syn.parse(HOST, "python").root_node
    host = syn.function_definitions(root)[0]
    grids = [c.child_by_field_name("function").child_by_field_name("subscript") for c in syn.py_calls(host)
             if syn.text(c, HOST).startswith("k[")]
    return host, grids


def test_grid_expression_follows_a_local_and_a_grid_function() -> None:
    host, grids = _launches()
    got = [syn.text(grid_expression(g, host, g.start_byte, HOST), HOST) for g in grids]
    assert got == ["(triton.cdiv(n, 128),)", 'lambda meta: (triton.cdiv(n, meta["BLOCK"]),)',
                   '(triton.cdiv(n, meta["BLOCK"]),)', "g4", "(n,)"]
    assert [grid_is_function(g, host, g.start_byte, HOST) for g in grids] == [False, True, True, False, False]
    assert syn.text(grid_expression(grids[0], None, 0, HOST), HOST) == "g1"  # no host: as written


def test_assignments_to_a_name_and_its_single_value() -> None:
    host, grids = _launches()
    assert [syn.text(a, HOST) for a in assignments_to(host, "g4", HOST)] == ["g4 = (1,)", "g4 += (2,)"]
    assert single_local(host, "g4", len(HOST), HOST) is None  # augmented: not a single value
    assert syn.text(single_local(host, "g1", len(HOST), HOST), HOST) == "(triton.cdiv(n, 128),)"
    assert single_local(host, "g1", 0, HOST) is None  # assigned after the launch
