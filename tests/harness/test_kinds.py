"""The harness-kind registry: each kind's traits, and a clear error for an unknown kind."""

from __future__ import annotations

import pytest

from htam_core.harness import kinds
from htam_core.harness.base import Harness


def test_every_kind_a_harness_can_have_is_registered():
    assert set(kinds.kinds()) == {"spec", "inferred", "kernelbench", "cu-main"}
    assert kinds.create("cu-main").whole_program and not kinds.create("cu-main").launches
    assert kinds.create("inferred").launches and kinds.create("inferred").inferred
    assert kinds.create("spec").launches and not kinds.create("spec").inferred


def test_a_harness_reads_its_traits_and_label():
    h = Harness(kind="spec", path="k.py", kernel="k")
    assert h.traits.launches and h.label() == "htam.toml"
    assert Harness(kind="cu-main", path="k.cu", kernel="k").label() == "cu-main"


def test_an_unknown_kind_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown harness kind 'bogus' .*cu-main"):
        kinds.create("bogus")
    with pytest.raises(ValueError, match="already registered"):
        kinds.register(kinds.KindTraits("spec", label="x", origin=None, launches=True))
