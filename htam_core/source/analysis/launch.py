"""The launch query: where a kernel is launched, and its grid and block followed through variables.

``LAUNCH_QUERY`` is the one tree-sitter query for ``k<<<grid, block, smem, stream>>>(args)``; the
source model, the transforms and the guards use it, and :func:`launch_config` is the one reader of a
launch's ``<<<...>>>`` arguments. :func:`dims_of` follows a ``grid``/``block``
argument to its components: ``256`` -> ``[256]``, ``dim3(16, 16)`` -> ``[16, 16]``, and a variable
declared ``dim3 b(16, 16)`` / ``dim3 b = dim3(...)`` / ``dim3 b{...}`` / ``int b = expr`` (in the
launching function) to its declaration's components.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.fnptr import pointer_kernels
from htam_core.source.analysis.syntax import captures, of_type, text, unwrap_parens

#: ``k<<<cfg>>>(args)``: captures ``call``, ``fn`` (the callee), ``cfg`` (the ``<<<...>>>``) and ``args``.
LAUNCH_QUERY = "(call_expression function: (_) @fn (kernel_call_syntax) @cfg arguments: (argument_list) @args) @call"


def callee_name(fn: Node, src: bytes) -> str:
    """Unqualified name of a launched function node (``k<T, 4>``, ``ns::k``, ``ns::k<T, 4>``, ``::a::b::k<T>`` ->
    ``k``): the qualifiers are peeled off first, then the template arguments (whose own ``::``, as in
    ``k<std::int64_t>``, are not the kernel's)."""
    while fn.type in ("qualified_identifier", "template_function"):
        inner = fn.child_by_field_name("name")
        if inner is None:
            break
        fn = inner
    return text(fn, src).split("::")[-1].split("<")[0].strip()


def launch_config(call: Node) -> tuple[Node, ...] | None:
    """The ``<<<grid, block, smem, stream>>>`` argument nodes of launch ``call`` (comments left out, so that
    ``k<<<g, /* threads */ 256>>>`` has block ``256``), or ``None`` when ``call`` is not a ``<<<>>>`` launch.
    The one reader of a launch's configuration: the source model, the facts and the harness use it."""
    cfg = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
    return None if cfg is None else tuple(c for c in cfg.named_children if c.type != "comment")


@dataclass(frozen=True)
class LaunchCall:
    """One ``<<<>>>`` call in a tree: the call, the callee node, the config arguments and the host function.

    ``pointer_kernels``: when the callee is a function-pointer variable or a table of kernels
    (``kernel<<<...>>>`` after ``kernel = &k;``), every function it may run (:mod:`.fnptr`); ``()`` for a
    launch that names its kernel.

    ``kernel_args`` and ``macro``: for a launch written through a launch macro (``LAUNCH(k, g, b, x, n)``;
    :func:`~htam_core.source.analysis.launch_slots.macro_launch_calls`), ``call`` is the use, ``fn`` and ``config``
    are the use's arguments that are the kernel and the ``<<<...>>>`` slots, ``kernel_args`` those that are the
    kernel's arguments, and ``macro`` the macro's name; ``None`` and ``""`` for a ``<<<>>>`` call, whose
    arguments are the call's (:func:`launch_arguments`).

    ``api`` and ``args_known``: for a launch through the runtime API (``cudaLaunchKernel((const void*)k, grid, block,
    args, smem, stream)``, ``cudaLaunchKernelEx(&config, k, a, b)``; :mod:`~htam_core.source.analysis.api_launch`),
    the launcher's name, ``config`` the expressions in its slots (or assigned to the config's fields) and
    ``kernel_args`` the kernel's arguments; ``args_known`` is False when those cannot be read (no
    ``void* args[] = {&a, ...}`` array in sight): ``kernel_args`` is then ``()`` and a reader that needs them refuses.
    ``smem_after``: for such a launch that passes no shared-bytes argument (``cudaLaunchKernel(k, g, b, args)``, the
    C++ overload's defaults), the argument after which one goes; ``None`` otherwise.
    ``""`` and True for a ``<<<>>>`` call."""

    call: Node
    fn: Node
    config: tuple[Node, ...]
    host: Node | None
    pointer_kernels: tuple[str, ...] = ()
    kernel_args: tuple[Node, ...] | None = None
    macro: str = ""
    api: str = ""
    args_known: bool = True
    smem_after: Node | None = None


def launch_arguments(call: Node, kernel_args: tuple[Node, ...] | None = None) -> list[Node]:
    """The kernel argument nodes of a launch: ``kernel_args`` when given (a launch through a macro,
    :attr:`LaunchCall.kernel_args`), else those of ``call``'s argument list, comments left out."""
    if kernel_args is not None:
        return list(kernel_args)
    args = call.child_by_field_name("arguments")
    return [a for a in (args.named_children if args is not None else []) if a.type != "comment"]


def host_of(node: Node) -> Node | None:
    """The function (or lambda) that contains ``node``."""
    host = node.parent
    while host is not None and host.type not in ("function_definition", "lambda_expression"):
        host = host.parent
    return host


def launch_calls(root: Node, src: bytes, kernel_name: str | None = None) -> list[LaunchCall]:
    """Every ``<<<>>>`` launch under ``root`` (of ``kernel_name`` only, when given), in source order. A launch
    through a function pointer or a table of kernels (``kernel = &k; kernel<<<g, b>>>(...)``) is a launch of
    each kernel the pointer is given (:func:`~htam_core.source.analysis.fnptr.pointer_kernels`)."""
    out = []
    for call in captures("cuda", LAUNCH_QUERY, root).get("call", []):
        fn = call.child_by_field_name("function")
        if fn is None:
            continue
        direct = callee_name(fn, src) == kernel_name
        via = () if direct else pointer_kernels(fn, src)
        if kernel_name is not None and not direct and kernel_name not in via:
            continue
        out.append(LaunchCall(call, fn, launch_config(call) or (), host_of(call), via))
    out.sort(key=lambda c: c.call.start_byte)
    return out


def dims_of(env: ConstEnv, expr: Node, scope: Node | None) -> list[Node]:
    """Component expressions of a launch ``grid``/``block`` argument (see module docstring), without trailing
    components that are the constant 1: ``dim3(8, 8, 1)`` is a 2-D block, ``dim3(256, 1, 1)`` a 1-D one, as
    ``dim3``'s omitted components default to 1 (CUDA C++ Programming Guide, "dim3"). A leading or middle 1 stays
    (it places the others). The one reader of launch dimensions: every caller counts the same dimensions."""
    comps = _components(env, expr, scope)
    while len(comps) > 1:
        c = env.const(comps[-1], scope)
        if c is None or c.value != 1:
            break
        comps.pop()
    return comps


def _components(env: ConstEnv, expr: Node, scope: Node | None) -> list[Node]:
    """Every component expression of a launch ``grid``/``block`` argument, as written."""
    expr = unwrap_parens(expr)
    if expr.type == "call_expression" and env.t(expr.child_by_field_name("function")) == "dim3":
        args = expr.child_by_field_name("arguments")
        return list(args.named_children) if args is not None else [expr]
    if expr.type in ("initializer_list", "argument_list"):
        return list(expr.named_children)
    if expr.type == "identifier" and scope is not None:
        name = env.t(expr)
        if env.assigned_in(scope, name):
            return [expr]
        for decl in of_type(scope, "declaration"):
            if decl.start_byte > expr.start_byte or env.t(decl.child_by_field_name("type")) != "dim3":
                continue
            for d in decl.children_by_field_name("declarator"):
                if d.type != "init_declarator":
                    continue
                dn, v = d.child_by_field_name("declarator"), d.child_by_field_name("value")
                if dn is None or env.t(dn) != name or v is None:
                    continue
                if v.type in ("argument_list", "initializer_list"):
                    return list(v.named_children)
                return _components(env, v, scope)
    return [expr]


#: the components of a ``dim3``, in order
DIM3_FIELDS = ("x", "y", "z")


def reads_block_dim(expr: Node, src: bytes, block: Node, dim: int) -> bool:
    """True when ``expr`` (a grid component, followed through variables) reads component ``dim`` (0, 1, 2)
    of the launch's block variable: ``(N + block.x - 1) / block.x`` for ``k<<<grid, block>>>``. Such a grid
    follows the block size along ``dim`` whatever that size is (the idiom of the CUDA Programming Guide's
    ``numBlocks(N / threadsPerBlock.x, ...)``). ``block`` is the launch's block argument; only a variable
    (``dim3 block(256)``, ``dim3 threads{16, 16}``) has components to read, so any other form gives False."""
    b = unwrap_parens(block)
    if b.type != "identifier" or not 0 <= dim < len(DIM3_FIELDS):
        return False
    name = text(b, src)
    for f in of_type(expr, "field_expression"):
        arg, field = f.child_by_field_name("argument"), f.child_by_field_name("field")
        if arg is not None and field is not None and arg.type == "identifier" and text(arg, src) == name \
                and text(field, src) == DIM3_FIELDS[dim]:
            return True
    return False


def template_bindings(env: ConstEnv, fn: Node, params: list[str], scope: Node | None) -> dict[str, int]:
    """Kernel template parameters bound to integers by the callee ``k<float, 256>`` of a launch.

    ``params`` are the kernel's template parameter declarations as written (``"typename T"``,
    ``"int BLOCK"``, ``"int N = 4"``); defaults apply when the site omits an argument.
    """
    args = fn.child_by_field_name("arguments") if fn.type == "template_function" else None
    values = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
    out: dict[str, int] = {}
    for k, p in enumerate(params):
        head, _, default = p.partition("=")
        words = head.replace("...", " ").split()
        if len(words) < 2 or words[0] in ("typename", "class"):
            continue
        name = words[-1]
        if k < len(values):
            node = values[k]
            if node.type == "type_descriptor" and node.named_child_count == 1:
                node = node.named_children[0]
            c = env.const(node, scope)
            if c is not None:
                out[name] = c.value
        elif default.strip():
            v = env.value_of_text(default.strip())
            if isinstance(v, int):
                out[name] = v
    return out
