"""CUDA held in Python string literals (KernelBench style, ``load_inline(cuda_sources=...)``).

Every string literal whose value contains ``__global__`` is decoded and parsed as CUDA. Raw
strings map one to one onto the file. In other strings each escape sequence (``\\n``, ``\\x41``,
``\\\\``) becomes a segment of the offset map in the :class:`~htam_core.source.frames.Frame`, so
that every byte of the decoded source maps back to a file byte (bytes produced by an escape
map to the escape's first byte). f-strings with interpolations are skipped: their value is not
known statically.
"""

from __future__ import annotations

import codecs

import tree_sitter as ts

from htam_core.source.cuda import CudaResult, attach_launches, extract_cuda, parse_cuda_bytes
from htam_core.source.frames import Frame
from htam_core.source.parsing import captures, node_text
from htam_core.source.positions import LineIndex

Q_STRINGS = "(string) @s"


def decode_string(node: ts.Node, data: bytes) -> tuple[bytes, list[tuple[int, int, int, int]], int] | None:
    """Decoded value of the Python string literal ``node`` as UTF-8 bytes, its offset map
    (``(local_start, file_start, local_len, file_len)`` runs) and the file offset of its content.

    Returns ``None`` for f-strings with interpolations and for byte strings.
    """
    start_tok = next((c for c in node.children if c.type == "string_start"), None)
    end_tok = next((c for c in node.children if c.type == "string_end"), None)
    if start_tok is None or end_tok is None:
        return None
    prefix = node_text(start_tok).rstrip("'\"").lower()
    if any(c.type == "interpolation" for c in node.children) or "b" in prefix:
        return None
    cstart, cend = start_tok.end_byte, end_tok.start_byte
    if "r" in prefix:
        return data[cstart:cend], [(0, cstart, cend - cstart, cend - cstart)], cstart
    escapes: list[ts.Node] = []
    for c in node.children:
        if c.type == "string_content":
            escapes.extend(e for e in c.children if e.type == "escape_sequence")
        elif c.type == "escape_sequence":
            escapes.append(c)
    out = bytearray()
    segments: list[tuple[int, int, int, int]] = []
    pos = cstart
    for e in sorted(escapes, key=lambda n: n.start_byte):
        if e.start_byte > pos:
            segments.append((len(out), pos, e.start_byte - pos, e.start_byte - pos))
            out += data[pos : e.start_byte]
        raw = data[e.start_byte : e.end_byte]
        try:
            value = codecs.decode(raw, "unicode_escape").encode("utf-8", errors="surrogatepass")
        except (UnicodeDecodeError, ValueError):
            value = raw
        segments.append((len(out), e.start_byte, len(value), e.end_byte - e.start_byte))
        out += value
        pos = e.end_byte
    if cend > pos:
        segments.append((len(out), pos, cend - pos, cend - pos))
        out += data[pos:cend]
    return bytes(out), segments, cstart


def extract_embedded(root: ts.Node, data: bytes, index: LineIndex,
                     strings: list[ts.Node] | None = None) -> CudaResult:
    """Kernels (``language="cuda-in-python"``) of every CUDA string in the Python tree ``root``.

    Each kernel gets ``attributes["cuda_source"]`` (the full decoded string) and
    ``attributes["cuda_source_offset"]`` (file byte offset of the string content), plus
    ``attributes["cuda_source_var"]`` when the string is assigned to a name. ``strings`` are the
    string nodes when the caller already captured them.
    """
    result = CudaResult()
    if strings is None:
        strings = captures("python", Q_STRINGS, root).get("s", [])
    for s in strings:
        if b"__global__" not in (s.text or b""):
            continue
        decoded = decode_string(s, data)
        if decoded is None:
            continue
        content, segments, offset = decoded
        frame = Frame.of(content, index, segments)
        tree = parse_cuda_bytes(frame.src)
        res = extract_cuda(frame, tree.root_node, language="cuda-in-python")
        attach_launches(res.kernels, res.launches)
        var = None
        parent = s.parent
        if parent is not None and parent.type == "assignment":
            var = node_text(parent.child_by_field_name("left"))
        text = content.decode("utf-8", errors="replace")
        for k in res.kernels:
            k.attributes["cuda_source"] = text
            k.attributes["cuda_source_offset"] = offset
            if var:
                k.attributes["cuda_source_var"] = var
        result.kernels.extend(res.kernels)
        result.device_functions.extend(res.device_functions)
        result.errors.extend(res.errors)
    return result
