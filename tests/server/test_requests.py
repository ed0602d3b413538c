"""Typed command arguments and code-action data: converted strictly (a wrong type is one clear line, never
coerced), camelCase where the protocol has it, and a code action's data survives its round trip."""

from __future__ import annotations

import pytest

from htam_server.requests import (
    CommandError,
    HarnessData,
    KernelTarget,
    OptimizeArgs,
    RecordArgs,
    StepData,
    action_data,
    command_args,
    unstructure,
)


def test_the_argument_forms_convert() -> None:
    assert command_args(["file:///a.cu"], KernelTarget) == KernelTarget("file:///a.cu")
    assert command_args(["file:///a.cu", {"kernel": "k"}], KernelTarget).kernel == "k"
    t = command_args([{"uri": "u", "position": {"line": 3, "character": 4}}], OptimizeArgs)
    assert (t.position.line, t.position.character, t.budget) == (3, 4, None)
    assert command_args([{"uri": "u", "budget": 8}], OptimizeArgs).budget == 8
    r = command_args([{"uri": "u", "step": "s", "beforeHash": "h"}], RecordArgs)
    assert (r.step, r.before_hash) == ("s", "h")


@pytest.mark.parametrize(("args", "cls", "says"), [
    ([], KernelTarget, "needs an argument"),
    ([3, None], OptimizeArgs, "must be an object with a \"uri\""),
    ([{"kernel": "k"}], KernelTarget, "must be an object with a \"uri\""),
    ([{"uri": "u", "budget": "8"}], OptimizeArgs, "argument.budget"),
    ([{"uri": "u", "budget": True}], OptimizeArgs, "argument.budget"),  # a bool is not a budget
    ([{"uri": "u", "budget": 65}], OptimizeArgs, "budget must be an integer from 1 to 64, got 65"),
    ([{"uri": "u", "kernel": 5}], KernelTarget, "argument.kernel"),  # never coerced to "5"
    ([{"uri": "u"}], RecordArgs, "argument.step"),
])
def test_bad_arguments_are_one_line(args, cls, says) -> None:
    with pytest.raises(CommandError) as err:
        command_args(args, cls)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_action_data_round_trips_and_forged_data_is_none() -> None:
    for data in (StepData("u", "k", "s", "why"), HarnessData("u", "k", "save-harness")):
        raw = unstructure(data)
        assert raw["type"] == data.type and action_data(raw) == data
    assert set(unstructure(StepData("u", "k", "s"))) == {"type", "uri", "kernel", "step", "evidence"}
    assert unstructure(RecordArgs("u", "s", "k", "h")) == {"uri": "u", "step": "s", "kernel": "k", "beforeHash": "h"}
    for forged in (None, [None], {}, {"uri": "u", "kernel": "x"}, {"type": "harness", "uri": "u"}):
        assert action_data(forged) is None
