"""The non-type template parameters of a host function template and the uses that bind them.

``template <int BX, int BY> void launch_axpby(...) { dim3 block(BX, BY); k<<<grid, block>>>(...); }`` called as
``launch_axpby<32, 8>(...)`` launches ``k`` with 32x8 blocks: inside the wrapper ``BX`` is the template argument
of its instantiation (C++17 [temp.arg.nontype]). A function template is instantiated once per distinct argument
list, so ``BX`` has one value in the file exactly when every use of the template gives it the same one.
:func:`template_parameter` says whether a name is such a parameter of the function around a use and
:func:`template_uses` lists the uses of the function (a call or an explicit instantiation with its template
arguments, a call that deduces them, a use taken as a value); the values are computed by the constant evaluator
(:meth:`~htam_core.source.analysis.constants.ConstEnv.definition`), which reads each argument in the scope of its
use and refuses with a reason when the uses disagree or one cannot be read.

A kernel's (``__global__``) own template parameters are not read here: the facts bind them at each launch.
Reads the syntax tree only; never raises for odd code.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.instantiations import called_name, function_name
from htam_core.source.analysis.syntax import text, walk

__all__ = ["TemplateParam", "TemplateUse", "enclosing_function", "template_parameter", "template_uses"]


@dataclass(frozen=True)
class TemplateParam:
    """A non-type template parameter of a host function template.

    Attributes:
        function: the ``function_definition``; ``name``: its plain name (``launch_axpby``).
        position: the parameter's index in the template parameter list (type parameters counted).
        default: the default argument's node (``int BY = 8``), or ``None``.
    """

    function: Node
    name: str
    position: int
    default: Node | None


@dataclass(frozen=True)
class TemplateUse:
    """One use of a function template.

    Attributes:
        node: the use (a ``template_function`` ``f<32, 8>``, or the identifier ``f`` of a call or a value).
        args: the template argument nodes written (``[]`` for none); ``None`` when the use is no call and
            writes none (``&f`` taken as a value: its arguments come from the target type, not read here).
    """

    node: Node
    args: list[Node] | None


def enclosing_function(scope: Node | None) -> Node | None:
    """The ``function_definition`` that is ``scope`` or holds it (a lambda's own function), or ``None``."""
    while scope is not None and scope.type != "function_definition":
        scope = scope.parent
    return scope


def template_parameter(scope: Node | None, name: str, src: bytes) -> TemplateParam | None:
    """The non-type template parameter ``name`` of the host function template holding ``scope``, or ``None``
    (no template around it, ``name`` is a type parameter or not a parameter, the function is a ``__global__``
    kernel)."""
    fn = enclosing_function(scope)
    par = fn.parent if fn is not None else None
    if fn is None or par is None or par.type != "template_declaration":
        return None
    if any(c.type == "__global__" or text(c, src) == "__global__" for c in fn.children if not c.is_named):
        return None
    fname = function_name(fn, src)
    plist = par.child_by_field_name("parameters")
    if fname is None or plist is None:
        return None
    params = [p for p in plist.named_children if p.type != "comment"]
    for k, p in enumerate(params):
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        d = p.child_by_field_name("declarator")
        if d is not None and d.type == "identifier" and text(d, src) == name:
            return TemplateParam(fn, fname, k, p.child_by_field_name("default_value"))
    return None


def template_uses(root: Node, src: bytes, fname: str) -> list[TemplateUse]:
    """Every use of function ``fname`` under ``root`` other than its own declarations, in source order."""
    out: list[TemplateUse] = []
    for n in walk(root):
        if n.type == "template_function" and called_name(n, src) == fname:
            if n.parent is not None and n.parent.type == "function_declarator" and \
                    n.parent.parent is not None and n.parent.parent.type == "function_definition":
                continue  # a specialization's own definition: not an instantiation of the template
            args = n.child_by_field_name("arguments")
            out.append(TemplateUse(n, [a for a in (args.named_children if args is not None else [])
                                       if a.type != "comment"]))
        elif n.type == "identifier" and text(n, src) == fname:
            p = n.parent
            if p is None or p.type in ("function_declarator", "template_function"):
                continue  # the function's own declarator, or a use read as its template_function
            if p.type == "qualified_identifier" and p.parent is not None and p.parent.type == "function_declarator":
                continue
            q = p if p.type == "qualified_identifier" else n
            call = q.parent
            is_call = call is not None and call.type == "call_expression" and call.child_by_field_name("function") == q
            out.append(TemplateUse(n, [] if is_call else None))
    return out
