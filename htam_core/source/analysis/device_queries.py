"""Values a host program reads from the device at run time, such as the number of SMs for a grid.

Host code often sizes a grid from the device it runs on::

    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);   k<<<sms * 4, 256>>>(...);
    cudaGetDeviceProperties(&prop, 0);   k<<<prop.multiProcessorCount * 2, 256>>>(...);

or from the occupancy API, which depends on the compiled kernel (its registers and shared memory)::

    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 256, 0);   k<<<per_sm * sms, 256>>>(...);
    cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, k, 0, 0);      k<<<min_grid, block>>>(...);

Such a value is neither a constant nor unknown. It is a *device quantity* that whatever runs the kernel can
read again on its own device. This module is the one table of these quantities, shared by the launch facts
(:attr:`~htam_core.source.analysis.facts.Dim.device`) and the host-code evaluator of the harness. Each
quantity has a name: the name a harness expression uses for it (``sm_count``), the words a message uses for
it, and the way it is read: a ``cudaDeviceGetAttribute`` attribute or a ``cudaDeviceProp`` field.

The occupancy calls are read as :class:`OccupancyQuery` (the kernel, and the threads, shared-memory, block-limit and
flags arguments as host expressions); their outputs hold the quantity ``occupancy``, which a harness expression
reads through the functions of :data:`OCCUPANCY_FUNCTIONS`, evaluated for the compiled kernel on the device.

Idea source: CUDA Runtime API, ``cudaDeviceGetAttribute`` and ``cudaDeviceProp`` (``multiProcessorCount``), and
"Occupancy" (``cudaOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags]``,
``cudaOccupancyMaxPotentialBlockSize[WithFlags]``); CUDA C++ Best Practices Guide, "Calculating Occupancy";
NVIDIA developer blog, "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops" (a grid sized to the SMs).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sympy
from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.syntax import of_type, unwrap_parens

#: ``cudaDeviceGetAttribute`` attributes read as a device quantity, by the quantity's name.
ATTRIBUTES: dict[str, str] = {"cudaDevAttrMultiProcessorCount": "sm_count"}
#: ``cudaDeviceProp`` fields read as a device quantity.
PROPERTY_FIELDS: dict[str, str] = {"multiProcessorCount": "sm_count"}
#: Each quantity in words (messages: "the grid from the device's SM count (read at run time)").
WORDS: dict[str, str] = {"sm_count": "the device's SM count", "occupancy": "the device's occupancy"}
#: The ``sm_count`` of the reference device of each compute capability, for choices made without a device at hand
#: (a tile that gives the grid at least one block per SM): A100 SXM 108, RTX A6000 84, L40 142, and H100 SXM and
#: H200 (the project's devices) 132 (NVIDIA data sheets). A device that is measured reports its own.
REFERENCE_SM_COUNT: dict[str, int] = {"sm_80": 108, "sm_86": 84, "sm_89": 142, "sm_90": 132}
#: The call that fills a whole ``cudaDeviceProp``.
PROPERTIES_CALLS = ("cudaGetDeviceProperties", "cudaGetDeviceProperties_v2")
#: htam's own grid helpers (written by the launch steps), as harness expressions over their arguments ``{0}``,
#: ``{1}``: ``htam_sm_blocks(per_sm)`` is ``per_sm`` blocks per SM, ``htam_sm_grid(blocks, per_sm)`` caps
#: ``blocks`` at that, ``htam_sm_rows(cols, rows, per_sm)`` is the y of a 2-D grid so capped.
HELPERS: dict[str, tuple[int, str]] = {
    "htam_sm_blocks": (1, "sm_count * {0}"),
    "htam_sm_grid": (2, "min({0}, sm_count * {1})"),
    # the y of a 2-D grid whose x is htam_sm_grid(cols, per_sm): the blocks the cap leaves, at most rows
    "htam_sm_rows": (3, "min({1}, max(1, sm_count * {2} // max(1, min({0}, sm_count * {2}))))"),
}


#: The occupancy calls read, by the kind of answer they give: ``"blocks"`` (active blocks per SM of a block size),
#: ``"potential"`` (the block size of the highest occupancy and the grid that fills the device with it).
OCCUPANCY_CALLS: dict[str, str] = {
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor": "blocks",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": "blocks",
    "cudaOccupancyMaxPotentialBlockSize": "potential",
    "cudaOccupancyMaxPotentialBlockSizeWithFlags": "potential",
}
#: The harness functions that read the occupancy of the launched kernel on the device (the runner defines them
#: for the function it compiled): ``blocks_per_sm(threads, smem)``, ``occupancy_grid(smem, limit)`` and
#: ``occupancy_block(smem, limit)`` (``cudaOccupancyMaxPotentialBlockSize``'s ``minGridSize`` and ``blockSize``).
OCCUPANCY_FUNCTIONS = ("blocks_per_sm", "occupancy_grid", "occupancy_block")
#: The flags of the ``WithFlags`` forms, by value. ``cudaOccupancyDisableCachingOverride`` changes the answer only
#: for a kernel compiled to cache global loads in L1 (``-Xptxas -dlcm=ca``), which htam does not compile with.
OCCUPANCY_FLAGS: dict[str, int] = {"cudaOccupancyDefault": 0, "cudaOccupancyDisableCachingOverride": 1}


@dataclass(frozen=True)
class OccupancyQuery:
    """One occupancy call of the host code, its arguments as syntax nodes.

    Attributes:
        call: the runtime function's unqualified name.
        kind: ``"blocks"`` or ``"potential"`` (:data:`OCCUPANCY_CALLS`).
        outputs: the argument nodes of its output pointers (``&per_sm``; ``&min_grid, &block``).
        kernel: the kernel's name as written, without ``&``, casts or template arguments (``my_kernel``).
        threads: the block-size argument (``"blocks"`` only), else ``None``.
        smem: the dynamic shared-memory bytes argument, ``None`` when left to its default (0).
        limit: the block-size limit (``"potential"`` only; ``None``: the default, 0, no limit).
        flags: the flags argument of a ``WithFlags`` form, else ``None``.
    """

    call: str
    kind: str
    outputs: tuple[Node, ...]
    kernel: str
    threads: Node | None
    smem: Node | None
    limit: Node | None
    flags: Node | None


def _kernel_name(text: Callable[[Node], str], node: Node) -> str:
    """``my_kernel`` of ``my_kernel``, ``&my_kernel``, ``(void *)my_kernel``, ``ns::k<float, 256>``."""
    t = "".join(text(node).split())
    while True:
        cast = re.match(r"^\((?:const)?void\*\)|^reinterpret_cast<[^>]*>|^static_cast<[^>]*>", t)
        if cast is None:
            break
        t = t[cast.end():]
    t = t.lstrip("&(").rstrip(")")
    return t.split("<", 1)[0].split("::")[-1]


def occupancy_query(text: Callable[[Node], str], call: Node) -> OccupancyQuery | None:
    """The :class:`OccupancyQuery` of ``call`` (a ``call_expression``), else ``None`` (another call, or too few
    arguments for the form). ``text`` gives a node's source text (the analysis's ``env.t``, the evaluator's
    ``node_text``)."""
    fn = call.child_by_field_name("function")
    name = text(fn).split("::")[-1].strip() if fn is not None else ""
    kind = OCCUPANCY_CALLS.get(name)
    arguments = call.child_by_field_name("arguments")
    args = [a for a in (arguments.named_children if arguments is not None else []) if a.type != "comment"]
    flags_at = 4 if kind == "blocks" else 5
    if kind is None or len(args) < (4 if kind == "blocks" else 3) or (name.endswith("WithFlags") and
                                                                      len(args) <= flags_at):
        return None
    flags = args[flags_at] if name.endswith("WithFlags") else None
    if kind == "blocks":
        return OccupancyQuery(name, kind, (args[0],), _kernel_name(text, args[1]), args[2], args[3], None, flags)
    return OccupancyQuery(name, kind, (args[0], args[1]), _kernel_name(text, args[2]), None,
                          args[3] if len(args) > 3 else None, args[4] if len(args) > 4 else None, flags)


def occupancy_expressions(query: OccupancyQuery, threads: str, smem: str, limit: str) -> tuple[str, ...]:
    """The harness expressions of the outputs of ``query``, in order, given its arguments as harness expressions:
    ``("blocks_per_sm(256, 0)",)``, or ``("occupancy_grid(0, 0)", "occupancy_block(0, 0)")`` for the
    ``minGridSize`` and ``blockSize`` of ``cudaOccupancyMaxPotentialBlockSize``."""
    if query.kind == "blocks":
        return (f"blocks_per_sm({threads}, {smem})",)
    return (f"occupancy_grid({smem}, {limit})", f"occupancy_block({smem}, {limit})")


def attribute_quantity(attribute_text: str) -> str | None:
    """The quantity of a ``cudaDeviceGetAttribute`` attribute argument (``"cudaDevAttrMultiProcessorCount"``,
    qualified or not), else ``None``."""
    return ATTRIBUTES.get(attribute_text.strip().split("::")[-1])


def property_quantity(field: str) -> str | None:
    """The quantity of a ``cudaDeviceProp`` field (``"multiProcessorCount"``), else ``None``."""
    return PROPERTY_FIELDS.get(field.strip())


def _address_of(env: ConstEnv, arg: Node) -> str | None:
    arg = unwrap_parens(arg)
    if arg.type == "pointer_expression" and env.t(arg).lstrip().startswith("&"):
        target = arg.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            return env.t(target)
    return None


def host_device_values(env: ConstEnv, host: Node | None) -> tuple[dict[str, str], set[str]]:
    """The locals of the host function ``host`` that hold a device quantity, and its ``cudaDeviceProp`` locals.

    Returns:
        ``({local: quantity}, {prop locals})``: ``sms`` of ``cudaDeviceGetAttribute(&sms,
        cudaDevAttrMultiProcessorCount, dev)``, ``prop`` of ``cudaGetDeviceProperties(&prop, 0)``, and a local
        declared from either (``int sms = prop.multiProcessorCount;``); the outputs of an occupancy call
        (:func:`occupancy_query`: ``per_sm``, ``min_grid``, ``block``) hold ``"occupancy"``.
    """
    values: dict[str, str] = {}
    props: set[str] = set()
    if host is None:
        return values, props
    for call in of_type(host, "call_expression"):
        query = occupancy_query(env.t, call)
        for out in query.outputs if query is not None else ():
            if (target := _address_of(env, out)) is not None:
                values[target] = "occupancy"
        fname = env.t(call.child_by_field_name("function")).split("::")[-1].strip()
        arguments = call.child_by_field_name("arguments")
        args = [a for a in (arguments.named_children if arguments is not None else []) if a.type != "comment"]
        if not args:
            continue
        target = _address_of(env, args[0])
        if target is None:
            continue
        if fname == "cudaDeviceGetAttribute" and len(args) >= 2 and (q := attribute_quantity(env.t(args[1]))):
            values[target] = q
        elif fname in PROPERTIES_CALLS:
            props.add(target)
    for d in of_type(host, "init_declarator"):
        name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
        if name is None or value is None or name.type != "identifier":
            continue
        found = device_quantities_of_node(env, value, values, props)
        if len(found) == 1:
            values.setdefault(env.t(name), found[0])
    return values, props


def device_quantities_of_node(env: ConstEnv, node: Node, values: dict[str, str], props: set[str]) -> tuple[str, ...]:
    """The device quantities the expression ``node`` reads, through ``values`` and ``props`` (see
    :func:`host_device_values`), sorted."""
    out: set[str] = set()
    for n in [node, *of_type(node, ("identifier", "field_expression", "call_expression"))]:
        if n.type == "identifier" and env.t(n) in values:
            out.add(values[env.t(n)])
        elif n.type == "call_expression" and env.t(n.child_by_field_name("function")).strip() in HELPERS:
            out.add("sm_count")
        elif n.type == "field_expression":
            obj, field = n.child_by_field_name("argument"), n.child_by_field_name("field")
            if obj is not None and env.t(obj) in props and (q := property_quantity(env.t(field))):
                out.add(q)
    return tuple(sorted(out))


def device_quantities(expr: sympy.Expr | None, values: dict[str, str], props: set[str]) -> tuple[str, ...]:
    """The device quantities a launch component's sympy form reads (locals followed to their initializer by the
    analysis layer keep their names: ``4*sms``; a property field stays ``expr(prop.multiProcessorCount)``)."""
    if expr is None:
        return ()
    out: set[str] = set()
    for s in expr.free_symbols:
        name = str(s)
        if name in values:
            out.add(values[name])
        elif name.startswith("expr(") and "." in name:
            obj, _, field = name[len("expr("):-1].partition(".")
            if obj.strip() in props and (q := property_quantity(field)):
                out.add(q)
    return tuple(sorted(out))


def in_words(quantities: tuple[str, ...]) -> str:
    """``"the device's SM count"`` for ``("sm_count",)``; several are joined with "and". The occupancy takes in
    the SM count (blocks per SM times SMs is the grid of the device's occupancy): ``("occupancy", "sm_count")``
    is ``"the device's occupancy"``."""
    if "occupancy" in quantities:
        quantities = tuple(q for q in quantities if q != "sm_count")
    return " and ".join(WORDS.get(q, q) for q in quantities)
