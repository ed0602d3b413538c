"""The launch-configuration steps on elementwise kernels with constexpr switches of any type.

The reported kernel (``bias_act_kernel``: ``ACTIVATION`` a string compared with ``"silu"``) and one of ours with a
string, a bool (``HAS_BIAS=bias is not None``) and a dtype (``OUT_DTYPE=tl.float16``) switch. For an elementwise
kernel the textbook step is the per-program tile and its warps (``BLOCK_SIZE`` of 1-4K elements, ``num_warps`` 4-8)
or an autotune over them; each is offered, made, keeps every switch a constexpr with the launch's own value (no
autotune config names or overrides one), and the candidate computes what the original does under
``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from transform_helpers import fixture_path
from triton_equivalence import Case, run_cases

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

USER = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "bias_act.py"
OURS = "tri_act_switch.py"
#: (file, kernel, the launch's switches as the launch site passes them)
KERNELS = [
    (str(USER), "bias_act_kernel", {"ACTIVATION": "activation"}),
    (OURS, "act_switch_kernel", {"ACTIVATION": "activation", "HAS_BIAS": "bias is not None",
                                 "OUT_DTYPE": "out_dtype"}),
]
STEPS = [("triton.block_size", 0), ("triton.autotune", 0), ("triton.warps_stages", 0)]


def _path(name: str) -> Path:
    return Path(name) if Path(name).is_absolute() else fixture_path(name)


def _config_keys(text: str) -> set[str]:
    """Every key of a ``triton.Config({...})`` dict in ``text``."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Config") and node.args \
                and isinstance(node.args[0], ast.Dict):
            keys |= {k.value for k in node.args[0].keys if isinstance(k, ast.Constant)}
    return keys


@pytest.mark.parametrize(("file", "kernel", "switches"), KERNELS, ids=[k[1] for k in KERNELS])
@pytest.mark.parametrize(("step", "index"), STEPS, ids=[s for s, _ in STEPS])
def test_the_step_is_made_and_keeps_every_switch(file: str, kernel: str, switches: dict[str, str], step: str,
                                                 index: int) -> None:
    model = load(str(_path(file)))
    res = registry.propose(step, model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res
    cand = res[index]
    after = parse_text(cand.new_text, model.file_language, str(_path(file))).kernel(kernel)
    params = {p.name: p.is_constexpr for p in after.params}
    site = after.launch_sites[0]
    for name, expr in switches.items():
        assert params[name], f"{name} is no longer a constexpr"
        assert " ".join(site.config.get(name, "").split()) == expr, (name, site.config)
    assert not set(switches) & _config_keys(cand.new_text)


CASES = [
    Case(str(USER), "bias_act_kernel", step, index, "bias_act", ("x", "w")) for step, index in STEPS
] + [
    Case(OURS, "act_switch_kernel", step, index, "act_switch", ("x", "w"), tol=(1e-3, 1e-3)) for step, index in STEPS
] + [  # no bias: HAS_BIAS is False (other candidates, so that each case has its own key)
    Case(OURS, "act_switch_kernel", step, 1, "act_switch", ("x",), tol=(1e-3, 1e-3))
    for step in ("triton.block_size", "triton.warps_stages")
]


@pytest.fixture(scope="module")
def equivalence(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every candidate and its original, run in one interpreter worker."""
    return run_cases(CASES, tmp_path_factory.mktemp("constexpr_switch"), _path)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_candidate_matches_original_in_interpreter(equivalence: dict[str, str], case: Case) -> None:
    assert equivalence[case.key] == "ok", equivalence[case.key]
