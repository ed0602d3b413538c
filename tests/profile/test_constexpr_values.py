"""The static profile compiles a Triton kernel with the launch's constexpr values of every type Triton takes.

Regression: ``bias_act_kernel`` (``ACTIVATION: tl.constexpr`` compared with ``"silu"``, launched with
``ACTIVATION=activation`` from a launcher whose default is ``"silu"``) was compiled with ``ACTIVATION=0 (assumed)``
although its harness runs it with ``"silu"``, so the profile was of a branch that never runs. Strings, bools,
``None`` and dtypes (``tl.float16``) now travel from the launch site, the launcher's defaults and locals, and a
harness's ``kwargs`` to the compile; ``--constexpr`` sets any of them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from htam_core.harness.find import find_harness
from htam_core.harness.launch_values import recorded_constexprs
from htam_core.profile.api import static_profile
from htam_core.profile.static_triton import build_request
from htam_core.source.api import load
from htam_core.types.constexpr import dtype_value
from htam_core.types.errors import ProfileError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "bias_act.py"

_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def act_kernel(x_ptr, b_ptr, y_ptr, n, ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr,
               OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    {check}
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m)
    if HAS_BIAS:
        v += tl.load(b_ptr + offs, mask=m)
    if ACTIVATION == "gelu":
        v = 0.5 * v * (1 + tl.erf(v * 0.7071067811865476))
    elif ACTIVATION == "silu":
        v = v * tl.sigmoid(v)
    tl.store(y_ptr + offs, v.to(OUT_DTYPE), mask=m)


def act(x, bias=None, activation="gelu", out_dtype=tl.float16):
    y = torch.empty(x.shape, dtype=torch.float16, device=x.device)
    n = x.numel()
    {local}
    act_kernel[(triton.cdiv(n, 256),)](x, bias if bias is not None else x, y, n, ACTIVATION={act},
                                       HAS_BIAS=bias is not None, OUT_DTYPE=out_dtype, BLOCK=256)
    return y
'''

_LAUNCHER = '''
[kernel.act_kernel]
version = 1
file = "k.py"
launcher = "act"
inputs = [{inputs}]
sizes = [{{ N = 4096 }}]
reference = "x"
'''
_X = '{ name = "x", shape = ["N"], dtype = "float32", init = "randn" }'
_B = '{ name = "b", shape = ["N"], dtype = "float32", init = "randn" }'

_DIRECT = '''
[kernel.act_kernel]
version = 1
file = "k.py"
grid = "(triton.cdiv(N, 256),)"
args = ["x", "x", "y", "n"]
kwargs = { ACTIVATION = "silu", HAS_BIAS = false, OUT_DTYPE = "tl.bfloat16", BLOCK = "128 * 2" }
inputs = [
  { name = "x", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "y", shape = ["N"], dtype = "bfloat16", init = "empty" },
  { name = "n", dtype = "int32", value = "N" },
]
outputs = ["y"]
sizes = [{ N = 4096 }]
reference = "x"
'''


def _project(tmp: Path, spec: str, *, check: str = "pass", local: str = "pass", act: str = "activation") -> Path:
    (tmp / "k.py").write_text(_KERNEL.replace("{check}", check).replace("{local}", local).replace("{act}", act))
    (tmp / "htam.toml").write_text(textwrap.dedent(spec))
    return tmp / "k.py"


def _recorded(path: Path) -> dict[str, object]:
    model = load(str(path))
    return recorded_constexprs(find_harness(path, "act_kernel", model), model.text, model.kernel("act_kernel"))


@pytest.mark.parametrize(("inputs", "has_bias"), [(_X, False), (f"{_X}, {_B}", True)])
def test_launcher_defaults_of_every_type_are_the_harness_values(tmp_path: Path, inputs: str, has_bias: bool) -> None:
    """A string default, a dtype default and ``bias is not None`` of an optional tensor (passed or not)."""
    path = _project(tmp_path, _LAUNCHER.replace("{inputs}", inputs).replace("{{", "{").replace("}}", "}"))
    assert _recorded(path) == {"ACTIVATION": "gelu", "HAS_BIAS": has_bias, "OUT_DTYPE": dtype_value("float16"),
                               "BLOCK": 256}


@pytest.mark.parametrize(("local", "act", "value"), [
    ('kind = "tanh"', "kind", "tanh"),
    ("kind: str = 'relu'", "kind", "relu"),
    ("kind = None", "kind", None),
    ("pass", '"silu"', "silu"),
])
def test_launcher_locals_and_literals_of_any_type(tmp_path: Path, local: str, act: str, value: object) -> None:
    path = _project(tmp_path, _LAUNCHER.replace("{inputs}", _X).replace("{{", "{").replace("}}", "}"),
                    local=local, act=act)
    assert _recorded(path)["ACTIVATION"] == value


def test_a_local_bound_to_an_unknown_value_is_not_guessed(tmp_path: Path) -> None:
    path = _project(tmp_path, _LAUNCHER.replace("{inputs}", _X).replace("{{", "{").replace("}}", "}"),
                    local='kind = "tanh"\n    kind = pick(x)', act="kind")
    assert "ACTIVATION" not in _recorded(path)


def test_direct_kwargs_pass_strings_as_the_runner_does(tmp_path: Path) -> None:
    """``"silu"`` names nothing: the runner passes it as it is; ``"tl.bfloat16"`` and ``"128 * 2"`` evaluate."""
    path = _project(tmp_path, _DIRECT)
    assert _recorded(path) == {"ACTIVATION": "silu", "HAS_BIAS": False, "OUT_DTYPE": dtype_value("bfloat16"),
                               "BLOCK": 256}


def test_launch_site_literals_without_a_harness(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(_KERNEL.replace("{check}", "pass").replace("{local}", "pass").replace(
        "{act}", "'relu'").replace("OUT_DTYPE=out_dtype", "OUT_DTYPE=tl.float32").replace(
        "HAS_BIAS=bias is not None", "HAS_BIAS=None"))
    model = load(str(tmp_path / "k.py"))
    consts = build_request(model.kernel("act_kernel"), text=model.text)["constexprs"]
    assert consts == {"ACTIVATION": "relu", "HAS_BIAS": None, "OUT_DTYPE": dtype_value("float32"), "BLOCK": 256}


_CHECK = 'tl.static_assert(ACTIVATION == "gelu")\n    tl.static_assert(OUT_DTYPE == tl.float16)'


def test_the_static_compile_gets_the_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel asserts at compile time that it got ``"gelu"`` and ``tl.float16``: the compile fails otherwise."""
    pytest.importorskip("triton")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    path = _project(tmp_path, _LAUNCHER.replace("{inputs}", _X).replace("{{", "{").replace("}}", "}"), check=_CHECK)
    p = static_profile(load(str(path)), "act_kernel")
    got = {k: v["value"] for k, v in p.extra["constexprs"].items()}
    assert got == {"ACTIVATION": "gelu", "HAS_BIAS": False, "OUT_DTYPE": dtype_value("float16"), "BLOCK": 256}
    assert not any("assumed" in w for w in p.warnings)
    assert any("ACTIVATION='gelu'" in w and "harness" in w for w in p.warnings)
    with pytest.raises(ProfileError, match="static_assert|Assertion"):  # an override reaches the compile too
        static_profile(load(str(path)), "act_kernel", constexprs={"ACTIVATION": "silu"})


def test_the_user_kernel_compiles_with_the_launchers_string(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported kernel: ``activation="silu"`` of the launcher called by ``__main__`` reaches the compile."""
    pytest.importorskip("triton")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")  # the harness is inferred from the file's __main__ (run on the CPU)
    model = load(str(FIXTURE))
    p = static_profile(model, "bias_act_kernel")
    assert p.extra["constexprs"]["ACTIVATION"]["value"] == "silu"
    assert p.extra["constexprs"]["ACTIVATION"]["source"].startswith("harness")
    assert not any("assumed" in w for w in p.warnings)


def test_the_runner_passes_the_kwargs_the_static_compile_reads() -> None:
    """The worker's launch agrees with :func:`recorded_constexprs`: a bare word is a string, the rest evaluates."""
    tl = pytest.importorskip("triton.language")
    from htam_core.harness.runner import _namespace, launch_kwargs

    got = launch_kwargs({"A": "silu", "B": "128 * 2", "C": "tl.float16", "D": "'gelu'", "E": "N // 4", "F": True},
                        _namespace({"N": 1024}))
    assert got == {"A": "silu", "B": 256, "C": tl.float16, "D": "gelu", "E": 256, "F": True}


@pytest.mark.parametrize(("binding", "value"), [
    ('ACT = "silu"', "silu"), ("ACT = 'relu'", "relu"), ("ACT = None", None), ("ACT = tl.bfloat16", dtype_value("bfloat16")),
])
def test_a_module_constant_of_any_type_without_a_harness(tmp_path: Path, binding: str, value: object) -> None:
    """``ACTIVATION=ACT`` with ``ACT`` bound to a literal at module level or in the launcher before the launch."""
    text = _KERNEL.replace("{check}", "pass").replace("{act}", "ACT")
    for where in ("module", "launcher"):
        if where == "module":
            src = text.replace("{local}", "pass").replace("\n\n@triton.jit", f"\n{binding}\n\n@triton.jit", 1)
        else:
            src = text.replace("{local}", binding)
        (tmp_path / "k.py").write_text(src)
        model = load(str(tmp_path / "k.py"))
        assert build_request(model.kernel("act_kernel"), text=model.text)["constexprs"]["ACTIVATION"] == value, where


def test_a_guessed_string_switch_names_the_values_it_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No harness (inference off) and a launcher parameter without a literal: the guess is said in one line that
    names the strings the kernel compares the switch with and how to set one."""
    pytest.importorskip("triton")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    p = static_profile(load(str(FIXTURE)), "bias_act_kernel")
    assert p.extra["constexprs"]["ACTIVATION"]["source"] == "fallback"
    (line,) = [w for w in p.warnings if w.startswith("constexpr ACTIVATION")]
    assert "assumed" in line and "'relu', 'silu'" in line and "--constexpr ACTIVATION=relu" in line
    assert "\n" not in line
