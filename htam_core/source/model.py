"""Data model of the kernels in one source file.

Every later stage (profile, memory, transforms, LSP) reads kernels through these
dataclasses, never through tree-sitter nodes, so that the parser can change freely.

Conventions
-----------
* ``*_line`` fields are **1-based and inclusive** (as printed by ``htam kernels``).
* ``*_byte`` fields are **0-based offsets into the UTF-8 encoding of the whole file**
  (also for CUDA held in Python strings: offsets are already mapped back to the file).
* A kernel's range covers its whole definition, including decorators
  (``@triton.autotune``/``@triton.jit``) or the ``template <...>`` line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from htam_core.source.parse_problems import ParseProblem
from htam_core.types.language import traits

Language = Literal["cuda", "triton", "cuda-in-python"]


@dataclass(frozen=True)
class ByteSpan:
    """A half-open byte range ``[start, end)`` in the file's UTF-8 bytes."""

    start: int
    end: int


@dataclass
class Param:
    """One kernel parameter.

    Attributes:
        name: parameter name.
        type: the declared type as written (``"const float* __restrict__"``), or ``None`` in Python.
        is_pointer: CUDA pointer (``*``) parameter; Triton parameters whose name ends in ``_ptr`` or
            that are used as a ``tl.load``/``tl.store`` base.
        is_const: pointee is ``const`` (CUDA).
        is_restrict: declared ``__restrict__`` (CUDA).
        is_constexpr: annotated ``tl.constexpr`` (Triton).
        default: default value as source text, if any.
        span: bytes of the whole parameter declaration.
        written: the kernel stores through this pointer (CUDA assignment through it, Triton ``tl.store``).
    """

    name: str
    type: str | None = None
    is_pointer: bool = False
    is_const: bool = False
    is_restrict: bool = False
    is_constexpr: bool = False
    default: str | None = None
    span: ByteSpan | None = None
    written: bool = False


@dataclass
class LaunchSite:
    """A launch of a kernel: ``k<<<grid, block, smem, stream>>>(args)`` or ``k[grid](args, **kw)``.

    Attributes:
        line: 1-based line where the launch expression starts (``name<<<`` or ``name[grid](``).
        kernel_name: the launched kernel's unqualified name.
        config: launch configuration as source expressions. CUDA keys: ``grid``, ``block``,
            ``smem`` (``"0"`` when omitted), ``stream`` (``"default"`` when omitted) and
            ``template_args`` when present. Triton keys: ``grid`` plus every keyword argument
            (``BLOCK_SIZE``, ``num_warps``, ``num_stages``, ...).
        args: positional arguments as source text.
        span: bytes of the whole launch expression.
        config_spans: bytes of each config expression present in the source, for edits.
        qualified_name: the name as written (``ns::k<T, 256>``).
        resolved_config: the same keys with bare names resolved through their last definition
            before the launch (``grid`` -> ``dim3(CEIL_DIV(M, 16), CEIL_DIV(N, 16))``) and, in
            CUDA, compile-time constants replaced by their literal values; see ``source.resolve``.
        pointer_kernels: for a CUDA launch through a function pointer or a table of kernels
            (``kernel = &k; kernel<<<g, b>>>(...)``), every function the pointer may run (the site is then a
            launch site of each of those kernels, ``kernel_name`` naming the one it is attached to); ``()``
            for a launch that names its kernel.
        macro: the function-like macro the launch is written through (``LAUNCH`` for ``LAUNCH(k, n, a, b)`` with
            ``#define LAUNCH(k, n, ...) k<<<...>>>(__VA_ARGS__)``); its ``config_spans`` are the use's arguments that
            are the grid, block, shared bytes and stream when the ``#define`` passes each as one parameter, and
            none when it computes them (``k<<<(n + 255) / 256, 256>>>``); ``""`` for a launch written out.
        api: CUDA: the runtime function the launch is made through (``cudaLaunchKernel``, ``cudaLaunchKernelEx``,
            ``cudaLaunchCooperativeKernel``; :mod:`~htam_core.source.analysis.api_launch`); ``config_spans`` are then
            the expressions in its slots, ``args`` the kernel's arguments (``[]`` when they cannot be read).
        scope: CUDA: the namespace path the launch is written in (``"ops::rows"``; ``""`` at file scope).
        using: CUDA: the namespaces of the ``using namespace`` directives visible at the launch.
        arg_types: CUDA: each argument's declared type where it can be read (``"float*"``), else ``None``.
        ambiguous: the identities of the kernels this launch may run when the callee and argument types do not
            tell which (:mod:`~htam_core.source.analysis.kernel_names`); ``()`` for a launch tied to one kernel.
            No step changes an ambiguous launch.
    """

    line: int
    kernel_name: str
    config: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    span: ByteSpan | None = None
    config_spans: dict[str, ByteSpan] = field(default_factory=dict)
    qualified_name: str | None = None
    resolved_config: dict[str, str] = field(default_factory=dict)
    pointer_kernels: tuple[str, ...] = ()
    macro: str = ""
    scope: str = ""
    using: tuple[str, ...] = ()
    arg_types: tuple[str | None, ...] = ()
    api: str = ""
    ambiguous: tuple[str, ...] = ()


@dataclass
class Loop:
    """A loop inside a kernel.

    Attributes:
        line: 1-based line of the loop header.
        kind: ``"for"``, ``"while"``, ``"do"`` (CUDA) or ``"range"``/``"static_range"`` (Triton).
        trip_count: the constant trip count when it can be computed from literals, else ``None``.
        span: bytes of the whole loop statement.
        has_unroll_pragma: a ``#pragma unroll`` precedes it (CUDA).
    """

    line: int
    kind: str
    trip_count: int | None = None
    span: ByteSpan | None = None
    has_unroll_pragma: bool = False


@dataclass
class WorkSite:
    """One place in a kernel body that moves data or computes, for static traffic and FLOP estimates.

    Attributes:
        kind: ``"load"``/``"store"`` (a global access; atomics count as both), ``"flop"`` (arithmetic on
            data: ``+ - * /`` and math calls in expressions whose value is data, not an index), ``"dot"``
            (``tl.dot``: its FLOPs depend on the tile shapes).
        byte: file byte of the site (enclosing loops are the ones whose span holds it).
        amount: FLOPs at the site (``fmaf`` counts 2), or accesses (1).
        elem_bytes: bytes per element accessed (CUDA: the pointee type; ``None`` when not known, e.g.
            Triton pointers, whose dtype comes from the caller).
    """

    kind: str
    byte: int
    amount: int = 1
    elem_bytes: int | None = None


@dataclass
class SharedDecl:
    """A ``__shared__`` array (CUDA) declaration.

    Attributes:
        name: variable name.
        type: element type as written.
        dims: each dimension as source text (``["TILE", "TILE + 1"]``); ``[]`` for ``extern`` arrays.
        bytes: total size in bytes when every dimension is a literal, else ``None``.
        dynamic: declared ``extern __shared__``.
    """

    name: str
    type: str
    dims: list[str] = field(default_factory=list)
    bytes: int | None = None
    dynamic: bool = False


@dataclass
class KernelFeatures:
    """Syntactic features used for ranking (applicability predicates) and transforms.

    Counts are occurrences in the kernel body (helpers it calls are not followed).
    """

    loops: list[Loop] = field(default_factory=list)
    shared_memory: list[SharedDecl] = field(default_factory=list)
    syncthreads: int = 0
    atomics: list[str] = field(default_factory=list)
    vector_types: list[str] = field(default_factory=list)
    uses_dot: bool = False
    masks: int = 0
    reductions: list[str] = field(default_factory=list)
    loads: int = 0
    stores: int = 0
    uses_2d_index: bool = False
    uses_ldg: bool = False
    math_calls: list[str] = field(default_factory=list)
    has_grid_stride_loop: bool = False
    work: list[WorkSite] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (spans and work sites dropped)."""
        d = asdict(self)
        for loop in d["loops"]:
            loop.pop("span", None)
        d.pop("work", None)
        return d


@dataclass
class Kernel:
    """One GPU kernel: a CUDA ``__global__`` function or a Triton ``@triton.jit`` function.

    Attributes:
        name: unqualified name.
        language: ``"cuda"``, ``"triton"`` or ``"cuda-in-python"``.
        start_line, end_line: 1-based inclusive range of the whole definition.
        span: bytes of the whole definition.
        name_span: bytes of the name identifier.
        body_span: bytes of the body (``{...}`` in CUDA, the indented block in Triton).
        params: parameters in order.
        launch_sites: launches of this kernel found in the same file.
        features: syntactic features.
        attributes: language-specific facts: CUDA ``launch_bounds`` (source text or ``None``),
            ``extern_c``, ``template_params``, ``namespace``; Triton ``decorators``,
            ``autotune`` (``{"configs": [{"kwargs": {...}, "num_warps": ..., "num_stages": ...}],
            "key": [...]}``), ``heuristics`` (``{name: source}``), ``jit_kwargs``.
        incomplete: the definition is half-typed (error recovery kept it).
        parse_problem: for an incomplete kernel, where it first fails to parse
            (:class:`~htam_core.source.parse_problems.ParseProblem`), else ``None``.
        text: the kernel's source text.
        compiles: for an incomplete kernel, whether the compiler accepts the file (nvcc, or Python's compiler
            for Triton; :func:`htam_core.runtime.compiler.settle_incomplete`): ``True`` means the code is valid and
            htam could not read it; ``None`` when not asked or no compiler is there.
        qualified_name: Triton: the dotted path from the module to the launchable ``JITFunction``
            (``"Ops.scale"`` for a kernel defined in ``class Ops``, ``"add_kernel"`` for
            ``add_kernel = triton.jit(_add_kernel)``, else the name); ``None`` when no module
            attribute reaches it (a kernel defined inside a function). CUDA: the namespaces and classes around
            the kernel and its name (``"f64::scale"``, ``"S::k"``; anonymous namespaces left out); an overload of
            a name shared by kernels of other signatures also carries ``attributes["overload"]``, its signature
            (``"scale(double*, double, int)"``; :func:`~htam_core.source.analysis.kernel_names.identity`).
    """

    name: str
    language: Language
    start_line: int
    end_line: int
    span: ByteSpan
    name_span: ByteSpan
    body_span: ByteSpan
    params: list[Param] = field(default_factory=list)
    launch_sites: list[LaunchSite] = field(default_factory=list)
    features: KernelFeatures = field(default_factory=KernelFeatures)
    attributes: dict[str, Any] = field(default_factory=dict)
    incomplete: bool = False
    text: str = ""
    qualified_name: str | None = None
    parse_problem: ParseProblem | None = None
    compiles: bool | None = None

    def answers_to(self, name: str) -> bool:
        """Whether ``--kernel name`` means this kernel: its name, its ``qualified_name`` or, for an overload, its
        signature (spaces ignored)."""
        if name in (self.name, self.qualified_name):
            return True
        overload = self.attributes.get("overload")
        return bool(overload) and name.replace(" ", "") == str(overload).replace(" ", "")

    @property
    def identity(self) -> str:
        """How this kernel is told apart from the other kernels of its file: its overload signature
        (``attributes["overload"]``), else its qualified name, else its name."""
        return str(self.attributes.get("overload") or self.qualified_name or self.name)

    @property
    def key(self) -> str:
        """The name that selects this kernel in its file (what :meth:`SourceModel.selector` gives for it): its plain
        name, unless a CUDA kernel of another identity in the file shares it (``attributes["shared_name"]``, set with
        the overloads by :func:`~htam_core.source.analysis.kernel_names.mark_overloads`), then its
        :attr:`identity`. The editor keys its profiles, rankings and history by it, and the memory its
        fingerprints, so a kernel whose name is its own keeps the key it had before identities existed."""
        return self.identity if self.attributes.get("shared_name") else self.name

    @property
    def constexpr_params(self) -> list[str]:
        """Names of the ``tl.constexpr`` parameters (Triton), in order."""
        return [p.name for p in self.params if p.is_constexpr]

    def to_json(self) -> dict[str, Any]:
        """The ``htam kernels --json`` object for this kernel (``qualified_name`` only when it is
        not the name; ``incomplete: true`` only for a half-typed definition)."""
        extra: dict[str, Any] = {"qualified_name": self.qualified_name} if self.qualified_name not in (None, self.name) else {}
        if self.attributes.get("overload"):  # one of several kernels of this qualified name: its signature
            extra["overload"] = self.attributes["overload"]
        if self.incomplete and self.compiles:  # valid code htam could not read: not the user's to fix
            extra["unreadable"] = True
        elif self.incomplete:  # a half-typed definition: listed, but not profiled or transformed until it parses
            extra["incomplete"] = True
        return {
            "name": self.name,
            "language": self.language,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "params": [p.name for p in self.params],
            "constexpr_params": self.constexpr_params,
            # Launch configs as the manifest convention writes them: bare names followed back to their
            # definition before the launch (``grid`` -> ``dim3(CEIL_DIV(M, 16), CEIL_DIV(N, 16))``).
            "launch_sites": [
                {"line": s.line, "config": dict(s.resolved_config or s.config),
                 **({"through_pointer": s.qualified_name, "pointer_kernels": list(s.pointer_kernels)}
                    if s.pointer_kernels else {}),
                 **({"through_macro": s.macro} if s.macro else {}),
                 **({"through_api": s.api} if s.api else {}),
                 **({"ambiguous": list(s.ambiguous)} if s.ambiguous else {})}
                for s in self.launch_sites
            ],
            **extra,
        }


@dataclass
class DeviceFunction:
    """A ``__device__`` helper (CUDA) or a ``@triton.jit`` helper that is never launched."""

    name: str
    start_line: int
    end_line: int
    span: ByteSpan


@dataclass
class SourceModel:
    """All kernels of one file, as parsed.

    Attributes:
        path: file path, or ``None`` for in-memory text.
        file_language: ``"cuda"`` for ``.cu``/``.cuh``, ``"python"`` for ``.py``.
        text: the full text that was parsed.
        kernels: kernels in source order.
        device_functions: helpers that are not kernels.
        stale: the current text did not parse well enough and these kernels come from the
            last good parse of this document.
        errors: human-readable parse problems (``"12:5: missing `;`"``, from :attr:`problems`, then those
            of CUDA held in strings).
        problems: the file's parse problems in document order
            (:func:`~htam_core.source.parse_problems.tree_problems`).
    """

    path: str | None
    file_language: Literal["cuda", "python"]
    text: str
    kernels: list[Kernel] = field(default_factory=list)
    device_functions: list[DeviceFunction] = field(default_factory=list)
    stale: bool = False
    errors: list[str] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)

    def selector(self, kernel: Kernel) -> str:
        """The name that selects ``kernel`` through :meth:`kernel`: its plain name, unless a CUDA kernel of another
        identity shares it (``f32::scale`` and ``f64::scale``), then its :attr:`Kernel.identity`."""
        shared = {k.identity for k in self.kernels if k.name == kernel.name}
        return kernel.name if len(shared) <= 1 or traits(kernel.language).named_bindings else kernel.identity

    def kernel(self, name: str) -> Kernel:
        """Return the kernel ``name`` means: the one whose ``qualified_name`` (``"f64::scale"``, ``"Ops.scale"``, the
        alias of ``alias = triton.jit(fn)``) or overload signature is ``name``, else the one called ``name``.

        Raises:
            KeyError: no kernel of that name, or a name that several kernels of different identities share
                (``scale`` for ``f32::scale`` and ``f64::scale``); the message lists the names to pass.
        """
        exact = [k for k in self.kernels if k.answers_to(name) and k.name != name]
        exact += [k for k in self.kernels if k.name == name and k.qualified_name in (None, name)
                  and not k.attributes.get("overload")]
        for found in (exact, [k for k in self.kernels if k.name == name]):
            # Triton: bindings of one function (``a = triton.jit(f)``, ``b = triton.jit(f)``) answer to its name
            if len({k.identity for k in found}) == 1 or (found and traits(found[0].language).named_bindings):
                return found[0]
            if found:
                choices = ", ".join(dict.fromkeys(k.identity for k in found))
                raise KeyError(f"{name!r} names {len(found)} kernels in {self.path or '<text>'}: pass one of "
                               f"{choices}")
        names = ", ".join(k.identity for k in self.kernels)
        where = self.path or "<text>"
        helper = next((d for d in self.device_functions if d.name == name), None)
        if helper is not None:  # a __device__ function or a @triton.jit helper that kernels call
            raise KeyError(f"{name!r} in {where} is a device function (lines {helper.start_line}-{helper.end_line}), "
                           f"not a kernel: pass a kernel instead"
                           + (f" ({names})" if names else ""))
        if not names:
            raise KeyError(f"no kernel named {name!r} in {where}: the file has no kernel (a CUDA `__global__` "
                           "function or a Triton `@triton.jit` function); open the file that defines it")
        raise KeyError(f"no kernel named {name!r} in {where} (kernels: {names}); pass one of these names")
