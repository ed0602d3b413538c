"""A host function template's non-type parameters are constants inside it when every use in the unit gives the same
value (``template <int BX, int BY> void launch(...)`` called as ``launch<32, 8>(...)``); otherwise they are not,
and :meth:`ConstEnv.refusal` says why in one line."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.syntax import parse_cuda

BASE = b"""__global__ void k(float* x) {}
template <int BX, int BY = 8>
void launch(float* x, int n) { dim3 block(BX, BY); k<<<(n + BX - 1) / BX, block>>>(x); }
"""


def _at_launch(src: bytes, name: str):
    env = ConstEnv(src, parse_cuda(src).root_node)
    at = src.index(b"dim3 block")
    fn = env.function_at(at)
    return env, env.const_name(name, fn, at), env.refusal(name, fn)


@pytest.mark.parametrize(("calls", "name", "value"), [
    (b"int main() { launch<32, 8>(0, 3); }", "BX", 32),
    (b"int main() { launch<32, 8>(0, 3); }", "BY", 8),
    (b"int main() { launch<32>(0, 3); }", "BY", 8),  # the default argument
    (b"int main() { launch<32, 4>(0, 3); launch<32, 4>(0, 5); }", "BX", 32),  # two uses, one instantiation
    (b"int main() { constexpr int bx = 16; launch<bx, 8>(0, 3); }", "BX", 16),  # read in the caller's scope
    (b"enum { TB = 64 };\nint main() { launch<TB, 2>(0, 3); }", "BX", 64),
    (b"template <int Q> void outer() { launch<Q * 2>(0, 1); }\nint main() { outer<64>(); }", "BX", 128),
    (b"template void launch<128, 2>(float*, int);\n", "BX", 128),  # an explicit instantiation
])
def test_bound_from_the_uses(calls: bytes, name: str, value: int) -> None:
    _, c, why = _at_launch(BASE + calls, name)
    assert c is not None and c.value == value and why == ""


def test_rewritable_only_through_its_one_use() -> None:
    src = BASE + b"int main() { launch<32, 8>(0, 3); }"
    env, c, _ = _at_launch(src, "BX")
    assert c.literal is not None and c.literal.start_byte == src.index(b"32, 8")
    _, two, _ = _at_launch(BASE + b"int main() { launch<32, 8>(0, 3); launch<32, 8>(0, 4); }", "BX")
    assert two.value == 32 and two.literal is None  # two literals give the value: none of them alone changes it


@pytest.mark.parametrize(("calls", "reason"), [
    (b"int main() { launch<32, 8>(0, 3); launch<64, 8>(0, 3); }", "BX = 32, 64: several instantiations disagree"),
    (b"int main() { launch(0, 3); }", "deduces BX"),
    (b"int main(int c, char**) { launch<c, 8>(0, 3); }", "is not a compile-time constant"),
    (b"", "not called in this file"),
    (b"int main() { auto p = &launch; }", "without template arguments"),
    (b"template <int N> void rec() { rec<N - 1>(); launch<N>(0, 1); }\nint main() { rec<4>(); }",
     "is not a compile-time constant"),  # a cycle of uses: no value
])
def test_not_a_constant_says_why(calls: bytes, reason: str) -> None:
    _, c, why = _at_launch(BASE + calls, "BX")
    assert c is None and reason in why


def test_a_kernel_template_parameter_is_left_to_the_launch_bindings() -> None:
    src = b"template <int B> __global__ void kt(float* x) { int v = B; }\nvoid run() { kt<128><<<1, 128>>>(0); }\n"
    env = ConstEnv(src, parse_cuda(src).root_node)
    at = src.index(b"int v")
    assert env.value_of_text("B", at) is None and env.refusal("B", env.function_at(at)) == ""
    assert ConstEnv(src, parse_cuda(src).root_node, {"B": 128}).value_of_text("B", at) == 128


def test_read_inside_a_lambda_of_the_wrapper() -> None:
    src = b"template <int B> void run() { auto go = [&] { int u = B * 2; }; go(); }\nint main() { run<4>(); }\n"
    env = ConstEnv(src, parse_cuda(src).root_node)
    assert env.value_of_text("B * 2", src.index(b"int u")) == 8
