"""The server's shape: handlers of 20 lines or fewer, and no engine work in server/ (it converts and delegates)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"


def _handlers() -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse((SERVER / "server.py").read_text())
    create = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "create_server")
    return [n for n in ast.walk(create) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and any(isinstance(d, ast.Call) and getattr(d.func, "attr", "") in ("feature", "command")
                    for d in n.decorator_list)]


def test_every_handler_is_at_most_20_lines():
    handlers = _handlers()
    assert len(handlers) >= 15  # every LSP method and command is registered there
    long = {h.name: h.end_lineno - h.lineno + 1 for h in handlers if h.end_lineno - h.lineno + 1 > 20}
    assert not long, long


def test_feature_modules_keep_their_functions_short():
    long = {}
    for name in ("hover.py", "diagnostics.py"):
        for n in ast.walk(ast.parse((SERVER / name).read_text())):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > 25:
                long[f"{name}:{n.name}"] = n.end_lineno - n.lineno + 1
    assert not long, long


def test_server_does_not_rank_parse_or_profile_itself():
    for path in SERVER.glob("*.py"):
        text = path.read_text()
        for banned in ("Ranker(", "parse_text(", "profile_kernel(", "static_profile(", " Document(", "source.Document("):
            assert banned not in text, f"{path.name} calls {banned}: that belongs in htam_core"
