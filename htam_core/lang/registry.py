"""The language backends by key: :func:`create` (``"cuda"``, ``"triton"``, ``"cuda-in-python"``).

A new language is a :class:`~htam_core.lang.base.Backend` subclass registered here with :func:`register`, and its
traits in :mod:`htam_core.types.language`.
"""

from __future__ import annotations

from htam_core.lang.base import Backend, LanguageBackend
from htam_core.types.language import traits

__all__ = ["create", "kinds", "register"]

_BACKENDS: dict[str, type[Backend]] = {}


def register(cls: type[Backend]) -> type[Backend]:
    """Class decorator: make ``cls`` the backend of ``cls.kind``.

    Raises:
        ValueError: ``cls.kind`` has no traits (:func:`htam_core.types.language.traits`) or already has a backend.
    """
    traits(cls.kind)  # UnknownLanguage (a ValueError) for an unregistered language
    if cls.kind in _BACKENDS:
        raise ValueError(f"language {cls.kind!r} already has a backend ({_BACKENDS[cls.kind].__name__})")
    _BACKENDS[cls.kind] = cls
    return cls


@register
class CudaBackend(Backend):
    """CUDA in a ``.cu``/``.cuh`` file: nvcc, ptxas resources, host launchers and ``main()`` programs."""

    kind = "cuda"


@register
class TritonBackend(Backend):
    """Triton kernels (``@triton.jit``) in a Python file: Python's compiler, Triton's AOT compile, the
    interpreter without a GPU."""

    kind = "triton"


@register
class CudaInPythonBackend(Backend):
    """CUDA source held in a Python string (``torch.utils.cpp_extension.load_inline``, cupy): parsed as CUDA at
    its offset in the string, compiled by nvcc, validated as the Python file it lives in."""

    kind = "cuda-in-python"


def create(kind: str) -> LanguageBackend:
    """The backend of the kernel language ``kind``.

    Raises:
        ValueError: no backend for ``kind`` (the message lists the known ones).
    """
    try:
        return _BACKENDS[kind]()
    except KeyError:
        raise ValueError(f"no language backend for {kind!r} (known: {', '.join(_BACKENDS)})") from None


def kinds() -> tuple[str, ...]:
    """The languages with a backend, in registration order."""
    return tuple(_BACKENDS)
