"""Settings from ``initializationOptions`` and ``workspace/configuration``: valid values are used, invalid
ones are reported with showMessage and replaced by their defaults."""

from __future__ import annotations

from lsprotocol import types

from tests.lsp.support import code_actions, copy_corpus, open_file, pos_of, start, wait_for


def _steps(acts):
    return [a for a in acts if a.kind == "refactor.rewrite.htam"]


async def test_initialization_options_valid_and_invalid(client, tmp_path):
    await start(client, tmp_path, options={"topN": 2, "budget": 0, "engine": "magic"}, configuration=False)
    msgs = await wait_for(lambda: [m.message for m in client.messages if "invalid setting" in m.message], 10,
                          "invalid-setting messages")
    assert any("htam.budget = 0" in m and "using 8" in m for m in msgs), msgs
    assert any("htam.engine = 'magic'" in m and "using 'rules'" in m for m in msgs), msgs
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    text = path.read_text()
    uri = open_file(client, path)
    assert len(_steps(await code_actions(client, uri, pos_of(text, "transpose_naive(")))) == 2


async def test_workspace_configuration_overrides(client, tmp_path):
    client.set_configuration({"topN": 3, "gpuIndex": -1, "llm": {"apiKeyEnv": "1BAD"}}, section="htam")
    await start(client, tmp_path, options={"topN": 1})
    def config_msgs() -> list[str]:
        return [m.message for m in client.messages if "workspace/configuration" in m.message]

    # both messages: the first can arrive alone on a loaded machine
    msgs = await wait_for(lambda: len(config_msgs()) >= 2 and config_msgs(), 10,
                          "two messages about workspace/configuration")
    assert any("htam.gpuIndex = -1" in m and "using 0" in m for m in msgs), msgs
    assert any("htam.llm.apiKeyEnv = '1BAD'" in m for m in msgs), msgs
    # the naive SGEMM has five makeable steps (only steps that can be made on the kernel are listed)
    (path,) = copy_corpus(tmp_path, "sgemm_naive.cu")
    text = path.read_text()
    uri = open_file(client, path)
    pos = pos_of(text, "sgemm_naive(")
    await wait_for(lambda: True)
    assert len(_steps(await code_actions(client, uri, pos))) == 3  # workspace/configuration wins over init

    # a configuration change is pulled again
    client.set_configuration({"topN": 5}, section="htam")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def five():
        return len(_steps(await code_actions(client, uri, pos))) == 5

    import asyncio

    for _ in range(50):
        if await five():
            break
        await asyncio.sleep(0.1)
    assert await five()
