"""Kernel source model: CUDA, Triton and CUDA held in Python strings, parsed with tree-sitter.

Public API::

    load(path) -> SourceModel
    parse_text(text, file_language, path=None) -> SourceModel
    Document(text, file_language, path=None)      # apply_change / model / kernel_at
    kernel_at(model, line, col, encoding="utf-16") -> Kernel | None
    is_kernel_file(model) -> bool
    without_incomplete(model, kernel) -> (model, kernel, blanked)   # compile past half-typed kernels
    incomplete_reason(kernel, waits) -> str | None  # the one line for a half-typed kernel
    SourceError                                    # bad input (subclass of ValueError)
    MAX_SOURCE_BYTES, too_large(name, size)        # the one size limit and its one line
"""

from htam_core.source.api import (
    incomplete_reason,
    is_kernel_file,
    kernel_at,
    language_for_path,
    load,
    parse_text,
    without_incomplete,
)
from htam_core.source.document import Document
from htam_core.source.errors import MAX_SOURCE_BYTES, SourceError, too_large
from htam_core.source.model import (
    ByteSpan,
    DeviceFunction,
    Kernel,
    KernelFeatures,
    LaunchSite,
    Loop,
    Param,
    SharedDecl,
    SourceModel,
    WorkSite,
)

__all__ = [
    "ByteSpan",
    "MAX_SOURCE_BYTES",
    "DeviceFunction",
    "Document",
    "Kernel",
    "KernelFeatures",
    "LaunchSite",
    "Loop",
    "Param",
    "SharedDecl",
    "SourceError",
    "SourceModel",
    "incomplete_reason",
    "is_kernel_file",
    "kernel_at",
    "language_for_path",
    "load",
    "parse_text",
    "too_large",
    "WorkSite",
    "without_incomplete",
]
