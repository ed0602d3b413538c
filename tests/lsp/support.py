"""Helpers of the LSP tests: client capabilities, initialization, opening files, waiting."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
LANGUAGE_IDS = {".cu": "cuda", ".cuh": "cuda", ".py": "python"}


def capabilities(encoding: str = "utf-16", *, resolve: bool = True, progress: bool = True,
                 configuration: bool = True, document_changes: bool = True) -> types.ClientCapabilities:
    """Client capabilities of a modern editor, offering one position encoding."""
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=[encoding]),
        window=types.WindowClientCapabilities(work_done_progress=progress, show_message=None),
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True, configuration=configuration,
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=document_changes or None,
                resource_operations=[types.ResourceOperationKind.Create])),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(value_set=["refactor", "quickfix"])),
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]) if resolve else None,
                data_support=True)))


async def start(client: LanguageClient, tmp_path: Path, *, encoding: str = "utf-16",
                options: dict[str, Any] | None = None, wait_ready: bool = True, **caps: Any) -> Path:
    """Initialize with a per-test memory store; return the store's path."""
    memory = tmp_path / "memory.sqlite3"
    opts = {"memoryPath": str(memory), **(options or {})}
    result = await client.initialize_session(types.InitializeParams(
        capabilities=capabilities(encoding, **caps), initialization_options=opts,
        root_uri=tmp_path.as_uri(), workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")]))
    client.init_result = result
    if wait_ready:
        await wait_for(lambda: any(_get(s, "server") == "ready" for s in client.statuses), 60,
                       "the server never said it was ready")
    return memory


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def copy_corpus(tmp_path: Path, *names: str) -> list[Path]:
    """Copy corpus files into ``tmp_path`` and return their new paths."""
    out = []
    for n in names:
        dst = tmp_path / n
        shutil.copy(CORPUS / n, dst)
        out.append(dst)
    return out


def open_file(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    """``didOpen`` of ``path`` (its text on disk unless ``text`` is given); returns the URI."""
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=LANGUAGE_IDS.get(path.suffix, "plaintext"), version=version,
        text=path.read_text(encoding="utf-8") if text is None else text)))
    return uri


def pos_of(text: str, needle: str, encoding: str = "utf-16", offset: int = 0) -> types.Position:
    """Position of the first ``needle`` in ``text`` (plus ``offset`` characters), columns in ``encoding``."""
    i = text.index(needle) + offset
    line = text.count("\n", 0, i)
    col_text = text[text.rfind("\n", 0, i) + 1:i]
    if encoding == "utf-8":
        col = len(col_text.encode("utf-8"))
    elif encoding == "utf-16":
        col = len(col_text.encode("utf-16-le")) // 2
    else:
        col = len(col_text)
    return types.Position(line=line, character=col)


async def wait_for(pred: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``pred`` until it returns something truthy."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = pred()
        if v:
            return v
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


async def hover_until(client: LanguageClient, uri: str, pos: types.Position, needle: str,
                      timeout: float = 60.0) -> str:
    """Hover repeatedly until the Markdown contains ``needle`` (a background profile finishing)."""
    last = ""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        h = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
        last = h.contents.value if h is not None else ""
        if needle in last:
            return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"hover never showed {needle!r}; last hover:\n{last}")


async def code_actions(client: LanguageClient, uri: str, pos: types.Position,
                       only: list[str] | None = None) -> list[types.CodeAction]:
    """``textDocument/codeAction`` at ``pos``."""
    res = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=pos, end=pos),
        context=types.CodeActionContext(diagnostics=[], only=only)))
    return [a for a in (res or []) if isinstance(a, types.CodeAction)]


def apply_text_edits(text: str, edits: list[types.TextEdit], encoding: str = "utf-16") -> str:
    """Apply LSP edits to ``text`` the way an editor does (from the last to the first)."""
    from htam_core.source.positions import LineIndex

    data = text.encode("utf-8")
    idx = LineIndex(data)
    spans = sorted(((idx.to_byte(e.range.start.line, e.range.start.character, encoding),
                     idx.to_byte(e.range.end.line, e.range.end.character, encoding), e.new_text) for e in edits),
                   reverse=True)
    for s, e, new in spans:
        data = data[:s] + new.encode("utf-8") + data[e:]
    return data.decode("utf-8")


def edits_of(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    """The text edits of ``uri`` in a workspace edit (``documentChanges`` or ``changes``)."""
    out: list[types.TextEdit] = []
    for dc in edit.document_changes or []:
        if isinstance(dc, types.TextDocumentEdit) and dc.text_document.uri == uri:
            out.extend(e for e in dc.edits if isinstance(e, types.TextEdit))
    out.extend((edit.changes or {}).get(uri, []))
    return out


async def apply_save_and_record(client: LanguageClient, uri: str, path: Path, new_text: str,
                                resolved: types.CodeAction, version: int = 2) -> Any:
    """What an editor does with a resolved action: apply its edit (didChange), save the file (didSave), then run
    the action's command (``htam.recordApplied``); returns the command's result."""
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)]))
    path.write_text(new_text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=resolved.command.command, arguments=resolved.command.arguments))
