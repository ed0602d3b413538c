"""The kernel language is a registry key, not a string tested across the code base.

Code that needs a per-language behaviour asks a registry (static profilers: :mod:`htam_core.profile.static_kinds`;
transforms, generators and harness kinds have their own) instead of testing ``kernel.language == "triton"``.
Files that still hold such tests are listed in :data:`ALLOWED` with their count at the time the rule was made;
the count of a file may only go down (lower the number when you remove one), and no other file may start
testing the language. A test line is ``language ==``/``!=`` or ``.language in``/``not in``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATTERN = re.compile(r"\blanguage\s*(==|!=)|\.language\s+(not\s+)?in\s")
#: registries, where the language is the key by design
REGISTRIES = {"htam_core/profile/static_kinds.py", "htam_core/transforms/registry.py", "htam_core/types/language.py"}
#: file -> the language tests it held when the rule was made (may only shrink)
ALLOWED: dict[str, int] = {}


def _counts() -> dict[str, int]:
    out: dict[str, int] = {}
    for pkg in ("htam_core", "server"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in REGISTRIES:
                continue
            n = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if PATTERN.search(line))
            if n:
                out[rel] = n
    return out


def test_no_new_language_string_tests_outside_the_registries():
    grown = {f: n for f, n in _counts().items() if n > ALLOWED.get(f, 0)}
    assert not grown, ("per-language behaviour belongs in a registry (see this test's docstring); these files test "
                       f"the language string more often than allowed: {grown}")


def test_the_static_profile_asks_its_registry():
    text = (ROOT / "htam_core/profile/api.py").read_text(encoding="utf-8")
    assert not PATTERN.search(text)


HARNESS_KIND_TEST = re.compile(r"""kind\s*(==|!=|in|not in)\s*\(?["'](spec|inferred|kernelbench|cu-main)["']""")


def test_harness_kinds_are_asked_through_their_traits():
    """``h.kind == "cu-main"`` and the like are written once, in the kinds registry (``h.traits``)."""
    bad = []
    for pkg in ("htam_core", "server"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "htam_core/harness/kinds.py":
                continue
            bad += [f"{rel}:{i}" for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                    if HARNESS_KIND_TEST.search(line)]
    assert not bad, "ask the harness kind's traits (htam_core.harness.kinds) instead: " + ", ".join(bad)
