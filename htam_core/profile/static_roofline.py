"""Static roofline estimate of one kernel: FLOPs, bytes and arithmetic intensity from the source.

Without a GPU there are no counters, but the source says how much a thread (CUDA) or a program (Triton)
moves and computes: the work sites of :class:`htam_core.source.model.KernelFeatures` (global loads and
stores, arithmetic on data, ``tl.dot``) weighted by the trip counts of the loops around them. Trip counts
come, in order, from the loop header's literals and macros (the source layer), ``tl.constexpr`` values (as
the static compile resolved them), launch-site arguments that are compile-time constants (``const int
N = 4096;`` in ``main()``, ``n_cols = 4096`` before a Triton launch), and the first size set of the
kernel's ``htam.toml`` harness (a size symbol with a parameter's name).

Bytes are the bytes the threads *issue* (each load and store counted where it executes; caches are not
modelled), so the arithmetic intensity is the L1-level intensity, a lower bound of the DRAM-level one.
Element sizes: the CUDA pointee type; Triton pointers count 4 bytes (fp32, the static compile's own
assumption for pointer parameters). A ``tl.dot`` on BLOCK_M x BLOCK_K and BLOCK_K x BLOCK_N tiles counts
``2 * BLOCK_M * BLOCK_N * BLOCK_K`` FLOPs and its loads the two tiles; with a dot, Triton per-element
counts are scaled to the BLOCK_M x BLOCK_N output tile.

When a trip count is unknown the intensity is a range: every loop runs at least once, so the intensity
lies between its value with the unknown loops run once and the intensity of the work inside each unknown
loop (a mediant of those ratios). The estimate names each unknown quantity. This model is our own; the
roofline itself is Williams, Waterman and Patterson, "Roofline" (CACM 2009).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.launch_values import launch_value
from htam_core.profile.static_cuda import eval_const_expr
from htam_core.profile.static_triton import python_constants
from htam_core.source.analysis import analyze, sym
from htam_core.source.analysis.device_queries import in_words
from htam_core.types.language import traits

__all__ = ["estimate_work", "harness_sizes", "harness_sizes_noted"]

#: Bytes per element of a Triton pointer (the static compile's ``*fp32`` assumption).
TRITON_ELEM_BYTES = 4
#: Bytes per element when a CUDA pointee type is not a known scalar or vector type.
DEFAULT_ELEM_BYTES = 4
_TILE_NAME = re.compile(r"^(?:BLOCK|TILE|B)_?(?:SIZE_)?([MNK])$", re.IGNORECASE)


def harness_sizes(path: str | None, kernel_name: str, model: Any = None) -> dict[str, int | float]:
    """The first size set of the kernel's ``htam.toml`` harness (or of the harness inferred from the file: its
    ``__main__`` block or tests, or a ``.cu`` program's ``main()``), or ``{}`` when there is none.

    Reads files and, for a Python file without an ``htam.toml`` table, may infer the harness by running the
    file's ``__main__`` block or tests in a child process (:func:`htam_core.harness.find_harness`; seconds, once:
    the recording is cached); a missing or broken harness gives ``{}`` (:func:`harness_sizes_noted` also says
    why a broken one was not used).
    """
    return harness_sizes_noted(path, kernel_name, model)[0]


def kernel_harness_noted(path: str | None, kernel_name: str, model: Any = None, *,
                         run_code: bool = True) -> tuple[Harness | None, str | None]:
    """The kernel's ``spec`` or ``inferred`` harness (``None`` for none, or another kind) and, when a harness
    exists but is broken (a malformed or binary ``htam.toml``), one line saying it was not used and why (the
    finder's message: key, file and line); ``None`` otherwise (no harness at all is not a warning: the static
    profile needs none). ``run_code=False``: only files are read, and a harness that would be inferred by
    running the file (its recording not cached yet) is none (see :func:`htam_core.harness.find_harness`)."""
    if not path:
        return None, None
    try:
        h = find_harness(path, kernel_name, model, run_code=run_code)
    except HarnessError as exc:
        if exc.missing:
            return None, None
        msg = " ".join(exc.message.split()) or "the harness finder gave no reason"
        return None, f"harness not used for the static estimate: {msg}"
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        return None, f"harness not used for the static estimate ({type(exc).__name__}: {exc})"
    return (h if h.traits.launches else None), None


def sizes_of(h: Harness | None) -> dict[str, int | float]:
    """The numeric size symbols of the first input set of harness ``h`` (``{}`` for none)."""
    if h is None or not h.sizes:
        return {}
    return {k: v for k, v in (h.sizes[0] or {}).items() if isinstance(v, int | float) and not isinstance(v, bool)}


def harness_sizes_noted(path: str | None, kernel_name: str, model: Any = None, *,
                        run_code: bool = True) -> tuple[dict[str, int | float], str | None]:
    """:func:`harness_sizes` and the note of :func:`kernel_harness_noted` (a broken harness, not used);
    ``run_code`` as there."""
    h, why = kernel_harness_noted(path, kernel_name, model, run_code=run_code)
    return sizes_of(h), why


class _Env:
    """Values of the names a kernel's loop headers use."""

    def __init__(self, model: Any, kernel: Any, constexprs: Mapping[str, Any], sizes: Mapping[str, Any],
                 kernel_args: Mapping[str, Any] | None = None) -> None:
        self.model, self.kernel = model, kernel
        self.values: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self.cuda_source: str | None = None
        self.offset = 0
        for name, v in constexprs.items():
            val = v.get("value") if isinstance(v, dict) else v
            if isinstance(val, int | float) and not isinstance(val, bool):
                self.values[name] = val
                self.sources[name] = "constexpr"
        site = kernel.launch_sites[0] if kernel.launch_sites else None
        lang = traits(kernel.language)
        if lang.tiles:
            self._triton_site(site, sizes, kernel_args or {})
        else:
            self.cuda_source = kernel.attributes.get("cuda_source") if lang.embedded else model.text
            self.offset = int(kernel.attributes.get("cuda_source_offset") or 0) if lang.embedded else 0
            self._cuda_site(site, sizes)
        #: why a launch builtin (``gridDim.x``) has no value: the launch's expression is not a constant
        self.unread: dict[str, str] = {}

    def _set(self, name: str, value: Any, source: str) -> None:
        if name not in self.values and isinstance(value, int | float) and not isinstance(value, bool):
            self.values[name], self.sources[name] = value, source

    def _triton_site(self, site: Any, sizes: Mapping[str, Any], kernel_args: Mapping[str, Any]) -> None:
        names = python_constants(self.model.text, site.span.start if site and site.span else None) if site else {}
        args = list(site.args) if site else []
        for i, p in enumerate(self.kernel.params):
            expr = (site.config.get(p.name) if site else None) or (args[i] if i < len(args) else None)
            if expr is not None:
                v = launch_value(expr, names)
                self._set(p.name, v, f"launch site line {site.line}")
            # what the harness's launcher passes to p (its `M, K = a.shape`, `a.shape[1]`, a keyword)
            self._set(p.name, kernel_args.get(p.name), "harness sizes")
            if expr is not None:
                v = launch_value(expr, {**sizes, **names})
                self._set(p.name, v, "harness sizes")
            self._set(p.name, sizes.get(p.name), "harness sizes")

    def _cuda_site(self, site: Any, sizes: Mapping[str, Any]) -> None:
        args = list(site.args) if site else []
        at = (site.span.start - self.offset) if site and site.span else None
        for i, p in enumerate(self.kernel.params):
            if i < len(args) and self.cuda_source is not None and not p.is_pointer:
                expr = args[i]
                v = eval_const_expr(self.cuda_source, expr, at) if at is not None and at >= 0 else None
                self._set(p.name, v, f"launch site line {site.line}: {p.name} = {v}")
                self._set(p.name, sizes.get(expr.strip()), "harness sizes")
            self._set(p.name, sizes.get(p.name), "harness sizes")


#: The launch builtins a kernel reads: the launch's shape (one value for every thread) and the thread's place in it.
_SHAPE_BUILTINS = (("blockDim", "block"), ("gridDim", "grid"))
_PLACE_BUILTINS = ("threadIdx", "blockIdx")


def launch_shape(env: _Env, facts: Any) -> None:
    """Give ``env`` the ``blockDim.x/y/z`` and ``gridDim.x/y/z`` of the kernel's first launch that the analysis
    read as constants (:class:`~htam_core.source.analysis.facts.LaunchFacts`: ``<<<128, DOT_THREADS>>>`` with
    ``#define DOT_THREADS 256`` gives ``gridDim.x`` 128 and ``blockDim.x`` 256; a component not written is 1),
    each with its source (``launch line 34: block DOT_THREADS = 256``); a component that is not a constant is
    named in ``env.unread`` with its expression, never guessed. No launch in the file: nothing is set."""
    if not facts.launches:
        return
    la = facts.launches[0]
    for builtin, what in _SHAPE_BUILTINS:
        dims = la.block if what == "block" else la.grid
        for i, d in enumerate("xyz"):
            name = f"{builtin}.{d}"
            c = dims[i] if i < len(dims) else None
            if c is None and dims:
                env._set(name, 1, f"launch line {la.line}: {what} has no {d} component")
            elif c is not None and c.value is not None:
                env._set(name, c.value, f"launch line {la.line}: {what} {c.text} = {c.value}")
            elif c is not None:
                env.unread[name] = f"the launch's {what} `{c.text}` (line {la.line}) is not a constant here"


def _per_thread(fact: Any, count: Any) -> tuple[Any, str | None]:
    """A block- or grid-stride loop's trip count for thread 0 of block 0 (``threadIdx``/``blockIdx`` set to 0):
    the start differs per thread by less than one step, so every thread runs that count or one fewer (about
    ``n / (grid * block)`` for a grid-stride loop). Other loops are left as they are (``None``: no note)."""
    if not getattr(fact, "strides_threads", False):
        return count, None
    place = {s: 0 for s in count.free_symbols if s.name.split(".")[0] in _PLACE_BUILTINS}
    if not place:
        return count, None
    return count.subs(place), "thread 0 of block 0 (every thread runs this count or one fewer)"


def c_integer_ops(expr: Any) -> Any:
    """``expr`` with each opaque C ``div(a, b)`` / ``mod(a, b)`` of the analysis (truncating ``/`` and ``%`` of
    integers, :func:`htam_core.source.analysis.facts.combine`) whose arguments became integers evaluated, so a
    count such as ``log2(div(blockDim.x, 2)) + 1`` has a value once ``blockDim.x`` has one."""
    import sympy

    def ready(e: Any) -> bool:
        return (getattr(e.func, "__name__", "") in ("div", "mod") and len(e.args) == 2
                and all(a.is_Integer for a in e.args) and e.args[1] != 0)

    def value(e: Any) -> Any:
        a, b = (int(x) for x in e.args)
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
        return sympy.Integer(q if e.func.__name__ == "div" else a - q * b)

    for _ in range(8):  # nested divisions fold from the inside out
        folded = expr.replace(ready, value)
        if folded == expr:
            break
        expr = folded
    return expr


def _why_unknown(missing: list[str], device: Mapping[str, str], env: _Env) -> str:
    """Why the names ``missing`` of a trip count have no value, one clause each (device quantities, launch
    builtins that are not constants, the thread's own indices, runtime arguments)."""
    parts = [f"{n}: {device[n]}" for n in missing if n in device]
    parts += [f"{n}: {env.unread[n]}" for n in missing if n in env.unread and n not in device]
    shape = [n for n in missing if n.split(".")[0] in dict(_SHAPE_BUILTINS) and n not in device
             and n not in env.unread]
    if shape:
        parts.append(f"{', '.join(shape)}: no launch of the kernel in this file gives its value")
    place = [n for n in missing if n.split(".")[0] in _PLACE_BUILTINS]
    if place:
        parts.append(f"{', '.join(place)}: the count differs from thread to thread")
    plain = [n for n in missing if n not in device and n not in env.unread and n not in shape and n not in place]
    if plain or not parts:
        parts.insert(0, f"{', '.join(plain) or 'its bounds'}: a runtime argument with no constant launch-site or "
                        "harness value")
    return "; ".join(parts)


def _device_builtins(facts: Any) -> dict[str, str]:
    """``{"gridDim.x": "the grid from the device's SM count (read at run time)"}`` for each grid component of the
    kernel's first launch that the host reads from its device (:attr:`~htam_core.source.analysis.facts.Dim.device`),
    and ``blockDim.x``: "the block from the device's occupancy" for a block that
    ``cudaOccupancyMaxPotentialBlockSize`` picks: a number for it here would be a guess."""
    if not facts.launches:
        return {}
    la = facts.launches[0]
    return {f"{builtin}.{d}": f"the {what} from {in_words(c.device)} (read at run time)"
            for builtin, what, dims in (("gridDim", "grid", la.grid), ("blockDim", "block", la.block))
            for d, c in zip("xyz", dims, strict=False) if c.device}


def _loop_trips(model: Any, kernel: Any, env: _Env) -> tuple[list[dict[str, Any]], list[str]]:
    """Trip count of each loop: the symbolic count of the kernel's facts (``ceil((N - 0) / BLOCK)``) with the
    launch-site, constexpr and harness values substituted."""
    import sympy

    facts = analyze(model, kernel)
    launch_shape(env, facts)
    by_line = {lp.line: lp for lp in facts.loops}
    device = _device_builtins(facts)
    loops, unknown = [], []
    for lp in kernel.features.loops:
        info: dict[str, Any] = {"line": lp.line, "trip_count": lp.trip_count, "source": "constant"}
        fact = by_line.get(lp.line)
        if lp.trip_count is None:
            info["source"] = None
            if fact is not None and fact.trip_count is not None:
                count, note = _per_thread(fact, fact.trip_count)
                names = sorted(s.name for s in count.free_symbols)
                missing = [n for n in names if n not in env.values]
                value = c_integer_ops(count.subs({sym(n): env.values[n] for n in names if n in env.values}))
                if not missing and value.is_number and value.is_finite:
                    info["trip_count"] = max(0, int(sympy.ceiling(value)))
                    info["source"] = ", ".join(sorted({env.sources.get(n, "constant") for n in names})
                                               + ([note] if note else [])) or "constant"
                else:
                    unknown.append(f"trip count of the loop at line {lp.line} ({_why_unknown(missing, device, env)})")
            elif fact is not None and fact.bound is not None:
                unknown.append(f"trip count of the loop at line {lp.line} (its bounds: not a counted loop with no "
                               "constant launch-site or harness value)")
            else:
                unknown.append(f"trip count of the {lp.kind} loop at line {lp.line} (not a counted loop)")
        loops.append(info)
    return loops, unknown


def _dot_tiles(env: _Env, triton: bool, unknown: list[str], assumptions: list[str]
               ) -> tuple[float, float, float] | None:
    """The ``(M, N, K)`` tiles of a Triton ``tl.dot`` from the BLOCK_M/N/K constexprs (the assumption noted), or
    ``None`` with the unknown quantity noted (CUDA mma fragments are not modelled)."""
    if not triton:
        unknown.append("tensor-core mma fragments (not modelled)")
        return None
    found = {m.group(1).upper(): env.values[n] for n in env.values
             if (m := _TILE_NAME.match(n)) and env.sources.get(n) == "constexpr"}
    if not all(k in found for k in "MNK"):
        unknown.append("tile sizes of tl.dot (no BLOCK_M, BLOCK_N and BLOCK_K constexpr values)")
        return None
    m, n, k = found["M"], found["N"], found["K"]
    assumptions.append(f"tl.dot tiles {m:g}x{k:g} @ {k:g}x{n:g} (BLOCK_M/N/K constexprs)")
    return m, n, k


def estimate_work(model: Any, kernel: Any, *, constexprs: Mapping[str, Any] | None = None,
                  sizes: Mapping[str, Any] | None = None,
                  kernel_args: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """FLOPs, issued bytes and arithmetic intensity of one thread (CUDA) or program (Triton).

    Args:
        model: the :class:`~htam_core.source.model.SourceModel`.
        kernel: one of its kernels.
        constexprs: Triton constexpr values (``{name: value}`` or the static profile's
            ``{name: {"value", "source"}}``).
        sizes: harness size symbols (``{"N": 4096}``); a scalar parameter of the same name takes the value.
        kernel_args: (Triton) the kernel's scalar parameters as the harness's launcher passes them over the same
            size set (:func:`htam_core.harness.launch_values.recorded_kernel_args`): they win over a symbol of the
            same name, which the launcher may use for another dimension.

    Returns:
        ``None`` when the kernel has no global access (nothing to estimate); else ``{"unit", "flops",
        "bytes", "intensity", "intensity_range", "loops", "unknown", "assumptions"}``: ``flops``/``bytes``/
        ``intensity`` are ``None`` when some trip count is unknown, ``intensity_range`` is ``[low, high]``
        (FLOP/byte; ``high`` is ``None`` when unbounded), ``unknown`` lists each unknown quantity in words.
    """
    f = kernel.features
    if not any(w.kind in ("load", "store") for w in f.work):
        return None
    env = _Env(model, kernel, constexprs or {}, sizes or {}, kernel_args or {})
    loops, unknown = _loop_trips(model, kernel, env)
    assumptions: list[str] = ["bytes issued by the threads; caches not modelled (an L1-level intensity)"]
    triton = traits(kernel.language).tiles
    # a Triton program's elementwise work is counted per element of its block (one lane, like a CUDA thread);
    # with tl.dot tiles known, the counts are the whole program's (its M x N outputs and operand tiles)
    unit = "per element of a program's block" if triton else "per thread"
    tile = 1.0
    dot_tiles = _dot_tiles(env, triton, unknown, assumptions) if any(w.kind == "dot" for w in f.work) else None
    if dot_tiles is not None:
        tile, unit = dot_tiles[0] * dot_tiles[1], "per program"
    if triton:
        assumptions.append(f"Triton pointers count {TRITON_ELEM_BYTES} bytes per element (fp32, as compiled)")
    if unknown and any(u.startswith(("tensor", "tile")) for u in unknown):
        return {"unit": unit, "flops": None, "bytes": None, "intensity": None, "intensity_range": None,
                "loops": loops, "unknown": unknown, "assumptions": assumptions}
    spans = [(lp.span, info) for lp, info in zip(f.loops, loops, strict=True) if lp.span is not None]
    groups: dict[tuple[int, ...], list[float]] = {}  # unknown loops -> [flops, bytes] at the known weights
    dot_groups = {tuple(i for i, (sp, _) in enumerate(spans) if sp.start <= w.byte < sp.end)
                  for w in f.work if w.kind == "dot"}
    for w in f.work:
        inside = tuple(i for i, (sp, _) in enumerate(spans) if sp.start <= w.byte < sp.end)
        weight = 1.0
        for i in inside:
            t = spans[i][1]["trip_count"]
            weight *= t if t is not None else 1.0
        key = tuple(i for i in inside if spans[i][1]["trip_count"] is None)
        acc = groups.setdefault(key, [0.0, 0.0])
        elem = w.elem_bytes or (TRITON_ELEM_BYTES if triton else DEFAULT_ELEM_BYTES)
        if w.kind == "dot" and dot_tiles is not None:
            m, n, k = dot_tiles
            acc[0] += weight * 2 * m * n * k
        elif w.kind == "flop":
            acc[0] += weight * w.amount * tile
        elif w.kind in ("load", "store"):
            if dot_tiles is not None and inside in dot_groups and w.kind == "load":
                m, n, k = dot_tiles
                acc[1] += weight * elem * (m * k + k * n) / 2  # the two operand tiles, one per load
            else:
                acc[1] += weight * elem * tile
    base = [sum(v[0] for v in groups.values()), sum(v[1] for v in groups.values())]  # unknown loops run once
    ratios = [base[0] / base[1] if base[1] else math.inf]
    for key, (fl, by) in groups.items():
        if key and (fl or by):
            ratios.append(fl / by if by else math.inf)
    exact = not any(key for key in groups if any(groups[key]))
    out: dict[str, Any] = {"unit": unit, "loops": loops, "unknown": unknown, "assumptions": assumptions,
                           "flops": base[0] if exact else None, "bytes": base[1] if exact else None}
    out["intensity"] = ratios[0] if exact and math.isfinite(ratios[0]) else None
    hi = max(ratios)
    out["intensity_range"] = [min(ratios), hi if math.isfinite(hi) else None]  # None: unbounded (JSON-safe)
    return out
