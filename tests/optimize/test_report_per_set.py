"""The optimize summary gives every input set's speedup and says which sets the headline geomean counts."""

from __future__ import annotations

from htam_core.optimize.report import _per_set_line


def test_launch_bound_set_is_shown_and_left_out():
    line = _per_set_line([0.1623, 0.0060], [0.0521, 0.0050])
    assert line.startswith("geomean over set(s) 0 of 2; medians ")
    assert "set 0: 0.1623 → 0.0521 ms (3.12×)" in line
    assert "set 1: 0.0060 → 0.0050 ms (1.20×, launch-bound, left out)" in line


def test_every_set_counted_and_one_set_and_unmeasured():
    assert "left out" not in _per_set_line([0.2, 0.4], [0.1, 0.1])
    assert _per_set_line([0.2], [0.1]) == "0.2000 → 0.1000 ms (2.00×) median"
    # all launch-bound: the geomean covers them all (headline_geomean's rule), so none is "left out"
    assert "left out" not in _per_set_line([0.005, 0.004], [0.004, 0.002])
    assert "set 1: not measured" in _per_set_line([0.2, None], [0.1, 0.1])  # type: ignore[list-item]
