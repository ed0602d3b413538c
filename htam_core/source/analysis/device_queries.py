"""Values a host program reads from the device at run time, such as the number of SMs for a grid.

Host code often sizes a grid from the device it runs on::

    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);   k<<<sms * 4, 256>>>(...);
    cudaGetDeviceProperties(&prop, 0);   k<<<prop.multiProcessorCount * 2, 256>>>(...);

Such a value is neither a constant nor unknown. It is a *device quantity* that whatever runs the kernel can
read again on its own device. This module is the one table of these quantities, shared by the launch facts
(:attr:`~htam_core.source.analysis.facts.Dim.device`) and the host-code evaluator of the harness. Each
quantity has a name: the name a harness expression uses for it (``sm_count``), the words a message uses for
it, and the way it is read: a ``cudaDeviceGetAttribute`` attribute or a ``cudaDeviceProp`` field.

Idea source: CUDA Runtime API, ``cudaDeviceGetAttribute`` and ``cudaDeviceProp`` (``multiProcessorCount``);
NVIDIA developer blog, "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops" (a grid sized to the SMs).
"""

from __future__ import annotations

import sympy
from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.syntax import of_type, unwrap_parens

#: ``cudaDeviceGetAttribute`` attributes read as a device quantity, by the quantity's name.
ATTRIBUTES: dict[str, str] = {"cudaDevAttrMultiProcessorCount": "sm_count"}
#: ``cudaDeviceProp`` fields read as a device quantity.
PROPERTY_FIELDS: dict[str, str] = {"multiProcessorCount": "sm_count"}
#: Each quantity in words (messages: "the grid from the device's SM count (read at run time)").
WORDS: dict[str, str] = {"sm_count": "the device's SM count"}
#: The call that fills a whole ``cudaDeviceProp``.
PROPERTIES_CALLS = ("cudaGetDeviceProperties", "cudaGetDeviceProperties_v2")
#: htam's own grid helpers (written by the launch steps), as harness expressions over their arguments ``{0}``,
#: ``{1}``: ``htam_sm_blocks(per_sm)`` is ``per_sm`` blocks per SM, ``htam_sm_grid(blocks, per_sm)`` caps
#: ``blocks`` at that.
HELPERS: dict[str, tuple[int, str]] = {"htam_sm_blocks": (1, "sm_count * {0}"),
                                       "htam_sm_grid": (2, "min({0}, sm_count * {1})")}


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
        declared from either (``int sms = prop.multiProcessorCount;``).
    """
    values: dict[str, str] = {}
    props: set[str] = set()
    if host is None:
        return values, props
    for call in of_type(host, "call_expression"):
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
    """``"the device's SM count"`` for ``("sm_count",)``; several are joined with "and"."""
    return " and ".join(WORDS.get(q, q) for q in quantities)
