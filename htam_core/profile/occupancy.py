"""Theoretical occupancy of a kernel launch, computed the way CUDA's occupancy calculator does.

The algorithm mirrors ``cudaOccMaxActiveBlocksPerMultiprocessor`` in ``cuda_occupancy.h`` (shipped
with the CUDA toolkit, ``$CUDA_HOME/include/cuda_occupancy.h``) for the default device state (no
shared-memory carveout preference, partitioned global caching off): the resident blocks per SM
are the minimum of four limits,

* **warps**: ``max_warps_per_sm // ceil(block / 32)``;
* **blocks**: the hardware limit of resident blocks per SM;
* **registers**: registers are allocated per warp in units of 256
  (``ceil(regs * 32 / 256) * 256``) inside each of the 4 SM sub-partitions, so
  ``(65536 / 4 // regs_per_warp) * 4 // warps_per_block``; a block whose registers exceed the
  per-block limit (with warps rounded up to the 4 sub-partitions) cannot launch;
* **shared**: ``(static + dynamic + 1 KiB reserved per block)`` rounded up to 128 bytes, divided
  into the SM's shared memory (the maximum carveout). A block may hold at most 48 KB of static plus dynamic
  shared memory unless the host opts the kernel in to more (``cudaFuncSetAttribute(kernel,
  cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)``), and then up to the device's opt-in maximum (227 KB on
  sm_90); a launch over the limit that applies fails (CUDA C++ Programming Guide, "Shared Memory" and the
  "Technical Specifications per Compute Capability" table).

Per-SM limits are those of the CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability" table (compute capability 8.0, 8.6, 8.9, 9.0), and the constants of
``cuda_occupancy.h`` (allocation granularities, sub-partitions, blocks per SM).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM resource limits of one compute capability.

    Attributes:
        name: ``"sm_90"``.
        max_warps_per_sm: resident warps per SM (max threads per SM / 32).
        max_blocks_per_sm: resident blocks per SM.
        regs_per_sm: 32-bit registers per SM.
        regs_per_block: registers one block may use.
        max_regs_per_thread: registers one thread may use.
        reg_alloc_unit: registers are allocated per warp in units of this many.
        sub_partitions: SM sub-partitions (register files).
        smem_per_sm: shared memory per SM at the largest carveout, bytes.
        smem_per_block_optin: the most shared memory one block can opt in to, bytes.
        smem_per_block_default: the most shared memory (static plus dynamic) one block gets without the
            opt-in, bytes (48 KB on every target listed).
        smem_reserved_per_block: shared memory the driver reserves per block, bytes.
        smem_alloc_unit: shared memory allocation granularity, bytes.
        max_threads_per_block: threads per block.
    """

    name: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256
    sub_partitions: int = 4
    smem_per_sm: int = 0
    smem_per_block_optin: int = 0
    smem_per_block_default: int = 48 * 1024
    smem_reserved_per_block: int = 1024
    smem_alloc_unit: int = 128
    max_threads_per_block: int = 1024


#: Limits per target. Sources: CUDA C++ Programming Guide, "Technical Specifications per Compute
#: Capability" (threads/warps/blocks per SM, shared memory per SM and per block) and
#: ``cuda_occupancy.h`` (granularities, sub-partitions, reserved shared memory).
ARCH_LIMITS: dict[str, ArchLimits] = {
    # A100: 2048 threads, 32 blocks, 164 KB shared per SM, 163 KB per block (opt-in).
    "sm_80": ArchLimits("sm_80", max_warps_per_sm=64, max_blocks_per_sm=32,
                        smem_per_sm=164 * 1024, smem_per_block_optin=163 * 1024),
    # GA10x: 1536 threads, 16 blocks, 100 KB shared per SM, 99 KB per block.
    "sm_86": ArchLimits("sm_86", max_warps_per_sm=48, max_blocks_per_sm=16,
                        smem_per_sm=100 * 1024, smem_per_block_optin=99 * 1024),
    # AD10x: 1536 threads, 24 blocks, 100 KB shared per SM, 99 KB per block.
    "sm_89": ArchLimits("sm_89", max_warps_per_sm=48, max_blocks_per_sm=24,
                        smem_per_sm=100 * 1024, smem_per_block_optin=99 * 1024),
    # H100/H200: 2048 threads, 32 blocks, 228 KB shared per SM, 227 KB per block.
    "sm_90": ArchLimits("sm_90", max_warps_per_sm=64, max_blocks_per_sm=32,
                        smem_per_sm=228 * 1024, smem_per_block_optin=227 * 1024),
}

#: Order in which tied limiters are reported: a named resource before the warp-slot limit, so that
#: a tie names the resource worth changing (``cuda_occupancy.h`` flags every tied limit).
LIMITER_ORDER: tuple[str, ...] = ("registers", "shared", "blocks", "warps")


@dataclass
class Occupancy:
    """Theoretical occupancy of one launch configuration.

    Attributes:
        occupancy: resident warps / max warps per SM, 0..1 (0 when the block cannot launch).
        active_blocks_per_sm: resident blocks per SM.
        active_warps_per_sm: resident warps per SM.
        limiter: the limit that binds: ``"registers"``, ``"shared"``, ``"warps"`` or ``"blocks"``.
        limiters: every limit that binds (ties), in :data:`LIMITER_ORDER`.
        block_limits: blocks per SM allowed by each limit.
        regs_per_block: registers allocated per block (after granularity).
        smem_per_block: shared memory allocated per block in bytes (reserved + granularity).
        arch: the target (``"sm_90"``).
        cannot_launch: why the block cannot launch at all, one reason per broken limit (threads per block,
            registers per thread or per block, shared memory per block against the opt-in maximum); empty when
            it fits. A launch with a reason fails (``cudaErrorInvalidValue`` / ``too many resources requested``,
            Triton's ``OutOfResources``): its occupancy is not a property of the kernel but of a launch that
            never runs.
    """

    occupancy: float
    active_blocks_per_sm: int
    active_warps_per_sm: int
    limiter: str
    limiters: list[str]
    block_limits: dict[str, int]
    regs_per_block: int
    smem_per_block: int
    arch: str
    cannot_launch: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)


def arch_limits(target: str) -> ArchLimits:
    """Limits for ``target`` (``"sm_90"``, ``"sm_90a"``, ``"90"``, ``"cuda:90"``).

    Raises:
        ValueError: the target is not in :data:`ARCH_LIMITS`; the message lists the supported ones.
    """
    t = str(target).strip().lower().removeprefix("cuda:").removeprefix("sm_").removeprefix("sm")
    t = t.rstrip("af")
    key = f"sm_{t}"
    if key not in ARCH_LIMITS:
        raise ValueError(f"unsupported target {target!r}: occupancy is known for {', '.join(ARCH_LIMITS)}")
    return ARCH_LIMITS[key]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def theoretical_occupancy(registers: int, block_size: int, shared_bytes: int = 0, *,
                          dynamic_shared_bytes: int = 0, target: str = "sm_90",
                          shared_optin: bool = True) -> Occupancy:
    """Theoretical occupancy for one launch.

    Args:
        registers: registers per thread (ptxas ``Used N registers``).
        block_size: threads per block (product of the block dimensions).
        shared_bytes: static shared memory per block in bytes (ptxas ``smem``; for Triton the
            compiled kernel's ``shared``, which is dynamic shared memory but counts the same).
        dynamic_shared_bytes: dynamic shared memory per block in bytes (launch argument).
        target: compute capability, see :func:`arch_limits`.
        shared_optin: the kernel is opted in to more than 48 KB of shared memory per block (the host's
            ``cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)``; Triton's launcher
            does it itself). ``False``: a block over 48 KB (static plus dynamic) cannot launch.

    Returns:
        An :class:`Occupancy`. A block that cannot launch (too many threads, registers or shared
        memory) gets occupancy 0 with the offending limit as ``limiter``.

    Raises:
        ValueError: unknown target, or negative/zero inputs.
    """
    lim = arch_limits(target)
    if block_size <= 0 or registers < 0 or shared_bytes < 0 or dynamic_shared_bytes < 0:
        raise ValueError(f"bad occupancy inputs: registers={registers} block_size={block_size} "
                         f"shared={shared_bytes} dynamic={dynamic_shared_bytes}")
    warps_per_block = -(-block_size // 32)

    # warps
    blocks_warps = 0 if block_size > lim.max_threads_per_block else lim.max_warps_per_sm // warps_per_block
    # registers (cudaOccMaxBlocksPerSMRegsLimit)
    regs_per_warp = _round_up(registers * 32, lim.reg_alloc_unit)
    regs_per_block = regs_per_warp * warps_per_block
    regs_assumed = regs_per_warp * _round_up(warps_per_block, lim.sub_partitions)
    if registers > lim.max_regs_per_thread or regs_assumed > lim.regs_per_block:
        blocks_regs = 0
    elif regs_per_warp == 0:
        blocks_regs = 1 << 30
    else:
        warps_per_sub = (lim.regs_per_sm // lim.sub_partitions) // regs_per_warp
        blocks_regs = warps_per_sub * lim.sub_partitions // warps_per_block
    # shared memory (cudaOccMaxBlocksPerSMSmemLimit, default carveout = the largest)
    smem = _round_up(shared_bytes + dynamic_shared_bytes + lim.smem_reserved_per_block, lim.smem_alloc_unit)
    over_default = not shared_optin and shared_bytes + dynamic_shared_bytes > lim.smem_per_block_default
    if over_default or smem - lim.smem_reserved_per_block > lim.smem_per_block_optin:
        blocks_smem = 0
    else:
        blocks_smem = lim.smem_per_sm // smem
    blocks_hw = lim.max_blocks_per_sm

    reasons = launch_limit_reasons(registers, block_size, shared_bytes + dynamic_shared_bytes, lim, regs_assumed,
                                   shared_optin=shared_optin)
    limits = {"warps": blocks_warps, "registers": blocks_regs, "shared": blocks_smem, "blocks": blocks_hw}
    active = min(limits.values())
    tied = [k for k in LIMITER_ORDER if limits[k] == active]
    active_warps = active * warps_per_block
    return Occupancy(
        occupancy=active_warps / lim.max_warps_per_sm,
        active_blocks_per_sm=active,
        active_warps_per_sm=active_warps,
        limiter=tied[0],
        limiters=tied,
        block_limits={k: min(v, 1 << 16) for k, v in limits.items()},
        regs_per_block=regs_per_block,
        smem_per_block=smem,
        arch=lim.name,
        cannot_launch=reasons,
    )


def launch_limit_reasons(registers: int, block_size: int, shared_bytes: int, lim: ArchLimits,
                         regs_per_block: int | None = None, *, shared_optin: bool = True) -> list[str]:
    """Why one block of a launch cannot be resident at all on ``lim``'s SM, one sentence per broken limit.

    Args:
        registers: registers per thread.
        block_size: threads per block.
        shared_bytes: static plus dynamic shared memory per block, bytes.
        lim: the target's limits (:func:`arch_limits`).
        regs_per_block: registers the block is allocated (warp granularity, warps rounded up to the
            sub-partitions, as ``cudaOccMaxBlocksPerSMRegsLimit`` counts them); default computed here.
        shared_optin: the kernel is opted in to more than the default 48 KB per block (see
            :func:`theoretical_occupancy`).

    Returns:
        The reasons, empty when the block fits. The limits are the CUDA C++ Programming Guide's
        "Technical Specifications per Compute Capability" (threads per block, registers per thread and per
        block, shared memory per block with opt-in).
    """
    out: list[str] = []
    if block_size > lim.max_threads_per_block:
        out.append(f"{block_size} threads per block > {lim.max_threads_per_block}, the most a block can have on "
                   f"{lim.name}")
    if registers > lim.max_regs_per_thread:
        out.append(f"{registers} registers per thread > {lim.max_regs_per_thread} on {lim.name}")
    if regs_per_block is None:
        warps = -(-block_size // 32)
        regs_per_block = _round_up(registers * 32, lim.reg_alloc_unit) * _round_up(warps, lim.sub_partitions)
    if registers <= lim.max_regs_per_thread and regs_per_block > lim.regs_per_block:
        out.append(f"{registers} registers per thread x {block_size} threads = {regs_per_block} registers per "
                   f"block (allocated per warp) > {lim.regs_per_block} on {lim.name}")
    if not shared_optin and lim.smem_per_block_default < shared_bytes <= lim.smem_per_block_optin:
        out.append(f"{shared_bytes:,} B of shared memory per block > {lim.smem_per_block_default:,} B "
                   f"({lim.smem_per_block_default // 1024} KB), the most a block gets without opting in: the host "
                   "code has no cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) "
                   f"for it (with one, up to {lim.smem_per_block_optin // 1024} KB on {lim.name})")
    if shared_bytes > lim.smem_per_block_optin:
        out.append(f"{shared_bytes:,} B of shared memory per block > {lim.smem_per_block_optin:,} B "
                   f"({lim.smem_per_block_optin // 1024} KB), the most a block can opt in to on {lim.name}")
    return out
