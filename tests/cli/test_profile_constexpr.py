"""``htam profile --constexpr NAME=VALUE`` takes every value a Triton constexpr holds.

Regression: ``--constexpr ACTIVATION=silu`` was refused ("VALUE must be a number or True/False"), so a string
switch could not be set by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.cli.errors import UsageError
from htam_core.cli.main import main
from htam_core.cli.profile import _parse_constexprs
from htam_core.types.constexpr import dtype_value

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "bias_act.py"


def test_values_are_literals_else_strings() -> None:
    got = _parse_constexprs(["ACTIVATION=silu", "MODE='gelu'", "BLOCK=1024", "EPS=1e-5", "HAS_BIAS=False",
                             "SCALE=None", "OUT_DTYPE=tl.bfloat16", "NAME=a b"])
    assert got == {"ACTIVATION": "silu", "MODE": "gelu", "BLOCK": 1024, "EPS": 1e-5, "HAS_BIAS": False,
                   "SCALE": None, "OUT_DTYPE": dtype_value("bfloat16"), "NAME": "a b"}


@pytest.mark.parametrize("item", ["ACTIVATION", "=silu", "1X=2", "ACTIVATION="])
def test_an_item_without_name_or_value_is_refused(item: str) -> None:
    with pytest.raises(UsageError, match="NAME=VALUE"):
        _parse_constexprs([item])


def test_a_string_switch_reaches_the_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["profile", str(FIXTURE), "--kernel", "bias_act_kernel", "--static", "--json",
                 "--constexpr", "ACTIVATION=relu"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["extra"]["constexprs"]["ACTIVATION"] == {"value": "relu", "source": "user"}
    assert not any("ACTIVATION" in w and "assumed" in w for w in d["warnings"])
