"""A launch names its kernel through any qualification and template arguments (``k<T>``, ``ns::k``,
``ns::k<T>``, ``::a::b::k<std::int64_t, 4>``): every spelling is a launch site of the kernel, so the steps that edit
the launch find it (a namespaced templated launch was missed: "no launch site in this file")."""

from __future__ import annotations

import pytest

from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

KERNEL = """#include <cstdint>
namespace a { namespace b {
template <typename T, int U>
__global__ void k(T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * U;
}
} }
using namespace a::b;
void launch(std::int64_t* y, int n) {
  LAUNCH
}
"""

SPELLINGS = {
    "template": "k<std::int64_t, 4><<<(n + 255) / 256, 256>>>(y, n);",
    "qualified": "a::b::k<std::int64_t, 4><<<(n + 255) / 256, 256>>>(y, n);",
    "global_qualified": "::a::b::k<std::int64_t, 4><<<(n + 255) / 256, 256>>>(y, n);",
    "inner_qualified": "b::k<std::int64_t, 4><<<(n + 255) / 256, 256>>>(y, n);",
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_of_the_launch_is_found(name: str) -> None:
    model = parse_text(KERNEL.replace("LAUNCH", SPELLINGS[name]), "cuda", "k.cu")
    kernel = model.kernel("k")
    res = registry.propose("cuda.block_size", model, kernel)
    assert not isinstance(res, NotApplicable), res.reason
    assert any("512" in c.new_text.split("void launch")[1] for c in res), [c.description for c in res]
