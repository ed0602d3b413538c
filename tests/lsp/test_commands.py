"""``htam.profile`` (progress, diagnostics) and ``htam.showMemory`` (Markdown HTG summary)."""

from __future__ import annotations

from lsprotocol import types

from htam_core.memory import Outcome, open_store
from tests.lsp.support import copy_corpus, open_file, start, wait_for


def _heavy(name: str, bounds: str) -> str:
    body = "\n".join(f"    float v{i} = x[i + {i}] * {i + 1}.0f;" for i in range(96))
    acc = " + ".join(f"v{i} * v{(i * 7) % 96}" for i in range(96))
    acc2 = " + ".join(f"v{(i * 5) % 96} / v{(i * 11) % 96}" for i in range(96))
    return (f"__global__ void {bounds} {name}(float* x, float* y, int n) {{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i + 96 >= n) return;\n"
            f"{body}\n    y[i] = {acc};\n    y[i + 1] = {acc2};\n}}\n")


async def test_profile_command_publishes_diagnostics(client, tmp_path):
    await start(client, tmp_path)
    path = tmp_path / "heavy.cu"
    # 96 live values: squeezed into 64 registers by __launch_bounds__(1024) they spill; without the bound
    # the kernel needs so many registers that a 1024-thread block cannot launch at all
    text = (_heavy("spilly", "__launch_bounds__(1024)") + _heavy("fat", "")
            + "int main() { float *x, *y; spilly<<<1, 1024>>>(x, y, 1 << 20); fat<<<1, 1024>>>(x, y, 1 << 20); "
              "return 0; }\n")
    path.write_text(text)
    uri = open_file(client, path)
    res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="htam.profile", arguments=[{"uri": uri}]))
    assert [p["kernel"] for p in res["profiles"]] == ["spilly", "fat"]
    assert all(p["mode"] == "static" and p["error"] is None for p in res["profiles"])
    assert any(type(r).__name__ == "WorkDoneProgressBegin" and "profiling" in r.title
               for rs in client.progress_reports.values() for r in rs)
    diags = await wait_for(lambda: len({d.code for d in client.diagnostics.get(uri, [])}) >= 2 and
                           client.diagnostics[uri], 20, "diagnostics of both kernels")
    assert all(d.source == "htam" for d in diags)
    by_line = {(d.range.start.line, d.code) for d in diags}
    fat_line = text[: text.index(" fat(")].count("\n")
    assert (0, "register-spill") in by_line
    assert (fat_line, "cannot-launch") in by_line
    # every fact comes from the profile
    from htam_core.profile.api import profile_kernel

    spilly = profile_kernel(str(path), "spilly", static=True)
    fat = profile_kernel(str(path), "fat", static=True)
    assert spilly.spill_bytes and fat.theoretical_occupancy is None and fat.extra["launch"]["fits"] is False
    launch_msg = next(d.message for d in diags if d.code == "cannot-launch")
    assert launch_msg.startswith("cannot launch on sm_90: ") and "register" in launch_msg
    spill_msg = next(d.message for d in diags if d.code == "register-spill")
    assert f"{spilly.spill_bytes} B" in spill_msg


async def test_show_memory(client, tmp_path):
    memory = tmp_path / "memory.sqlite3"
    state = {"class=memory-bound": 1.0}
    with open_store(memory) as store:
        for sp in (1.5, 1.4, 0.9):
            store.record([], state, "restrict_pointers", Outcome(sp, True, True, "win" if sp > 1 else "loss"),
                         "k", "H200")
        store.record(["restrict_pointers"], state, "readonly_cache_loads", Outcome(1.3, True, True, "win"), "k",
                     "H200")
    await start(client, tmp_path)
    res = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="htam.showMemory",
                                                                                  arguments=[]))
    md = res["markdown"]
    assert md.startswith("## HTAM memory: 4 records")
    assert "| Memory Access | 4 | 3 | 0 |" in md
    assert "after **const __restrict__ pointers**, **read-only cache loads (__ldg)**: +30% mean, paid off 1 of 1" in md


async def test_bad_command_arguments_are_reported(client, tmp_path):
    await start(client, tmp_path)
    res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="htam.profile", arguments=[{"uri": "file:///nowhere/x.cu"}]))
    assert "not an open CUDA or Triton file" in res["error"]
    await wait_for(lambda: [m for m in client.messages if m.type == types.MessageType.Error], 10)
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    uri = open_file(client, path)
    res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="htam.autoOptimize", arguments=[{"uri": uri}]))
    assert "2 kernels in the file" in res["error"]
