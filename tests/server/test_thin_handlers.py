"""The server's shape: every handler registered from one table, and no engine work in server/ (it converts and
delegates)."""

from __future__ import annotations

from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"


def test_every_feature_and_command_is_registered_from_the_handlers_table():
    """The handlers are module-level functions of ``handlers.py`` (their length is checked, with every other
    server function, by tests/test_architecture.py); the server registers all of them."""
    from htam_server import handlers
    from htam_server.server import create_server

    ls = create_server()
    assert len(handlers.FEATURES) + len(handlers.COMMANDS) >= 15
    assert {m for m, _, _ in handlers.FEATURES} <= set(ls.protocol.fm.features)
    assert [c for c, _ in handlers.COMMANDS] == list(ls.protocol.fm.commands)


def test_server_does_not_rank_parse_or_profile_itself():
    for path in SERVER.glob("*.py"):
        text = path.read_text()
        for banned in ("Ranker(", "parse_text(", "profile_kernel(", "static_profile(", " Document(", "source.Document("):
            assert banned not in text, f"{path.name} calls {banned}: that belongs in htam_core"
