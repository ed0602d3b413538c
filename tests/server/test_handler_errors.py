"""A failure inside the engine while answering a request (a bug in htam) is one line to the user and an empty
answer, never a JSON-RPC error carrying the traceback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types


class _Ls:
    """The part of the server the guard uses: ``show``."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, Any]] = []

    def show(self, message: str, kind: Any = None) -> None:
        self.shown.append((message, kind))


def _boom(*_a: object, **_k: object) -> Any:
    raise RecursionError("maximum recursion depth exceeded in comparison")


@pytest.mark.parametrize(("handler", "module", "name"), [
    ("on_code_action", "actions", "code_actions"),
    ("on_hover", "hover", "hover"),
    ("on_resolve", "actions", "resolve"),
])
def test_an_engine_failure_is_one_line_and_an_empty_answer(monkeypatch, handler, module, name):
    from htam_server import handlers

    async def failing(*a: object, **k: object) -> Any:
        return _boom(*a, **k)

    monkeypatch.setattr(getattr(handlers, module), name, failing)
    ls = _Ls()
    arg = types.CodeAction(title="t", edit=types.WorkspaceEdit()) if handler == "on_resolve" else None
    res = asyncio.run(getattr(handlers, handler)(ls, arg))
    assert res is None or (isinstance(res, types.CodeAction) and res.edit is None)
    (msg, kind), = ls.shown
    assert "internal error" in msg and "RecursionError" in msg and "\n" not in msg
    assert kind == types.MessageType.Error
