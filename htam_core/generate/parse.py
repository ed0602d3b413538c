"""Extract the candidate source from an LLM reply.

Replies come in many shapes: one fenced block, several blocks (a kernel plus a usage example or a
shell command), a block cut short by the token limit (no closing fence), bare code with no fence, or
prose with no code at all. Fences are found with a CommonMark parser (``markdown-it-py``), not with
regexes; bare code is accepted only when it parses (``ast`` for Python, tree-sitter-cuda for CUDA).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt

from htam_core.generate.errors import ParseError
from htam_core.types.language import traits

#: Fence info tags accepted per language family.
PYTHON_TAGS = frozenset({"python", "py", "python3", "py3", "triton"})
CUDA_TAGS = frozenset({"cuda", "cu", "cuh", "cpp", "c++", "cc", "cxx", "c", "hpp", "h"})

_CODE_START_PY = re.compile(r"^(import |from \w[\w.]* import |@|def |class |[A-Za-z_]\w* *=)")
_CODE_START_CU = re.compile(r"^(#include|#define|#pragma|template\s*<|extern |__global__|__device__|"
                            r"static |namespace |struct |(const )?(void|int|float|double|auto)\b)")


@dataclass
class ExtractedCode:
    """Code taken from a reply.

    Attributes:
        code: the source text, ending with a newline.
        tag: the fence's info tag (``""`` when untagged or bare).
        method: ``"fence"`` or ``"bare"``.
        truncated: the fence was never closed (reply cut short, e.g. ``finish_reason == "length"``).
        n_blocks: fenced blocks in the reply.
    """

    code: str
    tag: str
    method: str
    truncated: bool
    n_blocks: int


def _family(language: str) -> str:
    return traits(language).file_language


@cache
def _md() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _markers(language: str, kernel_name: str | None) -> list[re.Pattern[str]]:
    pats = []
    if kernel_name:
        pats.append(re.compile(rf"\b{re.escape(kernel_name)}\b"))
    lang = traits(language)
    if lang.tiles:
        pats.append(re.compile(r"@triton\.(jit|autotune)"))
    if lang.grammar == "cuda":
        pats.append(re.compile(r"__global__"))
    if lang.file_language == "python":
        pats.append(re.compile(r"\bclass\s+ModelNew\b"))
    return pats


def _python_parses(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom | ast.AsyncFunctionDef)
               for n in tree.body)


def _cuda_parses(text: str) -> bool:
    import tree_sitter as ts
    import tree_sitter_cuda as tscuda

    parser = ts.Parser(ts.Language(tscuda.language()))
    root = parser.parse(text.encode("utf-8")).root_node
    if root.has_error:
        return False
    return any(c.type in ("function_definition", "template_declaration") for c in root.children)


def _bare_code(reply: str, language: str) -> str | None:
    """The longest leading-code slice of a fence-less reply that parses, or ``None``."""
    lines = reply.splitlines()
    start_re = _CODE_START_CU if _family(language) == "cuda" else _CODE_START_PY
    ok = _cuda_parses if _family(language) == "cuda" else _python_parses
    start = next((i for i, ln in enumerate(lines) if start_re.match(ln)), None)
    if start is None:
        return None
    # Drop trailing prose line by line (bounded), keeping the longest prefix that parses.
    for end in range(len(lines), max(start, len(lines) - 200), -1):
        text = "\n".join(lines[start:end]).strip("\n")
        if text and ok(text):
            return text + "\n"
    return None


def extract_code(reply: str, language: str, kernel_name: str | None = None) -> ExtractedCode:
    """Pick the candidate source out of an LLM reply.

    Rules, in order: fenced blocks whose tag fits the language (Python family: ``python``/``py``;
    CUDA: ``cuda``/``cpp``/``c``...), else untagged fences; among several, the one containing the most
    of: the kernel name, ``class ModelNew``, ``@triton.jit``, ``__global__``; ties go to the largest.
    With no fence at all, bare code is accepted when it parses. An unclosed fence (a partial reply) is
    returned with ``truncated=True``.

    Args:
        reply: the assistant message content.
        language: ``"cuda"``, ``"triton"``, ``"cuda-in-python"`` or ``"python"``.
        kernel_name: the kernel the reply should contain, if known.

    Raises:
        ParseError: no usable code (prose only, empty, or code only in another language).
    """
    excerpt = reply.strip()[:200]
    if not reply.strip():
        raise ParseError("the LLM reply is empty: no code to use; check the model name and max_tokens", excerpt)
    lines = reply.splitlines()
    blocks: list[tuple[str, str, bool]] = []  # (tag, content, truncated)
    for tok in _md().parse(reply):
        if tok.type != "fence" or tok.map is None:
            continue
        tag = (tok.info.split() or [""])[0].strip().lower()
        first, last = tok.map
        closed = last - 1 > first and last - 1 < len(lines) and lines[last - 1].strip().startswith(tok.markup)
        blocks.append((tag, tok.content, not closed))
    family = PYTHON_TAGS if _family(language) == "python" else CUDA_TAGS
    pool = [b for b in blocks if b[0] in family] or [b for b in blocks if b[0] == ""]
    pool = [b for b in pool if b[1].strip()]
    if pool:
        pats = _markers(language, kernel_name)
        best = max(pool, key=lambda b: (sum(bool(p.search(b[1])) for p in pats), len(b[1])))
        code = best[1] if best[1].endswith("\n") else best[1] + "\n"
        return ExtractedCode(code, best[0], "fence", best[2], len(blocks))
    if blocks:
        tags = sorted({b[0] or "(untagged)" for b in blocks})
        raise ParseError(f"the LLM reply has code blocks only in {', '.join(tags)}, but {language} code was "
                         f"expected; the prompt asks for one ```{_family(language)} "
                         f"block, so the model may not follow instructions: try another model", excerpt)
    bare = _bare_code(reply, language)
    if bare is not None:
        return ExtractedCode(bare, "", "bare", False, 0)
    raise ParseError(f"the LLM reply contains no code (no fenced block and no bare {language} code that parses); "
                     f"reply starts with: {excerpt!r}", excerpt)
