"""Output contracts at a launch: who reads a kernel's per-block outputs, and whether a new grid can follow.

A kernel that writes one result per block (``if (tid == 0) partial[blockIdx.x] = sdata[0];``, the per-block
outputs of :meth:`~htam_core.source.analysis.facts.KernelFacts.per_block_outputs`) has as many outputs as blocks.
A step that changes the number of blocks (a new block size when the grid is computed from it, fewer blocks with
several elements per thread) changes the output's length, so it is correct only where whoever reads the outputs
reads as many as there are blocks. This module reads that at one launch: the launching host function *owns* the
contract when

* the grid is a local of the host declared once and never assigned (``int blocks = (n + 255) / 256;``, or the one
  component of ``dim3 grid(blocks, 1, 1)`` that is such a local), so every later use of the count in the host
  (the partials' allocation, the loop that finishes them, the next pass's length) reads the new count; and
* every per-block output is a buffer the host declares itself (a local, not a parameter of the host: a caller's
  buffer was sized by the caller) and allocates with that count: every call that takes its address reads the
  count (``cudaMalloc(&partial, blocks * sizeof(float));``).

Otherwise the caller's contract is unknown (a parameter count, an output buffer passed in, an inline grid), and
the launch and the output's shape cannot be changed together.

Idea source: M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007): each block writes its partial
result, and the host, or a second pass over ``blocks`` partials, reads one per block.
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.syntax import of_type, unwrap_parens
from htam_core.source.analysis.unit import SiteLaunch


def _refs(env: ConstEnv, node: Node, name: str) -> bool:
    """``node`` mentions the identifier ``name``."""
    return any(env.t(i) == name for i in of_type(node, "identifier"))


def _takes_address(env: ConstEnv, call: Node, name: str) -> bool:
    """``call`` passes ``&name`` (an allocation: ``cudaMalloc(&partial, bytes)``)."""
    args = call.child_by_field_name("arguments")
    for a in args.named_children if args is not None else []:
        a = unwrap_parens(a)
        if a.type == "pointer_expression" and env.t(a.child_by_field_name("operator")) == "&" and \
                env.t(unwrap_parens(a.child_by_field_name("argument"))) == name:
            return True
        if a.type == "cast_expression" and _refs(env, a, name) and "&" in env.t(a):
            return True
    return False


def _declares(env: ConstEnv, body: Node | None, name: str) -> bool:
    """``body`` (a host's body) declares the local ``name`` (``float *partial;``, ``float *p = nullptr;``)."""
    if body is None:
        return False
    for decl in of_type(body, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator")
            if d is not None and env.t(d) == name:
                return True
    return False


def grid_count_local(env: ConstEnv, launch: SiteLaunch) -> str | None:
    """The host local that holds the launch's block count (the grid itself, or the one component of a ``dim3``
    grid that is a local), declared once and never assigned; ``None`` otherwise."""
    host = launch.host
    if host is None:
        return None
    g = unwrap_parens(launch.grid)
    for _ in range(2):
        if g.type != "identifier":
            return None
        name = env.t(g)
        inits = env.local_inits(host, name)
        if len(inits) != 1 or env.assigned_in(host, name):
            return None
        init = inits[0]
        if init.type not in ("argument_list", "initializer_list"):
            return name
        parts = init.named_children
        if not parts or any(env.t(p).strip() not in ("1", "1u") for p in parts[1:]):
            return None
        g = unwrap_parens(parts[0])
    return None


def host_owns_outputs(env: ConstEnv, launch: SiteLaunch, params: list[str], outputs: list[str],
                      shrink: bool = False) -> str | None:
    """``None`` when the host of ``launch`` owns the contract of the per-block ``outputs`` (kernel parameter names;
    ``params`` all the kernel's parameter names in order), as the module docstring says; else why not, one
    sentence. With ``shrink`` (the step only ever gives fewer blocks), a buffer the caller passed in is large
    enough, and the contract holds when the host passes the count on after the launch (``n = blocks;`` before the
    next pass, ``finish(partial, blocks)``): whoever reads the partials then reads the new count. A host that
    only launches leaves the reading to its caller, who reads its own count."""
    line = launch.site.line
    count = grid_count_local(env, launch)
    if count is None:
        return (f"the block count of the launch on line {line} is not a local of its host declared once, so the "
                "reader of the per-block outputs may expect another count")
    host = launch.host
    assert host is not None
    for out in outputs:
        if out not in params or params.index(out) >= len(launch.site.args):
            return f"the launch on line {line} does not pass {out}"
        arg = launch.site.args[params.index(out)].strip()
        if not arg.isidentifier():
            return f"the per-block output {out} is `{arg}` at the launch on line {line}, not a buffer of the host"
        if shrink and any(env.t(i) == count and i.start_byte >= launch.call.end_byte
                          for i in of_type(host, "identifier")):
            continue  # the host passes the count on after the launch: its reader reads the new count
        if not _declares(env, host.child_by_field_name("body"), arg):
            return (f"the per-block output {arg} of the launch on line {line} comes from the caller, who sized it "
                    "for its own block count")
        allocs = [c for c in of_type(host, "call_expression") if _takes_address(env, c, arg)]
        if not allocs or not all(_refs(env, c, count) for c in allocs):
            return (f"the host does not allocate the per-block output {arg} with the block count {count} "
                    f"(`cudaMalloc(&{arg}, {count} * sizeof(...))`; line {line})")
    return None
