"""``cuda.fast_math``: single-precision math calls to hardware intrinsics (changes numerics).

``expf -> __expf``, ``sinf -> __sinf``, ``tanhf -> __tanhf`` ... and float divisions ``a / b`` (where an
operand is an ``f``-suffixed literal or a float intrinsic call, so the division is known to be in float)
to ``__fdividef(a, b)``. An overloaded call (``exp(v)``, ``std::log(s)``) is rewritten the same way when its
argument is a ``float`` in every instantiation of the kernel in the file (``exp((acc_t)x)`` launched as
``<float, float>``; :func:`~htam_core.source.analysis.math_precision.generic_math_calls`); one that runs in
``double`` for some instantiation is not (the intrinsic would round it to float). Only the kernel body is
rewritten (helpers it calls are not followed).
Idea source: CUDA C++ Programming Guide, "Intrinsic Functions" (maximum ulp errors listed there).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.math_precision import GenericMathCall, generic_math_calls
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

INTRINSICS = {
    "expf": "__expf",
    "exp10f": "__exp10f",
    "logf": "__logf",
    "log2f": "__log2f",
    "log10f": "__log10f",
    "sinf": "__sinf",
    "cosf": "__cosf",
    "tanf": "__tanf",
    "tanhf": "__tanhf",
    "powf": "__powf",
}
_FLOAT_CALLS = set(INTRINSICS) | set(INTRINSICS.values()) | {"sqrtf", "rsqrtf", "fmaxf", "fminf", "fabsf"}


def _is_float_expr(unit: CudaUnit, node: Node) -> bool:
    """True when ``node`` is certainly a float: an ``f`` literal or a float math call (parentheses stripped)."""
    node = syn.unwrap_parens(node)
    if syn.is_number(node):
        s = unit.t(node)
        return s.endswith(("f", "F")) and not s.lower().startswith("0x")
    if syn.is_call(node):
        return unit.t(node.child_by_field_name("function")) in _FLOAT_CALLS
    if syn.is_binary(node) and unit.t(node.child_by_field_name("operator")) in "+-*":
        return _is_float_expr(unit, node.child_by_field_name("left")) or _is_float_expr(
            unit, node.child_by_field_name("right")
        )
    return False


@register
class CudaFastMath(CudaTransform):
    """Replace float math calls and float divisions with fast intrinsics."""

    id = "cuda.fast_math"

    kind = "math"
    languages = CUDA_LANGS
    changes_numerics = True
    summary = "fast-math intrinsics (__expf, __fdividef ...); changes numerics"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate with every eligible call and division in the kernel body rewritten."""
        edits: list[TextEdit] = []
        calls: list[str] = []
        divs = 0
        for call in syn.calls(unit.body):
            fn = call.child_by_field_name("function")
            name = unit.t(fn)
            if fn is not None and syn.is_identifier(fn) and name in INTRINSICS:
                edits.append(unit.replace(fn, INTRINSICS[name]))
                calls.append(name)
        generic, mixed = self._generic_calls(unit)
        edits += [unit.replace(g.function, INTRINSICS[g.float_name]) for g in generic]
        calls += [g.name for g in generic]
        for b in syn.binaries(unit.body):
            if unit.t(b.child_by_field_name("operator")) != "/":
                continue
            left, right = b.child_by_field_name("left"), b.child_by_field_name("right")
            if not (_is_float_expr(unit, left) or _is_float_expr(unit, right)):
                continue
            if any(syn.is_binary(n) and unit.t(n.child_by_field_name("operator")) == "/"
                   for n in syn.walk(b) if n is not b):
                continue  # nested divisions: keep the edit simple and non-overlapping
            # rewrite "a / b" as "__fdividef(a, b)" with inserts so inner call renames do not overlap
            edits.append(unit.insert(b.start_byte, "__fdividef("))
            edits.append(unit.edit(left.end_byte, right.start_byte, ", "))
            edits.append(unit.insert(b.end_byte, ")"))
            divs += 1
        if not edits and mixed:
            return self.not_applicable(mixed)
        if not edits:
            return self.not_applicable(
                f"{kernel.name} has no single-precision math call ({', '.join(sorted(INTRINSICS))}) "
                "or float division in its body"
            )
        parts = []
        if calls:
            parts.append(", ".join(f"{c} -> {INTRINSICS.get(c) or INTRINSICS[c + 'f']}" for c in sorted(set(calls))))
        if divs:
            parts.append(f"{divs} float division(s) -> __fdividef")
        return [
            self.candidate(
                model,
                f"use fast intrinsics in {kernel.name}: {'; '.join(parts)} (less accurate; changes numerics)",
                {"calls": sorted(set(calls)), "divisions": divs},
                edits,
            )
        ]

    @staticmethod
    def _generic_calls(unit: CudaUnit) -> tuple[list[GenericMathCall], str]:
        """The overloaded math calls of the kernel that run in float in every instantiation, and a one-line reason
        naming the first one that runs in double for some instantiation (``""`` when none does)."""
        found = generic_math_calls(unit.source, unit.facts.type_instantiations)
        mixed = next((g for g in found if "double" in g.types and "float" in g.types), None)
        why = ""
        if mixed is not None:
            why = (f"{mixed.name}(...) on line {mixed.line} runs in double for an instantiation of {unit.kernel.name} "
                   f"in this file, where __{mixed.float_name} would round it to float; not made")
        return [g for g in found if g.single and g.float_name in INTRINSICS], why
