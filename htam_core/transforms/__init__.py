"""Mechanical source-to-source transforms of CUDA and Triton kernels (HTAM local strategies).

Public API::

    propose(transform_id, model, kernel, profile=None) -> list[Candidate] | NotApplicable  # validated
    get(transform_id) / all_transforms() / for_language(lang) / register (class decorator)
    TextEdit, Candidate, NotApplicable, Transform, UnitTransform, apply_edits(text, edits)

One module per strategy family: ``cuda_launch``, ``cuda_qualifiers``, ``cuda_warp_row``,
``cuda_block_row`` (a block per row, for few long rows), ``cuda_loops``,
``cuda_memory``, ``cuda_tiling``, ``cuda_register_tiling`` (TMxTN register tiles), ``cuda_softmax`` (online
softmax), ``cuda_coalesce`` (x/y remap), ``cuda_warp_reduce`` (warp-shuffle finish), ``cuda_math``,
``cuda_reduction``, ``cuda_stencil`` (a 1-D or 2-D stencil's window through a shared tile with halo; the 2-D form in ``cuda_stencil2d``), ``triton_launch``, ``triton_autotune`` (with an ``early_config_prune``), ``triton_hints``,
``triton_ordering``, ``triton_rows`` (several rows per program), ``triton_single_pass`` (online softmax and
single-pass mean/variance for two-pass row kernels).

Writing a transform: subclass ``_cuda.CudaTransform`` or ``_triton.TritonTransform`` (both
:class:`UnitTransform`), set ``id``, ``languages`` and ``summary``, and implement
``propose_unit(unit, model, kernel, profile) -> list[Candidate] | NotApplicable``; ``propose`` parses the
kernel's unit first and refuses with the parser's reason when the kernel cannot be located. Decorate the
class with ``@register`` and add its module to ``_FAMILIES`` in :mod:`htam_core.transforms.registry`.
"""

from htam_core.transforms.base import (
    Candidate,
    NotApplicable,
    TextEdit,
    Transform,
    UnitTransform,
    apply_edits,
)
from htam_core.transforms.registry import all_transforms, for_language, get, propose, register, validate

__all__ = [
    "Candidate",
    "NotApplicable",
    "TextEdit",
    "Transform",
    "UnitTransform",
    "all_transforms",
    "apply_edits",
    "for_language",
    "get",
    "propose",
    "register",
    "validate",
]
