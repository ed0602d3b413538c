"""Which timing method a launcher gets (no GPU)."""

from __future__ import annotations

import pytest

from htam_core.measure.method import METHOD_EVENTS, METHOD_GRAPH, choose_method, may_capture


def test_graph_when_the_capture_works_and_launches_the_same_work():
    c = choose_method("auto", "triton", capture_error=None, eager_kernels=1, graph_kernels=1)
    assert c.method == METHOD_GRAPH and c.reason == ""


def test_events_when_the_capture_fails():
    c = choose_method("auto", "python", capture_error="RuntimeError: operation not permitted when stream is "
                      "capturing", eager_kernels=2, graph_kernels=None)
    assert c.method == METHOD_EVENTS and "could not be captured" in c.reason and "not permitted" in c.reason


def test_events_when_the_graph_misses_work():
    c = choose_method("auto", "python", capture_error=None, eager_kernels=2, graph_kernels=0)
    assert c.method == METHOD_EVENTS and "0 device operation(s)" in c.reason


def test_host_launcher_is_never_captured():
    pre = may_capture("auto", "cu-host-launcher")
    assert pre is not None and pre.method == METHOD_EVENTS and "legacy default stream" in pre.reason
    assert may_capture("auto", "triton") is None


def test_events_on_request_and_unknown_request():
    assert may_capture(METHOD_EVENTS, "triton").method == METHOD_EVENTS
    with pytest.raises(ValueError):
        may_capture("wallclock", None)


def test_graph_without_cupti_counts():
    assert choose_method("auto", None, capture_error=None, eager_kernels=None, graph_kernels=None).method == \
        METHOD_GRAPH
