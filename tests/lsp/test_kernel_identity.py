"""Two kernels of one file that share a name (``f32::scale`` and ``f64::scale``; two overloads of ``scale``): the
hover of each shows its own profile, and the code actions of each edit its own kernel, never the other."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from htam_core.source import parse_text
from tests.lsp.support import code_actions, edits_of, hover_until, open_file, start

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "identity"
PAIRS = {"namespaces.cu": ("f32::scale", "f64::scale"),
         "overloads.cu": ("scale(float*, float, int)", "scale(double*, double, int)")}
#: the source stage's roofline evidence of each: 4-byte floats, 8-byte doubles (read, then written)
BYTES = ("8 B issued", "16 B issued")


def _name_pos(text: str, kernel) -> types.Position:
    line = text.count("\n", 0, kernel.name_span.start)
    return types.Position(line=line, character=kernel.name_span.start - (text.rfind("\n", 0, kernel.name_span.start) + 1) + 1)


@pytest.mark.parametrize("name", sorted(PAIRS))
async def test_hover_and_actions_of_each_kernel_are_its_own(client, tmp_path, name):
    await start(client, tmp_path, options={"topN": 4})
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    text = path.read_text()
    uri = open_file(client, path)
    kernels = [k for k in parse_text(text, "cuda", str(path)).kernels if k.name == "scale"]
    for i, (k, key) in enumerate(zip(kernels, PAIRS[name], strict=True)):
        md = await hover_until(client, uri, _name_pos(text, k), BYTES[i])
        assert f"`{key}`" in md and BYTES[1 - i] not in md, md

    for i, k in enumerate(kernels):
        other = kernels[1 - i]
        acts = [a for a in await code_actions(client, uri, _name_pos(text, k)) if a.kind == "refactor.rewrite.htam"]
        assert acts, f"no step offered for {PAIRS[name][i]}"
        for act in acts[:2]:
            assert act.data["kernel"] == PAIRS[name][i]
            resolved = await client.code_action_resolve_async(act)
            if resolved.edit is None:
                continue
            for e in edits_of(resolved.edit, uri):  # nothing inside the other kernel changes
                assert not (other.start_line - 1 <= e.range.start.line <= other.end_line - 1), (act.title, e)
                assert not (e.range.start.line < other.start_line - 1 and e.range.end.line >= other.end_line - 1)
