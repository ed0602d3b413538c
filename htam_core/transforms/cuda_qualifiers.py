"""``cuda.restrict_const``: add ``const`` and ``__restrict__`` to read-only pointer parameters.

Only parameters that the kernel body provably never writes through get the qualifiers (see
:attr:`htam_core.source.analysis.PointerFacts.mode`, ``"read"`` only when every use is a visible load). ``__restrict__`` promises the compiler that the
pointee is not modified through another pointer during the launch, which lets it keep loads in
registers and use the read-only data path. Idea source: CUDA C++ Best Practices Guide, "Restricted
pointers"; CUDA C++ Programming Guide, "__restrict__".
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as _ts  # the node queries of the analysis layer
from htam_core.source.analysis.syntax import node_text
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile


def pointer_params(unit: CudaUnit) -> list[tuple[str, object, object, bool, bool]]:
    """Single-level pointer params: ``(name, param_node, pointer_declarator, has_const, has_restrict)``."""
    out = []
    for p in unit.params:
        decl = p.child_by_field_name("declarator")
        if decl is None or decl.type != "pointer_declarator":
            continue
        inner = decl.child_by_field_name("declarator")
        if inner is None or inner.type != "identifier":
            continue  # pointer to pointer, array of pointers ...
        # read as parsed: a qualifier macro (RESTRICT) is parsed as the qualifier it stands for
        quals_before = {node_text(c) for c in p.children if c.type == "type_qualifier"}
        quals_ptr = {node_text(c) for c in decl.children if c.type == "type_qualifier"}
        has_const = "const" in quals_before
        has_restrict = bool(quals_ptr & {"__restrict__", "__restrict", "restrict"})
        out.append((unit.t(inner), p, decl, has_const, has_restrict))
    return out


def has_other_declaration(unit: CudaUnit) -> bool:
    """True when the kernel is also declared elsewhere (a prototype would no longer match)."""
    for fd in _ts.of_type(unit.root, "function_declarator"):
        if unit.func.start_byte <= fd.start_byte < unit.func.end_byte:
            continue
        name = fd.child_by_field_name("declarator")
        if name is not None and unit.t(name) == unit.kernel.name and fd.parent is not None:
            if fd.parent.type == "declaration":
                return True
    return False


@register
class CudaRestrictConst(CudaTransform):
    """Add ``const`` and ``__restrict__`` to read-only pointer parameters."""

    id = "cuda.restrict_const"

    kind = "hint"
    languages = CUDA_LANGS
    summary = "add const __restrict__ to read-only pointer params"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate qualifying every provably read-only pointer parameter."""
        ptrs = pointer_params(unit)
        if not ptrs:
            return self.not_applicable(f"{kernel.name} has no pointer parameters")
        if has_other_declaration(unit):
            return self.not_applicable(f"{kernel.name} is also declared elsewhere; the declarations would differ")
        edits: list[TextEdit] = []
        changed: list[str] = []
        notes: dict[str, list[str]] = {"written": [], "unclear": [], "done": []}
        for name, p, decl, has_const, has_restrict in ptrs:
            facts = unit.facts.pointer(name)
            access = facts.mode if facts is not None else "unknown"
            if access in ("write", "readwrite"):
                notes["written"].append(name)
                continue
            if access in ("unknown", "unused"):
                notes["unclear"].append(name)
                continue
            if has_const and has_restrict:
                notes["done"].append(name)
                continue
            if not has_const:
                edits.append(unit.insert(p.start_byte, "const "))  # type: ignore[attr-defined]
            if not has_restrict:
                inner = decl.child_by_field_name("declarator")  # type: ignore[attr-defined]
                edits.append(unit.insert(inner.start_byte, "__restrict__ "))
            changed.append(name)
        if not changed:
            label = {"written": "written by the kernel", "unclear": "their use could not be read",
                     "done": "already const __restrict__"}
            parts = [f"{label[k]}: {', '.join(v)}" for k, v in notes.items() if v]
            return self.not_applicable(
                "no read-only pointer parameter lacks const __restrict__ (" + "; ".join(parts) + ")"
            )
        return [
            self.candidate(
                model,
                f"mark read-only pointer parameter(s) {', '.join(changed)} of {kernel.name} const __restrict__ "
                "(assumes they do not alias the written outputs)",
                {"params": changed},
                edits,
            )
        ]
