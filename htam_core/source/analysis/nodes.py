"""The analysis layer's node queries for the transforms: what a syntax node is, and the nodes of a kind under it.

A transform edits source through nodes (their byte ranges), but it never tests a grammar's node-type strings
itself: it asks this module (``is_identifier(n)``, ``declarations(body)``, ``is_loop(s)``), so the grammar's
spelling of a construct is known in one place, and a construct with several node types (a loop is a ``for``,
``while`` or ``do`` statement; a Python assignment is plain or augmented) is one question. It also holds the line
and indentation arithmetic of edits and the syntax-error ranges of a tree. Parsing, walking and the statement
reader come from :mod:`htam_core.source.analysis.syntax` (re-exported here); facts about a kernel come from
:func:`htam_core.source.analysis.analyze`. All offsets are byte offsets into UTF-8 text.

The node types are those of the tree-sitter CUDA grammar (``tree-sitter-cuda``, a superset of C++) and of the
Python grammar (``tree-sitter-python``) for Triton.
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.syntax import (
    of_type,
    parse,
    smallest_covering,
    statement_start,
    statements,
    strip_casts,
    text,
    unwrap_parens,
    walk,
)

__all__ = [
    "BREAKABLE_KINDS", "COMPOUND_KINDS", "DECLARATION", "FOR_LOOP", "FUNCTION", "JUMP_KINDS", "LOOP_KINDS",
    "NAME_DECLARATION_KINDS", "Node", "PY_ANY_ASSIGNMENT", "PY_ASSIGNMENT", "PY_ASSIGNMENT_KINDS", "PY_CALL",
    "SUBSCRIPT", "WRITE_KINDS", "any_py_assignments", "asm_outputs", "assignments", "binaries", "blocks", "calls", "comments",
    "comparison_operators", "declaration_type", "declarations", "function_parameter_names", "effects", "error_ranges", "fields", "for_loops",
    "for_or_while_loops", "function_declarators", "function_definitions", "function_exits", "identifiers",
    "import_statements", "include_insert_point", "indent_of", "init_declarators", "integers", "is_address_of",
    "is_any_py_assignment", "is_argument_list", "is_assignment", "is_augmented_assignment", "is_binary",
    "is_binary_operator", "is_block", "is_brace_or_call_list", "is_breakable", "is_call", "is_call_or_group",
    "is_comment", "is_compound_statement", "is_condition_clause", "is_conditional", "is_declaration",
    "is_declarator_around_name", "is_default_parameter", "is_else_clause", "is_error",
    "is_expression_statement", "is_field", "is_for", "is_for_or_while", "is_function_declarator",
    "is_function_definition", "is_goto", "is_identifier", "is_if", "is_import", "is_init_declarator", "is_integer",
    "is_keyword_argument", "is_lambda", "is_launch_bounds", "is_loop", "is_loop_exit", "is_memory_reference",
    "is_name_declaration", "is_name_or_number", "is_number", "is_parenthesized", "is_pointer_declarator",
    "is_pointer_expression", "is_positional_argument", "is_preproc_include", "is_py_assignment", "is_py_block",
    "is_py_block_or_module", "is_py_call", "is_range_for", "is_return", "is_simple_operand", "is_string", "is_subscript",
    "is_subscript_arguments", "is_template_declaration", "is_type_identifier", "is_type_qualifier", "is_pointer_qualifier", "is_unary",
    "is_unary_operator", "is_update", "is_while", "is_wrapping_declarator", "is_write", "join_lines", "jumps",
    "keyword_arguments", "line_start", "loops", "names_and_fields", "names_and_types", "numbers", "of_type",
    "one_line", "only_space_before", "parse", "py_assignments", "py_calls", "range_for_loops", "references", "returns",
    "smallest_covering", "statement_span", "statement_start", "statements", "strip_casts", "subscripts", "text",
    "type_names", "unwrap_parens", "use_site", "walk", "writes", "writes_or_addresses",
]

# ------------------------------------------------------------------------------------------------ kind groups
#: C/CUDA loop statements.
LOOP_KINDS = ("for_statement", "while_statement", "do_statement")
#: C/CUDA statements a ``break`` leaves: the loops and ``switch``.
BREAKABLE_KINDS = (*LOOP_KINDS, "switch_statement")
#: C/CUDA statements that hold other statements (the branches and loops).
COMPOUND_KINDS = ("if_statement", *BREAKABLE_KINDS)
#: C/CUDA statements that leave the code after them: ``break``, ``continue``, ``return``, ``goto``.
JUMP_KINDS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
#: C/CUDA expressions that write a variable in place: an assignment (plain or compound) or ``++``/``--``.
WRITE_KINDS = ("assignment_expression", "update_expression")
#: Python assignments: plain (``x = v``) or augmented (``x += v``).
PY_ASSIGNMENT_KINDS = ("assignment", "augmented_assignment")
#: C/CUDA declarations of names and types that a rewrite may drop when it copies statements: a variable declaration,
#: ``namespace x = y;``, ``using x::y;``, ``using T = U;`` and ``typedef``.
NAME_DECLARATION_KINDS = frozenset({"declaration", "namespace_alias_definition", "using_declaration",
                                    "alias_declaration", "type_definition"})

# ------------------------------------------------------------------------- selectors for ``node_at(span, kinds)``
# The node a fact's span stands for (``unit.node_at(loop.span, FOR_LOOP)``): the kinds a span may be read as.
#: A C/CUDA ``for`` statement; also the Python ``for`` statement (the same node type in both grammars).
FOR_LOOP = ("for_statement",)
#: A C/CUDA declaration statement.
DECLARATION = ("declaration",)
#: A C/CUDA subscript (``a[i]``).
SUBSCRIPT = ("subscript_expression",)
#: A C/CUDA function definition.
FUNCTION = ("function_definition",)
#: A Python call.
PY_CALL = ("call",)
#: A plain Python assignment.
PY_ASSIGNMENT = ("assignment",)
#: A Python assignment, plain or augmented.
PY_ANY_ASSIGNMENT = PY_ASSIGNMENT_KINDS


# ------------------------------------------------------------------------------------------------ C/CUDA kinds
def is_identifier(n: Node | None) -> bool:
    """``n`` is a plain name (``identifier``, C/CUDA and Python alike)."""
    return n is not None and n.type == "identifier"


def identifiers(node: Node) -> list[Node]:
    """The plain names under ``node`` (itself included), in source order."""
    return of_type(node, "identifier")


def references(node: Node, src: bytes, name: str) -> list[Node]:
    """The plain names under ``node`` spelled ``name`` (``src``: the buffer ``node`` indexes)."""
    return [n for n in identifiers(node) if text(n, src) == name]


def is_type_identifier(n: Node | None) -> bool:
    """``n`` is a type's name (``type_identifier``: ``T``, ``scalar_t``)."""
    return n is not None and n.type == "type_identifier"


def type_names(node: Node) -> list[Node]:
    """The type names under ``node`` (``type_identifier``)."""
    return of_type(node, "type_identifier")


def names_and_types(node: Node) -> list[Node]:
    """The plain names and type names under ``node``, in source order."""
    return of_type(node, ("identifier", "type_identifier"))


def is_number(n: Node | None) -> bool:
    """``n`` is a C/CUDA number literal (``256``, ``1.0f``)."""
    return n is not None and n.type == "number_literal"


def numbers(node: Node) -> list[Node]:
    """The C/CUDA number literals under ``node``."""
    return of_type(node, "number_literal")


def is_declaration(n: Node | None) -> bool:
    """``n`` is a C/CUDA declaration statement (``int i = 0, j;``)."""
    return n is not None and n.type == "declaration"


def declaration_type(decl: Node | None) -> Node | None:
    """The type node of a C/CUDA declaration (``int`` of ``int i = 0;``, ``dim3`` of ``dim3 g(4);``), or None."""
    return decl.child_by_field_name("type") if decl is not None else None


def is_deduced_type(n: Node | None) -> bool:
    """``n`` is a type deduced from the initializer (``auto``, ``decltype(auto)``: the placeholder of C++)."""
    return n is not None and n.type == "placeholder_type_specifier"


def declarations(node: Node) -> list[Node]:
    """The C/CUDA declaration statements under ``node``."""
    return of_type(node, "declaration")


def is_init_declarator(n: Node | None) -> bool:
    """``n`` is a declarator with an initializer (``i = 0`` in ``int i = 0;``)."""
    return n is not None and n.type == "init_declarator"


def init_declarators(node: Node) -> list[Node]:
    """The declarators with an initializer under ``node``."""
    return of_type(node, "init_declarator")


def is_function_declarator(n: Node | None) -> bool:
    """``n`` is a function declarator (``k(float *a, int n)``)."""
    return n is not None and n.type == "function_declarator"


def function_declarators(node: Node) -> list[Node]:
    """The function declarators under ``node``."""
    return of_type(node, "function_declarator")


def is_pointer_declarator(n: Node | None) -> bool:
    """``n`` is a pointer declarator (``*p``)."""
    return n is not None and n.type == "pointer_declarator"


def is_declarator_around_name(n: Node | None, *, pointers: bool = False) -> bool:
    """``n`` is a declarator that holds the declared name further in: an array declarator or an init declarator
    (``a[N]``, ``x = v``), and with ``pointers`` a pointer declarator too (``*p``)."""
    kinds = ("array_declarator", "init_declarator", "pointer_declarator") if pointers else (
        "array_declarator", "init_declarator")
    return n is not None and n.type in kinds


def is_name_declaration(n: Node | None) -> bool:
    """``n`` declares names or types only (:data:`NAME_DECLARATION_KINDS`: a variable, ``namespace x = y;``,
    ``using``, ``typedef``)."""
    return n is not None and n.type in NAME_DECLARATION_KINDS


def declared_identifier(d: Node | None) -> Node | None:
    """The identifier a declarator of a declaration names (``sdata`` in ``sdata[]``, ``*p``, ``x = 0``), or
    ``None`` (a function declarator, a structured binding)."""
    while d is not None and d.type != "identifier":
        if d.type not in ("array_declarator", "init_declarator", "pointer_declarator", "reference_declarator"):
            return None
        d = d.child_by_field_name("declarator") or next((c for c in d.named_children if c.type.endswith(
            "declarator") or c.type == "identifier"), None)
    return d


def function_parameter_names(fn: Node, src: bytes) -> list[str]:
    """The parameter names of the function definition ``fn`` in order, ``""`` for an unnamed one or one whose
    declarator names no plain identifier (a function pointer ``float (*f)(float)``, ``...``); comments are no
    parameter. ``src`` is the text ``fn`` was parsed from. The one reader of a function's parameter names (a
    kernel's own: :func:`~htam_core.source.analysis.forms.param_names`)."""
    d = fn.child_by_field_name("declarator")
    while d is not None and not is_function_declarator(d):
        d = d.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    out = []
    for p in plist.named_children if plist is not None else []:
        if is_comment(p):
            continue
        name = declared_identifier(p.child_by_field_name("declarator"))
        out.append(text(name, src) if name is not None else "")
    return out


def is_wrapping_declarator(n: Node | None) -> bool:
    """``n`` is a declarator that wraps another: a pointer, reference or array declarator."""
    return n is not None and n.type in ("pointer_declarator", "reference_declarator", "array_declarator")


def is_type_qualifier(n: Node | None) -> bool:
    """``n`` is a type qualifier (``const``, ``volatile``, ``__restrict__``)."""
    return n is not None and n.type == "type_qualifier"


def is_pointer_qualifier(n: Node | None) -> bool:
    """``n`` qualifies the pointer of a pointer declarator: a type qualifier (``const``, ``__restrict__``) or
    ``__restrict``, which the grammar reads as an MS pointer modifier (nvcc accepts it as ``__restrict__``)."""
    return n is not None and n.type in ("type_qualifier", "ms_pointer_modifier")


def function_definitions(node: Node) -> list[Node]:
    """The function definitions under ``node`` (C/CUDA and Python alike)."""
    return of_type(node, "function_definition")


def is_function_definition(n: Node | None) -> bool:
    """``n`` is a function definition (C/CUDA and Python alike)."""
    return n is not None and n.type == "function_definition"


def is_template_declaration(n: Node | None) -> bool:
    """``n`` is a ``template <...>`` declaration."""
    return n is not None and n.type == "template_declaration"


def is_launch_bounds(n: Node | None) -> bool:
    """``n`` is a ``__launch_bounds__(...)`` specifier."""
    return n is not None and n.type == "launch_bounds"


def is_preproc_include(n: Node | None) -> bool:
    """``n`` is an ``#include`` line."""
    return n is not None and n.type == "preproc_include"


def is_comment(n: Node | None) -> bool:
    """``n`` is a comment (C/CUDA and Python alike)."""
    return n is not None and n.type == "comment"


def comments(node: Node) -> list[Node]:
    """The comments under ``node``."""
    return of_type(node, "comment")


def is_block(n: Node | None) -> bool:
    """``n`` is a C/CUDA block (``compound_statement``: ``{ ... }``)."""
    return n is not None and n.type == "compound_statement"


def blocks(node: Node) -> list[Node]:
    """The C/CUDA blocks under ``node``."""
    return of_type(node, "compound_statement")


def is_expression_statement(n: Node | None) -> bool:
    """``n`` is an expression statement (``a[i] = b;``, ``f(x);``; C/CUDA and Python alike)."""
    return n is not None and n.type == "expression_statement"


def is_if(n: Node | None) -> bool:
    """``n`` is an ``if`` statement (C/CUDA and Python alike)."""
    return n is not None and n.type == "if_statement"


def is_condition_clause(n: Node | None) -> bool:
    """``n`` is the parenthesized condition of a C/CUDA ``if``/``while``/``switch`` (``condition_clause``)."""
    return n is not None and n.type == "condition_clause"


def is_for(n: Node | None) -> bool:
    """``n`` is a ``for`` statement (C/CUDA, not a range ``for``; and Python)."""
    return n is not None and n.type == "for_statement"


def for_loops(node: Node) -> list[Node]:
    """The ``for`` statements under ``node`` (C/CUDA and Python alike)."""
    return of_type(node, "for_statement")


def is_loop(n: Node | None) -> bool:
    """``n`` is a C/CUDA loop: a ``for``, ``while`` or ``do`` statement (:data:`LOOP_KINDS`)."""
    return n is not None and n.type in LOOP_KINDS


def loops(node: Node) -> list[Node]:
    """The C/CUDA loops under ``node`` (:data:`LOOP_KINDS`)."""
    return of_type(node, LOOP_KINDS)


def is_while(n: Node | None) -> bool:
    """``n`` is a C/CUDA ``while`` statement (not a ``do ... while``)."""
    return n is not None and n.type == "while_statement"


def is_for_or_while(n: Node | None) -> bool:
    """``n`` is a C/CUDA ``for`` or ``while`` statement."""
    return n is not None and n.type in ("for_statement", "while_statement")


def for_or_while_loops(node: Node) -> list[Node]:
    """The C/CUDA ``for`` and ``while`` statements under ``node``."""
    return of_type(node, ("for_statement", "while_statement"))


def is_range_for(n: Node | None) -> bool:
    """``n`` is a C++ range-based ``for`` (``for (float v : values)``): its ``declarator`` takes each element of
    its ``right`` in turn."""
    return n is not None and n.type == "for_range_loop"


def range_for_loops(node: Node) -> list[Node]:
    """The C++ range-based ``for`` statements under ``node``."""
    return of_type(node, "for_range_loop")


def is_breakable(n: Node | None) -> bool:
    """``n`` is a statement a ``break`` leaves: a loop or a ``switch`` (:data:`BREAKABLE_KINDS`)."""
    return n is not None and n.type in BREAKABLE_KINDS


def is_compound_statement(n: Node | None) -> bool:
    """``n`` is a statement that holds statements: an ``if``, a loop or a ``switch`` (:data:`COMPOUND_KINDS`)."""
    return n is not None and n.type in COMPOUND_KINDS


def is_loop_exit(n: Node | None) -> bool:
    """``n`` is a ``break`` or ``continue`` statement."""
    return n is not None and n.type in ("break_statement", "continue_statement")


def is_continue(n: Node | None) -> bool:
    """``n`` is a ``continue`` statement."""
    return n is not None and n.type == "continue_statement"


def jumps(node: Node) -> list[Node]:
    """The ``break``, ``continue``, ``return`` and ``goto`` statements under ``node`` (:data:`JUMP_KINDS`)."""
    return of_type(node, JUMP_KINDS)


def is_goto(n: Node | None) -> bool:
    """``n`` is a C/CUDA ``goto`` statement."""
    return n is not None and n.type == "goto_statement"


def asm_outputs(node: Node) -> list[Node]:
    """The lvalues an inline ``asm`` statement under ``node`` writes (``lane`` of ``asm("mov.u32 %0, %%laneid;" :
    "=r"(lane))``): the expressions of its output operands."""
    return [c for op in of_type(node, "gnu_asm_output_operand") for c in op.named_children
            if c.type != "string_literal"]


def is_return(n: Node | None) -> bool:
    """``n`` is a ``return`` statement (C/CUDA and Python alike)."""
    return n is not None and n.type == "return_statement"


def returns(node: Node) -> list[Node]:
    """The ``return`` statements under ``node`` (C/CUDA and Python alike)."""
    return of_type(node, "return_statement")


def function_exits(node: Node) -> list[Node]:
    """The ``return`` and ``goto`` statements under ``node``."""
    return of_type(node, ("return_statement", "goto_statement"))


def is_assignment(n: Node | None) -> bool:
    """``n`` is a C/CUDA assignment, plain or compound (``a = b``, ``s += x``)."""
    return n is not None and n.type == "assignment_expression"


def assignments(node: Node) -> list[Node]:
    """The C/CUDA assignments under ``node``."""
    return of_type(node, "assignment_expression")


def is_update(n: Node | None) -> bool:
    """``n`` is a C/CUDA increment or decrement (``i++``, ``--j``)."""
    return n is not None and n.type == "update_expression"


def is_write(n: Node | None) -> bool:
    """``n`` writes a variable in place: an assignment or an increment/decrement (:data:`WRITE_KINDS`)."""
    return n is not None and n.type in WRITE_KINDS


def writes(node: Node) -> list[Node]:
    """The assignments and increments/decrements under ``node`` (:data:`WRITE_KINDS`)."""
    return of_type(node, WRITE_KINDS)


def effects(node: Node) -> list[Node]:
    """The C/CUDA expressions under ``node`` that may have an effect: calls, assignments and increments."""
    return of_type(node, ("call_expression", *WRITE_KINDS))


def writes_or_addresses(node: Node) -> list[Node]:
    """The increments/decrements and pointer expressions (``&x``, ``*p``) under ``node``."""
    return of_type(node, ("update_expression", "pointer_expression"))


def is_binary(n: Node | None) -> bool:
    """``n`` is a C/CUDA binary expression (``a * b``, ``i < n``)."""
    return n is not None and n.type == "binary_expression"


def binaries(node: Node) -> list[Node]:
    """The C/CUDA binary expressions under ``node``."""
    return of_type(node, "binary_expression")


def is_unary(n: Node | None) -> bool:
    """``n`` is a C/CUDA unary expression (``-x``, ``!c``)."""
    return n is not None and n.type == "unary_expression"


def is_conditional(n: Node | None) -> bool:
    """``n`` is a C/CUDA conditional expression (``c ? a : b``)."""
    return n is not None and n.type == "conditional_expression"


def is_parenthesized(n: Node | None) -> bool:
    """``n`` is a parenthesized expression (C/CUDA and Python alike)."""
    return n is not None and n.type == "parenthesized_expression"


def is_call(n: Node | None) -> bool:
    """``n`` is a C/CUDA call expression (``f(x)``, ``k<<<g, b>>>(x)``)."""
    return n is not None and n.type == "call_expression"


def calls(node: Node) -> list[Node]:
    """The C/CUDA call expressions under ``node``."""
    return of_type(node, "call_expression")


def is_argument_list(n: Node | None) -> bool:
    """``n`` is a call's argument list (C/CUDA and Python alike)."""
    return n is not None and n.type == "argument_list"


def is_brace_or_call_list(n: Node | None) -> bool:
    """``n`` is a call's argument list or a brace initializer list (``dim3 g(a, b)``, ``dim3 g{a, b}``)."""
    return n is not None and n.type in ("argument_list", "initializer_list")


def is_subscript(n: Node | None) -> bool:
    """``n`` is a C/CUDA subscript (``a[i]``)."""
    return n is not None and n.type == "subscript_expression"


def subscripts(node: Node) -> list[Node]:
    """The C/CUDA subscripts under ``node``."""
    return of_type(node, "subscript_expression")


def is_subscript_arguments(n: Node | None) -> bool:
    """``n`` is the bracketed index of a C/CUDA subscript (``[i]`` of ``a[i]``)."""
    return n is not None and n.type == "subscript_argument_list"


def is_field(n: Node | None) -> bool:
    """``n`` is a C/CUDA field expression (``threadIdx.x``, ``p->y``)."""
    return n is not None and n.type == "field_expression"


def fields(node: Node) -> list[Node]:
    """The C/CUDA field expressions under ``node``."""
    return of_type(node, "field_expression")


def names_and_fields(node: Node) -> list[Node]:
    """The plain names and field expressions under ``node``."""
    return of_type(node, ("identifier", "field_expression"))


def is_pointer_expression(n: Node | None) -> bool:
    """``n`` is a C/CUDA address-of or dereference (``&x``, ``*p``)."""
    return n is not None and n.type == "pointer_expression"


def is_address_of(n: Node | None) -> bool:
    """``n`` takes an address (``&x``)."""
    return is_pointer_expression(n) and bool(n.children) and n.children[0].type == "&"  # type: ignore[union-attr]


def is_memory_reference(n: Node | None) -> bool:
    """``n`` reads memory through a name: a subscript, a dereference or a field (``a[i]``, ``*p``, ``s.x``)."""
    return n is not None and n.type in ("subscript_expression", "pointer_expression", "field_expression")


def is_name_or_number(n: Node | None) -> bool:
    """``n`` is a plain name or a number literal."""
    return n is not None and n.type in ("identifier", "number_literal")


def is_simple_operand(n: Node | None) -> bool:
    """``n`` is a plain name, a number literal or a field expression (an operand with no operator)."""
    return n is not None and n.type in ("identifier", "number_literal", "field_expression")


def is_error(n: Node | None) -> bool:
    """``n`` is a parse-error node (``ERROR``)."""
    return n is not None and n.type == "ERROR"


# ------------------------------------------------------------------------------------------------ Python kinds
def is_py_assignment(n: Node | None) -> bool:
    """``n`` is a plain Python assignment (``x = v``)."""
    return n is not None and n.type == "assignment"


def py_assignments(node: Node) -> list[Node]:
    """The plain Python assignments under ``node``."""
    return of_type(node, "assignment")


def is_augmented_assignment(n: Node | None) -> bool:
    """``n`` is a Python augmented assignment (``x += v``)."""
    return n is not None and n.type == "augmented_assignment"


def is_any_py_assignment(n: Node | None) -> bool:
    """``n`` is a Python assignment, plain or augmented (:data:`PY_ASSIGNMENT_KINDS`)."""
    return n is not None and n.type in PY_ASSIGNMENT_KINDS


def any_py_assignments(node: Node) -> list[Node]:
    """The Python assignments, plain or augmented, under ``node`` (:data:`PY_ASSIGNMENT_KINDS`)."""
    return of_type(node, PY_ASSIGNMENT_KINDS)


def is_py_call(n: Node | None) -> bool:
    """``n`` is a Python call (``tl.load(p)``)."""
    return n is not None and n.type == "call"


def py_calls(node: Node) -> list[Node]:
    """The Python calls under ``node``."""
    return of_type(node, "call")


def is_keyword_argument(n: Node | None) -> bool:
    """``n`` is a Python keyword argument (``mask=m``)."""
    return n is not None and n.type == "keyword_argument"


def keyword_arguments(node: Node) -> list[Node]:
    """The Python keyword arguments under ``node``."""
    return of_type(node, "keyword_argument")


def is_positional_argument(n: Node | None) -> bool:
    """``n`` is a Python call argument that is neither a keyword argument nor a comment."""
    return n is not None and n.type not in ("keyword_argument", "comment")


def is_unary_operator(n: Node | None) -> bool:
    """``n`` is a Python unary operation (``-x``, ``~m``)."""
    return n is not None and n.type == "unary_operator"


def is_binary_operator(n: Node | None) -> bool:
    """``n`` is a Python binary operation (``a + b``)."""
    return n is not None and n.type == "binary_operator"


def comparison_operators(node: Node) -> list[Node]:
    """The Python comparisons under ``node`` (``i < n``)."""
    return of_type(node, "comparison_operator")


def is_integer(n: Node | None) -> bool:
    """``n`` is a Python integer literal."""
    return n is not None and n.type == "integer"


def integers(node: Node) -> list[Node]:
    """The Python integer literals under ``node``."""
    return of_type(node, "integer")


def is_string(n: Node | None) -> bool:
    """``n`` is a string literal (a Python docstring is one)."""
    return n is not None and n.type == "string"


def is_lambda(n: Node | None) -> bool:
    """``n`` is a Python ``lambda``."""
    return n is not None and n.type == "lambda"


def is_py_block(n: Node | None) -> bool:
    """``n`` is a Python indented block (``block``)."""
    return n is not None and n.type == "block"


def is_py_block_or_module(n: Node | None) -> bool:
    """``n`` is a Python indented block or the module: where statements are listed."""
    return n is not None and n.type in ("block", "module")


def is_else_clause(n: Node | None) -> bool:
    """``n`` is an ``else`` clause."""
    return n is not None and n.type == "else_clause"


def is_import(n: Node | None) -> bool:
    """``n`` is a Python ``import x`` or ``from x import y`` statement."""
    return n is not None and n.type in ("import_statement", "import_from_statement")


def import_statements(node: Node) -> list[Node]:
    """The Python ``import x`` statements under ``node``."""
    return of_type(node, "import_statement")


def is_default_parameter(n: Node | None) -> bool:
    """``n`` is a Python parameter with a default (``BLOCK=128``, ``BLOCK: tl.constexpr = 128``)."""
    return n is not None and n.type in ("default_parameter", "typed_default_parameter")


def is_call_or_group(n: Node | None) -> bool:
    """``n`` is a Python parenthesized expression, argument list or call: a node whose parentheses group."""
    return n is not None and n.type in ("parenthesized_expression", "argument_list", "call")


#: C/CUDA nodes whose child is a whole use of a value: a statement's expression, a declarator, a condition, a returned
#: value, a loop header's part.
_USE_HOLDERS = frozenset({"declaration", "expression_statement", "condition_clause", "return_statement",
                          "compound_statement", "translation_unit", *LOOP_KINDS, "if_statement", "switch_statement"})


def use_site(node: Node) -> Node:
    """The whole use ``node`` (a name, an expression) is part of, to show to a person: the declarator
    (``r = idx / cols`` of ``int r = idx / cols;``), the statement's expression (``out[idx + 1] = v``), the condition
    (``idx < n`` of ``if (idx < n)``), the returned value or the loop header's part; ``node`` itself when it has no
    parent. The caller gives its text and line (:meth:`~htam_core.source.analysis.unit.CudaUnit.line`)."""
    cur = node
    while cur.parent is not None and cur.parent.type not in _USE_HOLDERS:
        cur = cur.parent
    return cur


# ------------------------------------------------------------------------------------------------ edits
def statement_span(src: bytes, node: Node) -> tuple[int, int]:
    """The byte range of statement ``node`` including its line's indentation and newline when it is alone on it; a
    loop's ``#pragma`` line is part of the loop (:func:`statement_start`), so removing or replacing the loop takes
    it."""
    start, end = statement_start(node), node.end_byte
    ls = line_start(src, start)
    if src[ls:start].strip() == b"":
        nl = src.find(b"\n", end)
        if nl != -1 and src[end:nl].strip() == b"":
            return ls, nl + 1
    return start, end


def include_insert_point(root: Node, src: bytes) -> int:
    """Where to put a file-level helper in ``src`` (``root``: its tree's root): after the last top-level
    ``#include``, at the start of the next line, else at the start."""
    pos = 0
    for c in root.children:
        if is_preproc_include(c):
            pos = c.end_byte
    if pos and src[pos - 1 : pos] != b"\n":
        nl = src.find(b"\n", pos)
        pos = nl + 1 if nl != -1 else pos
    return pos


def error_ranges(node: Node) -> list[tuple[int, int]]:
    """Byte ranges of every ERROR and MISSING node under ``node``."""
    out: list[tuple[int, int]] = []
    if not node.has_error:
        return out
    for n in walk(node):
        if n.is_error or n.is_missing:
            out.append((n.start_byte, n.end_byte))
    return out


def line_start(src: bytes, pos: int) -> int:
    """Byte offset of the start of the line holding ``pos``."""
    return src.rfind(b"\n", 0, pos) + 1


def indent_of(src: bytes, pos: int) -> str:
    """The leading whitespace of the line holding ``pos``."""
    start = line_start(src, pos)
    end = start
    while end < len(src) and src[end : end + 1] in (b" ", b"\t"):
        end += 1
    return src[start:end].decode()


def only_space_before(src: bytes, pos: int) -> bool:
    """True when ``pos`` is the first non-blank byte of its line."""
    return src[line_start(src, pos) : pos].strip() == b""


def one_line(src: bytes, scope: Node, start: int, end: int, renames: list[tuple[Node, str]]) -> str:
    """The code ``src[start:end]`` on one line, with each ``(node, text)`` of ``renames`` replaced and the
    comments under ``scope`` in that range removed (a ``//`` comment would swallow the rest of the line).

    Args:
        src: the unit's bytes; ``start``/``end`` and the nodes are offsets into it.
        scope: a node holding the range (its comments are the ones removed).
        renames: nodes inside the range and their replacement text (non-overlapping).
    """
    removed = [(c, "") for c in comments(scope) if start <= c.start_byte and c.end_byte <= end]
    out = bytearray(src[start:end])
    for node, new in sorted(renames + removed, key=lambda x: -x[0].start_byte):
        out[node.start_byte - start : node.end_byte - start] = new.encode()
    return join_lines(out.decode())


def join_lines(code: str) -> str:
    """The lines of ``code`` joined by spaces, each stripped and blank ones dropped, except that a
    preprocessor directive (``#if __CUDA_ARCH__ >= 800``, ``#else``, ``#endif``) keeps a line of its own: a
    directive must start its line, and one joined into code is a syntax error (C11 6.10)."""
    parts = []
    for ln in code.splitlines():
        s = ln.strip()
        if s:
            parts.append(f"\n{s}\n" if s.startswith("#") else s)
    return " ".join(parts).replace("\n ", "\n")
