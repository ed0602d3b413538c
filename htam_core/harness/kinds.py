"""Harness kinds: what each kind of harness can do, looked up by name instead of testing the kind's string.

A :class:`htam_core.harness.base.Harness` has a ``kind`` (``"spec"``, ``"inferred"``, ``"kernelbench"``,
``"cu-main"``). Code that behaves differently per kind asks the kind's :class:`KindTraits` (``h.traits``, or
:func:`create`) a question that names the behaviour (does htam launch the kernel itself? does the user's
program run whole?), so a new kind is one :func:`register` call here, not a branch in every module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KindTraits:
    """What one harness kind allows.

    Attributes:
        name: the kind (``Harness.kind``).
        label: the short name reports and profiles give it (``Profile.harness``).
        origin: the origin word the editor shows (``"htam.toml"``), or ``None`` when it depends on where the
            harness was inferred from (:func:`htam_core.harness.status.origin_of`).
        launches: htam launches the kernel itself from a launch description (grid, block, arguments and
            sizes): each call can be checked against a reference or the starting kernel (the oracle), counted
            per kernel with ncu, and its launch values read for a static compile.
        inferred: the launch description was inferred from the user's own code (``main()``, ``__main__``, a
            test), not written by the user; it may be saved to ``htam.toml`` and re-read when the program
            changes.
        whole_program: the user's program runs whole (its ``main()``): timed, not checked, no per-kernel counters.
    """

    name: str
    label: str
    origin: str | None
    launches: bool
    inferred: bool = False
    whole_program: bool = False


_KINDS: dict[str, KindTraits] = {}


def register(traits: KindTraits) -> KindTraits:
    """Register ``traits`` under ``traits.name``.

    Raises:
        ValueError: the name is already registered.
    """
    if traits.name in _KINDS:
        raise ValueError(f"harness kind {traits.name!r} is already registered")
    _KINDS[traits.name] = traits
    return traits


def create(kind: str) -> KindTraits:
    """The traits of harness kind ``kind``.

    Raises:
        ValueError: ``kind`` is not a registered harness kind (the message lists the known ones).
    """
    try:
        return _KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown harness kind {kind!r} (known: {', '.join(sorted(_KINDS))})") from None


def kinds() -> tuple[str, ...]:
    """The registered harness kinds, sorted."""
    return tuple(sorted(_KINDS))


register(KindTraits("spec", label="htam.toml", origin="htam.toml", launches=True))
register(KindTraits("inferred", label="inferred", origin=None, launches=True, inferred=True))
register(KindTraits("kernelbench", label="kernelbench", origin="KernelBench pair", launches=False))
register(KindTraits("cu-main", label="cu-main", origin="main() run whole", launches=False, whole_program=True))
