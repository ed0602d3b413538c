"""``triton.autotune``: wrap a kernel in ``@triton.autotune`` with a config grid keyed on its size
arguments, or widen an existing literal config list.

The tuned keyword arguments are removed from the launch and a grid that used the block size becomes
``lambda meta: ...`` over ``meta["BLOCK"]`` (a ``grid = ...`` variable read only by the launch is rewritten in
place); the local constants the launch no longer reads (``BLOCK_SIZE = 64``) are removed, so no dead code is
left, and docstrings or comments that describe the old setting get a note of the change
(:func:`htam_core.transforms._triton.stale_text_notes`). Triton's interpreter cannot benchmark configs (no GPU), so
under ``TRITON_INTERPRET=1`` the generated list keeps only its first config, the original setting
(the same idiom as the corpus's ``matmul_autotune.py``). Idea source: Triton docs, ``triton.autotune``.
"""

from __future__ import annotations

from htam_core.source.analysis.constants import python_int
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms import _ts
from htam_core.transforms._triton import (
    TritonTransform,
    TritonUnit,
    is_block_param,
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
    for c in _ts.of_type(unit.body, "comparison_operator"):
        compared |= {unit.t(n) for n in _ts.of_type(c, "identifier")}
    for c in unit.calls(unit.body, "range") + unit.calls(unit.body, "tl.cdiv"):
        compared |= {unit.t(n) for n in _ts.of_type(c, "identifier")}
    keys = [p for p in plain if p in compared]
    return keys or [p for p in plain if not p.startswith("stride")]


def _import_os_edit(unit: TritonUnit) -> list[TextEdit]:
    for imp in _ts.of_type(unit.root, "import_statement"):
        if any(unit.t(n) == "os" for n in imp.named_children):
            return []
    first = next((c for c in unit.root.named_children if c.type in ("import_statement", "import_from_statement")), None)
    pos = first.start_byte if first is not None else 0
    return [unit.insert(pos, "import os\n")]


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
        if "autotune" in kernel.attributes:
            return self._widen(unit)
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
            if not is_block_param(p) or p not in la0.kwargs or not masked:
                continue
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
        stage_txt = f", num_stages={stages}" if stages is not None else ""
        lines = [f"{name} = ["]
        for kw, w in uniq:
            d = "{" + ", ".join(f'"{k}": {v}' for k, v in kw.items()) + "}"
            lines.append(f"    triton.Config({d}, num_warps={w}{stage_txt}),")
        lines += [
            "]",
            'if os.environ.get("TRITON_INTERPRET") == "1":',
            "    # the interpreter has no GPU to benchmark configs on: keep the original setting",
            f"    {name} = {name}[:1]",
            "",
            "",
            f'@triton.autotune(configs={name}, key=[{", ".join(repr(k).replace(chr(39), chr(34)) for k in keys)}])',
            "",
        ]
        top_start = _ts.line_start(unit.src, unit.top.start_byte)
        edits = _import_os_edit(unit)
        edits.append(unit.insert(top_start, "\n".join(lines[:-2]) + "\n" + lines[-2] + "\n"))
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
                nodes = [n for n in _ts.of_type(grid, "identifier") if s.local and unit.t(n) == s.local]
                repl += [(n, p) for n in nodes + grid_lits[p]]
            for n, p in sorted(repl, key=lambda x: -x[0].start_byte):
                text[n.start_byte - grid.start_byte : n.end_byte - grid.start_byte] = f'meta["{p}"]'.encode()
            lam = f"lambda meta: {text.decode()}"
            var = unit.t(la0.grid) if la0.grid.type == "identifier" and grid is not la0.grid else None
            if var and la0.host is not None and len(reads_of(unit, la0.host, var)) == 1:
                edits.append(unit.replace(grid, lam))  # grid = lambda meta: ...; the launch keeps kernel[grid]
            else:
                edits.append(unit.replace(la0.grid, lam))
        else:
            for p in tuned:
                s = block_setting(unit, la0, p)
                locals_ += [s.local] if not isinstance(s, str) and s.local else []
        # the tuned locals (BLOCK_SIZE = 64) and a grid variable only they fed are now dead: remove them
        edits += orphan_removals(unit, la0.host, locals_ + ([unit.t(la0.grid)] if la0.grid.type == "identifier"
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

    def _widen(self, unit: TritonUnit) -> list[Candidate] | NotApplicable:
        """Add configs to an existing literal ``configs=[...]`` list (double/halve each block, more warps)."""
        at = unit.kernel.attributes.get("autotune") or {}
        deco = next((d for d in _ts.of_type(unit.top, "decorator") if "autotune" in unit.t(d)), None)
        if deco is None:
            return self.not_applicable("the @triton.autotune decorator was not found")
        call = next(iter(_ts.of_type(deco, "call")), None)
        kw = unit.kwarg(call, "configs") if call is not None else None
        lst = kw.child_by_field_name("value") if kw is not None else None
        if lst is None or lst.type != "list":
            expr = at.get("configs_expr") or (unit.t(lst) if lst is not None else "?")
            return self.not_applicable(
                f"the autotune configs come from {expr}; only a literal configs=[...] list can be widened"
            )
        existing = [c for c in lst.named_children if c.type == "call"]
        if not existing:
            return self.not_applicable("the autotune config list is empty")
        new_cfgs: list[str] = []
        texts = {unit.t(c).replace(" ", "") for c in existing}
        for c in existing:
            args = c.child_by_field_name("arguments").named_children
            if not args or args[0].type != "dictionary":
                continue
            pairs = [(unit.t(p.child_by_field_name("key")), unit.t(p.child_by_field_name("value")))
                     for p in args[0].named_children if p.type == "pair"]
            rest = [unit.t(a) for a in args[1:]]
            for factor in (2,):
                d = ", ".join(
                    f"{k}: {int(v) * factor}" if python_int(v) and is_block_param(k.strip("\"'")) else f"{k}: {v}"
                    for k, v in pairs
                )
                cand = f"triton.Config({{{d}}}{''.join(', ' + r for r in rest)})"
                if cand.replace(" ", "") not in texts:
                    texts.add(cand.replace(" ", ""))
                    new_cfgs.append(cand)
        if not new_cfgs:
            return self.not_applicable("no wider config to add")
        last = existing[-1]
        indent = _ts.indent_of(unit.src, last.start_byte)
        sep = ",\n" + indent if _ts.only_space_before(unit.src, last.start_byte) else ", "
        edit = unit.insert(last.end_byte, sep + sep.join(new_cfgs))
        return [
            self.candidate(
                unit.model,
                f"widen {unit.kernel.name}'s autotune grid with {len(new_cfgs)} config(s) of doubled block sizes",
                {"added": new_cfgs},
                [edit],
            )
        ]
