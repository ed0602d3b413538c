"""The names a Python file gives ``triton.language``, and ``tl.*`` calls in one normal form.

Triton code spells its language module several ways: ``import triton.language as tl`` (the tutorials),
``import triton.language as language``, ``from triton import language as tl2``, ``import triton`` then
``triton.language.load``. The analysis layer reads every call through :meth:`TritonNames.canonical`, so a fact
about ``tl.load`` holds whatever the alias; a transform writes new code with :attr:`TritonNames.spelling`, the
file's own name for the module, so the code it inserts runs in that file.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.syntax import text

#: The normal form's prefix: every ``triton.language`` call reads as ``tl.<name>``.
CANONICAL = "tl"


@dataclass(frozen=True)
class TritonNames:
    """How one file names ``triton.language``.

    Attributes:
        prefixes: dotted names bound to ``triton.language`` in the file, longest first (``"triton.language"``,
            ``"language"``, ``"tl"``); ``"tl"`` is always one (the common spelling, assumed when the file
            does not import the module itself).
        spelling: the name to write new ``triton.language`` calls with: the file's first alias
            (``"tl"`` when the file binds it, or binds nothing).
    """

    prefixes: tuple[str, ...] = ("triton.language", CANONICAL)
    spelling: str = CANONICAL

    def canonical(self, callee: str) -> str:
        """``callee`` with its ``triton.language`` prefix written ``tl``: ``"language.load"`` -> ``"tl.load"``,
        ``"triton.language.math.exp"`` -> ``"tl.math.exp"``; other callees (``"range"``, ``"x.to"``) unchanged.

        Args:
            callee: a call's function as written (whitespace inside is dropped first).
        """
        c = "".join(callee.split())
        for p in self.prefixes:
            if c.startswith(p + "."):
                return f"{CANONICAL}.{c[len(p) + 1:]}"
        return c


def triton_names(root: Node, src: bytes | None = None) -> TritonNames:
    """The :class:`TritonNames` of the Python file whose tree is ``root``.

    Reads the ``import`` statements of the file outside function and class bodies: ``import triton.language as X``, ``from triton import language
    [as X]``, ``import triton [as T]`` (``T.language``) and ``import triton.language``. ``src``: the text the
    tree's offsets refer to (``None``: each node's own text). Never raises.
    """
    aliases: list[str] = []
    triton_mods: list[str] = []
    for st in _imports(root):
        if st.type == "import_statement":
            for n in st.named_children:
                name, alias = _dotted_alias(n, src)
                if name == "triton.language":
                    aliases.append(alias or "triton.language")
                elif name == "triton":
                    triton_mods.append(alias or "triton")
        else:
            mod = st.child_by_field_name("module_name")
            if mod is None or _text(mod, src) != "triton":
                continue
            for n in st.named_children[1:]:
                name, alias = _dotted_alias(n, src)
                if name == "language":
                    aliases.append(alias or "language")
    explicit = [a for a in aliases if "." not in a]
    prefixes = set(aliases) | {f"{t}.language" for t in triton_mods} | {"triton.language", CANONICAL}
    spelling = CANONICAL if CANONICAL in explicit or not explicit else explicit[0]
    return TritonNames(tuple(sorted(prefixes, key=lambda p: (-len(p), p))), spelling)


def binding_imports(root: Node, src: bytes | None = None) -> str:
    """The import statements of the file (outside function and class bodies) that bind ``triton`` or
    ``triton.language``, one per line: prepended to a kernel's own text, they give it the file's names (the
    memory's facts read a kernel from its own text).

    Args:
        root: the module's tree.
        src: the text the tree's offsets refer to (``None``: each node's own text).
    """
    out = []
    for st in _imports(root):
        if st.type == "import_statement":
            keep = any(_dotted_alias(n, src)[0] in ("triton", "triton.language") for n in st.named_children)
        else:
            mod = st.child_by_field_name("module_name")
            keep = mod is not None and _text(mod, src) == "triton"
        if keep:
            out.append(" ".join(_text(st, src).split()))
    return "\n".join(out)


def _imports(root: Node) -> list[Node]:
    """The import statements of the module, outside function and class bodies (cheap on large files)."""
    out: list[Node] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in ("import_statement", "import_from_statement"):
            out.append(n)
        elif n.type not in ("function_definition", "class_definition", "decorated_definition"):
            stack.extend(reversed(n.named_children))
    return out


def _text(node: Node, src: bytes | None) -> str:
    """``node``'s text, from ``src`` or (``None``) from the node itself."""
    return text(node, src) if src is not None else (node.text or b"").decode("utf-8", "replace")


def _dotted_alias(node: Node, src: bytes | None) -> tuple[str, str | None]:
    """``("triton.language", "tl")`` for ``triton.language as tl``, ``("triton", None)`` for ``triton``."""
    if node.type == "aliased_import":
        name, alias = node.child_by_field_name("name"), node.child_by_field_name("alias")
        return (_text(name, src) if name is not None else "", _text(alias, src) if alias is not None else None)
    if node.type == "dotted_name":
        return _text(node, src), None
    return "", None
