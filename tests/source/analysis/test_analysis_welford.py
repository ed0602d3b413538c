"""Welford recurrences (:mod:`htam_core.source.analysis.welford`, ``KernelFacts.welford_stats``): a loop that keeps a
running mean and M2 by Welford's update is one fact in every spelling (an implicit count ``i + 1`` or ``i`` in a loop
from 1, an explicit counter, a float or double mean, the deviations inline or named); a loop that only looks like one
(an exponential moving average, a constant divisor, a mean read elsewhere in the loop) is none."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import KernelFacts, WelfordStat, analyze
from htam_core.source.api import parse_text

KERNEL = """__global__ void k(const float *x, float *out, int rows, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *p = x + r * C;
BODY
    out[r] = m + q;
}
void launch(const float *x, float *out, int rows, int C) { k<<<(rows + 127) / 128, 128>>>(x, out, rows, C); }
"""


def _facts(body: str) -> KernelFacts:
    model = parse_text(KERNEL.replace("BODY", body), "cuda")
    return analyze(model, model.kernel("k"))


def _stat(body: str) -> WelfordStat | None:
    stats = _facts(body).welford_stats
    assert len(stats) <= 1
    return stats[0] if stats else None


def _count_text(body: str, stat: WelfordStat) -> str:
    text = KERNEL.replace("BODY", body).encode()
    assert stat.count_span is not None
    return text[stat.count_span[0]:stat.count_span[1]].decode()


def test_llmc_spelling_implicit_count():
    body = """    float m = 0.0f, q = 0.0f;
    for (int i = 0; i < C; i++) {
        float v = (float)p[i];
        float d = v - m;
        m += d / (float)(i + 1);
        q += d * (v - m);
    }"""
    s = _stat(body)
    assert s is not None and (s.mean, s.m2, s.count, s.value, s.count_offset) == ("m", "q", None, "v", 1)
    assert _count_text(body, s) == "i + 1"
    assert s.line == 6


def test_explicit_counter_and_named_second_deviation():
    s = _stat("""    float m = 0.0f, q = 0.0f; int n = 0;
    for (int i = 0; i < C; ++i) {
        float v = p[i];
        n++;
        float delta = v - m;
        m = m + delta / n;
        float delta2 = v - m;
        q += delta * delta2;
    }""")
    assert s is not None and (s.mean, s.m2, s.count, s.count_span) == ("m", "q", "n", None)


def test_double_mean_in_a_loop_from_one_divides_by_the_variable():
    body = """    double m = 0.0, q = 0.0;
    for (int j = 1; j <= C; ++j) {
        double val = p[j - 1];
        double d = val - m;
        m += d / j;
        q = q + d * (val - m);
    }"""
    s = _stat(body)
    assert s is not None and (s.mean, s.m2, s.count, s.count_offset) == ("m", "q", None, 0)
    assert _count_text(body, s) == "j"


def test_float_counter_stepped_by_one_point_zero_and_factors_swapped():
    s = _stat("""    float m = 0.0f, q = 0.0f, n = 0.0f;
    for (int i = 0; i < C; i++) {
        n += 1.0f;
        float d = p[i] - m;
        m += d / n;
        q += (p[i] - m) * d;
    }""")
    assert s is not None and (s.mean, s.m2, s.count, s.value) == ("m", "q", "n", "p[i]")


def test_count_through_a_local():
    body = """    float m = 0.0f, q = 0.0f;
    for (int i = 0; i < C; i++) {
        const float cnt = (float)(i + 1);
        const float d = p[i] - m;
        m += d / cnt;
        q += d * (p[i] - m);
    }"""
    s = _stat(body)
    assert s is not None and s.count is None and _count_text(body, s) == "i + 1"


@pytest.mark.parametrize("body", [
    # an exponential moving average: a constant weight, no count
    """    float m = 0.0f, q = 0.0f;
    for (int i = 0; i < C; i++) { float d = p[i] - m; m += 0.1f * d; q += d * (p[i] - m); }""",
    # a constant divisor
    """    float m = 0.0f, q = 0.0f;
    for (int i = 0; i < C; i++) { float d = p[i] - m; m += d / 4.0f; q += d * (p[i] - m); }""",
    # the mean read elsewhere in the loop
    """    float m = 0.0f, q = 0.0f;
    for (int i = 0; i < C; i++) { float d = p[i] - m; m += d / (i + 1); q += d * (p[i] - m); out[i] = m; }""",
    # `i + 1` in a loop from 1 does not count the elements seen
    """    float m = 0.0f, q = 0.0f;
    for (int i = 1; i < C; i++) { float d = p[i] - m; m += d / (i + 1); q += d * (p[i] - m); }""",
    # both factors of the M2 step are the deviation from the old mean
    """    float m = 0.0f, q = 0.0f;
    for (int i = 0; i < C; i++) { float d = p[i] - m; m += d / (i + 1); q += d * d; }""",
    # a counter stepped by 2
    """    float m = 0.0f, q = 0.0f; int n = 0;
    for (int i = 0; i < C; i++) { n += 2; float d = p[i] - m; m += d / n; q += d * (p[i] - m); }""",
])
def test_look_alikes_are_not_welford(body):
    assert _stat(body) is None
