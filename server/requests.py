"""Typed objects of the server's messages: command arguments, code-action data and the custom notifications.

They are converted with lsprotocol's cattrs converter (``lsprotocol.converters.get_converter``), made strict here:
a value of the wrong type is an error, never coerced (cattrs would turn ``3`` into ``"3"``). A conversion that
fails is a :class:`CommandError` with one line for the user.

Command arguments are one object ``{"uri": ..., "kernel": NAME}`` or ``{"uri": ..., "position": {"line",
"character"}}``, or a URI string optionally followed by such an object.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from lsprotocol import types
from lsprotocol.converters import get_converter

T = TypeVar("T")


class CommandError(Exception):
    """Bad command arguments, or a command that cannot run; the message is shown to the user."""


def _budget(_inst: Any, _attr: Any, value: int | None) -> None:
    if value is not None and not 1 <= value <= 64:
        raise ValueError(f"budget must be an integer from 1 to 64, got {value!r}")


@attrs.define(frozen=True)
class KernelTarget:
    """The kernel(s) a command works on: ``kernel`` by name, else the one at ``position``, else every kernel of the
    document ``uri``."""

    uri: str
    kernel: str | None = None
    position: types.Position | None = None


@attrs.define(frozen=True)
class OptimizeArgs(KernelTarget):
    """``htam.autoOptimize``'s argument: the kernel, and ``budget`` (candidates, 1..64; ``None``: the setting)."""

    budget: int | None = attrs.field(default=None, validator=_budget)


@attrs.define(frozen=True)
class RecordArgs:
    """``htam.recordApplied``'s argument (a code action's command): the step (strategy id) applied to ``kernel`` of
    ``uri``, and the content hash of the kernel before it (``beforeHash``) with the edit's description."""

    uri: str
    step: str
    kernel: str | None = None
    before_hash: str | None = None
    description: str | None = None


@attrs.define(frozen=True)
class StepData:
    """A ranked step's code-action ``data``: what resolve reads (the strategy id and, for the LLM, the ranker's
    evidence line)."""

    uri: str
    kernel: str
    step: str
    evidence: str = ""
    type: Literal["step"] = "step"


@attrs.define(frozen=True)
class HarnessData:
    """A harness code action's ``data``: create the template (``"harness"``) or save the inferred table
    (``"save-harness"``)."""

    uri: str
    kernel: str
    type: Literal["harness", "save-harness"] = "harness"


@attrs.define(frozen=True)
class Status:
    """``htam/status``: ``server`` is ``"ready"`` or ``"busy"``; the GPU's name and the last profile's line, or
    ``None``."""

    server: Literal["ready", "busy"]
    gpu: str | None
    last_profile: str | None


@attrs.define(frozen=True)
class RecordedOutcome:
    """The outcome of an applied step in ``htam/recorded`` (the memory's outcome rule)."""

    status: str
    speedup: float | None
    measured: bool
    correct: bool | None
    note: str | None


@attrs.define(frozen=True)
class Recorded:
    """``htam/recorded``: an applied step's outcome was stored in memory."""

    uri: str
    kernel: str
    step: str
    outcome: RecordedOutcome


def _strict(kind: type) -> Any:
    def structure(value: Any, _t: Any) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}, got {value!r}")
        return value
    return structure


def _optional_scalar(t: Any) -> bool:
    args = typing.get_args(t)
    return len(args) == 2 and type(None) in args and any(a in (str, int, bool) for a in args)


def _optional(value: Any, t: Any) -> Any:
    kind = next(a for a in typing.get_args(t) if a is not type(None))
    return None if value is None else _strict(kind)(value, kind)


def _converter() -> cattrs.Converter:
    for cls in (KernelTarget, OptimizeArgs, RecordArgs, StepData, HarnessData, Status, RecordedOutcome, Recorded):
        attrs.resolve_types(cls)  # the annotations are strings (postponed evaluation); the hooks read the types
    conv = get_converter().copy()
    for kind in (str, int, bool):
        conv.register_structure_hook(kind, _strict(kind))
    conv.register_structure_hook_func(_optional_scalar, _optional)
    camel = {"before_hash": override(rename="beforeHash")}
    # each class's hook is made on this converter (the copied attrs hook factory would use lsprotocol's own)
    for cls in (KernelTarget, OptimizeArgs, StepData, HarnessData):
        conv.register_structure_hook(cls, make_dict_structure_fn(cls, conv))
    for cls in (StepData, HarnessData, RecordedOutcome, Recorded):  # every field is written, defaults included
        conv.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=False))
    conv.register_unstructure_hook(Status, make_dict_unstructure_fn(
        Status, conv, _cattrs_omit_if_default=False, last_profile=override(rename="lastProfile")))
    conv.register_structure_hook(RecordArgs, make_dict_structure_fn(RecordArgs, conv, **camel))
    conv.register_unstructure_hook(RecordArgs, make_dict_unstructure_fn(RecordArgs, conv, **camel,
                                                                        _cattrs_omit_if_default=True))
    return conv


CONVERTER = _converter()


def _why(exc: Exception) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        lines = cattrs.transform_error(exc, path="argument")
        return "; ".join(lines)
    return str(exc)


def structure(value: Any, cls: type[T]) -> T:
    """``value`` (JSON) as ``cls``.

    Raises:
        CommandError: ``value`` is not an object with a string ``uri``, or a field has the wrong type or value.
    """
    if not isinstance(value, dict) or not isinstance(value.get("uri"), str):
        raise CommandError("the command's argument must be an object with a \"uri\"")
    try:
        return CONVERTER.structure(value, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        inner = exc.exceptions if isinstance(exc, cattrs.BaseValidationError) else [exc]
        own = next((str(e) for e in inner if isinstance(e, ValueError) and "budget" in str(e)), None)
        raise CommandError(own or f"bad command argument: {_why(exc)}") from None


def command_args(args: Sequence[Any], cls: type[T]) -> T:
    """A command's arguments (``[object]`` or ``[uri, object?]``) as ``cls``.

    Raises:
        CommandError: no argument, or one that does not convert (see :func:`structure`).
    """
    if not args:
        raise CommandError("the command needs an argument {\"uri\": ..., \"kernel\": ...}")
    a = args[0]
    if isinstance(a, str):
        a = {"uri": a, **(args[1] if len(args) > 1 and isinstance(args[1], dict) else {})}
    return structure(a, cls)


def action_data(data: Any) -> StepData | HarnessData | None:
    """A code action's ``data`` as :class:`StepData` or :class:`HarnessData`, or ``None`` when it is neither (a
    forged or foreign action)."""
    kind = data.get("type") if isinstance(data, dict) else None
    try:
        return structure(data, HarnessData if kind in ("harness", "save-harness") else StepData)
    except CommandError:
        return None


def unstructure(obj: Any) -> Any:
    """``obj`` as JSON (camelCase names where the protocol has them)."""
    return CONVERTER.unstructure(obj)
