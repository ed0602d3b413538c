"""``triton.autotune``: wrap a kernel in ``@triton.autotune`` with a small config grid keyed on its size
arguments and an ``early_config_prune`` that drops the configs the kernel's facts make pointless.

The tuned keyword arguments are removed from the launch and a grid that used the block size becomes
``lambda meta: ...`` over ``meta["BLOCK"]`` (a ``grid = ...`` variable read only by the launch is rewritten in
place); the local constants the launch no longer reads (``BLOCK_SIZE = 64``) are removed, so no dead code is
left, and docstrings or comments that describe the old setting get a note of the change
(:func:`htam_core.transforms._triton.stale_text_notes`).

The prune function (``prune_configs_by={"early_config_prune": ...}``) reads the analysis layer's mask bounds
(:attr:`~htam_core.source.analysis.TritonFacts.bounds`: ``cols < n_cols`` with ``cols`` from
``tl.arange(0, BLOCK)``) and drops, per call, a config whose ``BLOCK`` exceeds the next power of two of its
bound (lanes that are always masked off) or whose ``num_warps * 32`` exceeds the tile's elements (idle
threads); it never returns an empty list. Triton's interpreter cannot benchmark configs (no GPU), so under
``TRITON_INTERPRET=1`` it keeps the first surviving config, the original setting when it survives. A kernel
already under ``@triton.autotune`` is refused: its config list is the user's. Idea source: Triton docs,
``triton.autotune`` (``prune_configs_by``).
"""

from __future__ import annotations

import textwrap

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import python_int
from htam_core.source.analysis.triton import launch_argument
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._triton import (
    TritonTransform,
    TritonUnit,
    orphan_removals,
    reads_of,
    remove_kwarg,
    stale_text_notes,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.transforms.triton_launch import (
    TRITON_LANGS,
    block_setting,
    grid_follows,
    loops_over_block,
    old_value_words,
    unmasked_accesses,
)
from htam_core.types.profile import Profile

BLOCK_GRID = (128, 256, 512, 1024, 2048, 4096)


def size_keys(unit: TritonUnit) -> list[str]:
    """Size arguments for the autotune key: non-pointer, non-constexpr params compared in the kernel."""
    plain = [p.name for p in unit.kernel.params if not p.is_pointer and not p.is_constexpr]
    compared = set()
    for c in syn.comparison_operators(unit.body):
        compared |= {unit.t(n) for n in syn.identifiers(c)}
    for c in unit.calls(unit.body, "range") + unit.calls(unit.body, "tl.cdiv"):
        compared |= {unit.t(n) for n in syn.identifiers(c)}
    keys = [p for p in plain if p in compared]
    return keys or [p for p in plain if not p.startswith("stride")]


def prune_bounds(unit: TritonUnit) -> list[tuple[str, str]]:
    """``(BLOCK param, size param)`` pairs from the analysis layer's mask bounds: the tile of ``BLOCK`` covers a
    dimension of ``size`` elements (``cols < n_cols`` with ``cols = off + tl.arange(0, BLOCK_N)``)."""
    facts = unit.facts.triton
    blocks = {p for p in unit.kernel.constexpr_params if unit.is_block_param(p)}
    sizes = {p.name for p in unit.kernel.params if not p.is_constexpr and not p.is_pointer}
    out: list[tuple[str, str]] = []
    for b in facts.bounds if facts is not None else ():
        if b.block in blocks and b.bound in sizes and (b.block, b.bound) not in out:
            out.append((b.block, b.bound))
    return out


def prune_function(unit: TritonUnit, name: str) -> list[str]:
    """Source lines of the ``early_config_prune`` function ``name`` for the kernel (see the module docstring).

    It reads every ``BLOCK_*`` constexpr from the config, else from the launch arguments (a block passed at
    the launch, such as ``BLOCK_SIZE=triton.next_power_of_2(n)``), and the size arguments of
    :func:`prune_bounds` from the launch arguments.
    """
    blocks = tuple(p for p in unit.kernel.constexpr_params if unit.is_block_param(p))
    bounds = tuple(prune_bounds(unit))
    why = []
    if bounds:
        why.append(" or ".join(f"{b} above the next power of two of {n}" for b, n in bounds)
                   + " (lanes that are always masked off)")
    if blocks:
        why.append("more warps than 32-element groups in the tile")
    doc = ("Drop the configs this kernel's facts make pointless: " + ", or ".join(why) + "." if why
           else "Keep every config (no block size to compare with).")
    doc_lines = textwrap.wrap(doc + " Under TRITON_INTERPRET=1 keep the first survivor (no GPU to benchmark on).",
                              100, initial_indent='    """', subsequent_indent="    ")
    return [
        f"def {name}(configs, named_args, **kwargs):",
        *doc_lines[:-1], doc_lines[-1] + '"""',
        "    args = {**named_args, **kwargs}",
        "    kept = []",
        "    for cfg in configs:",
        f"        blocks = {{k: cfg.kwargs.get(k, args.get(k)) for k in {blocks!r}}}",
        "        if any(isinstance(blocks[b], int) and isinstance(args.get(n), int)",
        f"               and blocks[b] > max(16, triton.next_power_of_2(args[n])) for b, n in {bounds!r}):",
        "            continue",
        "        if blocks and all(isinstance(v, int) for v in blocks.values()) \\",
        "                and cfg.num_warps * 32 > math.prod(blocks.values()):",
        "            continue",
        "        kept.append(cfg)",
        "    if not kept:  # every config is too large for this call: keep the smallest tile",
        "        kept = [min(configs, key=lambda c: (math.prod(v for v in c.kwargs.values() if isinstance(v, int)),",
        "                                            c.num_warps))]",
        '    if os.environ.get("TRITON_INTERPRET") == "1":',
        "        return kept[:1]",
        "    return kept",
    ]


def _import_edits(unit: TritonUnit, modules: tuple[str, ...] = ("math", "os")) -> list[TextEdit]:
    """Edits adding ``import m`` for each of ``modules`` the file does not import yet (before its first import)."""
    have = {unit.t(n) for imp in syn.import_statements(unit.root) for n in imp.named_children}
    missing = [m for m in modules if m not in have]
    if not missing:
        return []
    first = next((c for c in unit.root.named_children if syn.is_import(c)), None)
    pos = first.start_byte if first is not None else 0
    return [unit.insert(pos, "".join(f"import {m}\n" for m in missing))]


@register
class TritonAutotune(TritonTransform):
    """Wrap the kernel in ``@triton.autotune`` (or widen a literal config list)."""

    id = "triton.autotune"

    kind = "launch"
    languages = TRITON_LANGS
    summary = "@triton.autotune over block sizes and num_warps keyed on the size arguments"

    def propose_unit(
        self, unit: TritonUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: the config grid, the decorator, and the launch rewritten to match."""
        if unit.facts.triton is not None and unit.facts.triton.autotuned:
            at = kernel.attributes.get("autotune") or {}
            src = f" (configs={at['configs_expr']})" if isinstance(at, dict) and at.get("configs_expr") else ""
            return self.not_applicable(f"{kernel.name} is already under @triton.autotune{src}; edit its config list "
                                       "instead")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file")
        keys = size_keys(unit)
        if not keys:
            return self.not_applicable(f"{kernel.name} has no size argument to key the tuning on")
        la0 = unit.launches[0]
        tuned: dict[str, int] = {}
        grid_lits: dict[str, list] = {}
        masked = not unmasked_accesses(unit)
        for p in kernel.constexpr_params:
            if not unit.is_block_param(p) or not masked:
                continue
            if p not in la0.kwargs and launch_argument(la0.call, kernel, p, unit.src) is not None:
                continue  # passed by position: a config could not override it
            s = block_setting(unit, la0, p)
            if isinstance(s, str):
                continue
            follows = grid_follows(unit, la0, s)
            if isinstance(follows, str):
                continue
            ok, lits = follows
            if not ok and not loops_over_block(unit, p):
                continue
            claimed = {n.start_byte for ls in grid_lits.values() for n in ls}
            if any(n.start_byte in claimed for n in lits) or (
                lits and any(v == s.value for v in tuned.values())
            ):
                return self.not_applicable(f"the grid's literal {s.value} could belong to several block parameters")
            tuned[p] = s.value
            grid_lits[p] = lits
        if len(unit.launches) != 1:
            return self.not_applicable(f"{kernel.name} is launched from {len(unit.launches)} places")
        w_node = la0.kwargs.get("num_warps")
        warps = python_int(unit.t(w_node.child_by_field_name("value"))) if w_node is not None else 4
        s_node = la0.kwargs.get("num_stages")
        stages = python_int(unit.t(s_node.child_by_field_name("value"))) if s_node is not None else None
        if warps is None or (s_node is not None and stages is None):
            return self.not_applicable("num_warps/num_stages at the launch are computed; cannot seed the configs")
        configs: list[tuple[dict[str, int], int]] = [(dict(tuned), warps)]
        if len(tuned) == 1:
            (p, v0), = tuned.items()
            for v in BLOCK_GRID:
                for w in sorted({4, 8} if v >= 1024 else {2, 4}):
                    configs.append(({p: v}, w))
        elif tuned:
            for w in (4, 8):
                configs.append(({k: v * 2 for k, v in tuned.items()}, w))
                configs.append(({k: max(16, v // 2) for k, v in tuned.items()}, w))
        else:
            configs += [({}, w) for w in (1, 2, 4, 8, 16)]
        seen, uniq = set(), []
        for kw, w in configs:
            key = (tuple(sorted(kw.items())), w)
            if key not in seen:
                seen.add(key)
                uniq.append((kw, w))
        name = f"_HTAM_{kernel.name.upper()}_CONFIGS"
        prune = f"_htam_prune_{kernel.name}"
        stage_txt = f", num_stages={stages}" if stages is not None else ""
        lines = [f"{name} = ["]
        for kw, w in uniq:
            d = "{" + ", ".join(f'"{k}": {v}' for k, v in kw.items()) + "}"
            lines.append(f"    triton.Config({d}, num_warps={w}{stage_txt}),")
        lines += ["]", "", "", *prune_function(unit, prune), "", ""]
        key_txt = ", ".join(repr(k).replace(chr(39), chr(34)) for k in keys)
        lines.append(f'@triton.autotune(configs={name}, key=[{key_txt}],\n'
                     f'                 prune_configs_by={{"early_config_prune": {prune}}})')
        top_start = syn.line_start(unit.src, unit.top.start_byte)
        edits = _import_edits(unit)
        edits.append(unit.insert(top_start, "\n".join(lines) + "\n"))
        # launch: drop the tuned kwargs, make the grid read meta[...]
        for p in list(tuned) + ["num_warps", "num_stages"]:
            if p in la0.kwargs:
                edits.append(remove_kwarg(unit, la0.kwargs[p]))
        locals_: list[str] = []
        if tuned and not unit.grid_uses_meta(la0):
            grid = unit.grid_expr(la0)
            text = bytearray(unit.src[grid.start_byte : grid.end_byte])
            repl = []
            for p in tuned:
                s = block_setting(unit, la0, p)
                assert not isinstance(s, str)
                locals_ += [s.local] if s.local else []
                nodes = [n for n in syn.identifiers(grid) if s.local and unit.t(n) == s.local]
                repl += [(n, p) for n in nodes + grid_lits[p]]
            for n, p in sorted(repl, key=lambda x: -x[0].start_byte):
                text[n.start_byte - grid.start_byte : n.end_byte - grid.start_byte] = f'meta["{p}"]'.encode()
            if repl:  # a grid that does not read the block (the kernel loops over it) stays as written
                lam = f"lambda meta: {text.decode()}"
                var = unit.t(la0.grid) if syn.is_identifier(la0.grid) and grid is not la0.grid else None
                if var and la0.host is not None and len(reads_of(unit, la0.host, var)) == 1:
                    edits.append(unit.replace(grid, lam))  # grid = lambda meta: ...; the launch keeps kernel[grid]
                else:
                    edits.append(unit.replace(la0.grid, lam))
        else:
            for p in tuned:
                s = block_setting(unit, la0, p)
                locals_ += [s.local] if not isinstance(s, str) and s.local else []
        # the tuned locals (BLOCK_SIZE = 64) and a grid variable only they fed are now dead: remove them
        edits += orphan_removals(unit, la0.host, locals_ + ([unit.t(la0.grid)] if syn.is_identifier(la0.grid)
                                                            else []), edits)
        tuned_txt = ", ".join(tuned) or "num_warps"
        was = ", ".join([f"{p}={v}" for p, v in tuned.items()] + [f"num_warps={warps}"])
        words = [w for p, v in tuned.items() for w in old_value_words(p, v)] + old_value_words("num_warps", warps)
        knobs = ", ".join([*tuned, "num_warps"])
        edits += stale_text_notes(unit, f"{knobs} chosen by @triton.autotune (was {was})", words, edits)
        return [
            self.candidate(
                model,
                f"autotune {kernel.name} over {tuned_txt} ({len(uniq)} configs) keyed on {', '.join(keys)}",
                {"configs": [{"kwargs": kw, "num_warps": w} for kw, w in uniq], "key": keys},
                edits,
            )
        ]
