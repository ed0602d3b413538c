"""Mechanical source-to-source transforms of CUDA and Triton kernels (HTAM local strategies).

Public API::

    propose(transform_id, model, kernel, profile=None) -> list[Candidate] | NotApplicable  # validated
    get(transform_id) / all_transforms() / for_language(lang) / register (class decorator)
    TextEdit, Candidate, NotApplicable, Transform, apply_edits(text, edits)

One module per strategy family: ``cuda_launch``, ``cuda_qualifiers``, ``cuda_loops``, ``cuda_memory``,
``cuda_tiling``, ``cuda_math``, ``cuda_reduction``, ``triton_launch``, ``triton_autotune``, ``triton_hints``,
``triton_ordering``.
"""

from htam_core.transforms.base import Candidate, NotApplicable, TextEdit, Transform, apply_edits
from htam_core.transforms.registry import all_transforms, for_language, get, propose, register, validate

__all__ = [
    "Candidate",
    "NotApplicable",
    "TextEdit",
    "Transform",
    "all_transforms",
    "apply_edits",
    "for_language",
    "get",
    "propose",
    "register",
    "validate",
]
