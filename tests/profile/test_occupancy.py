"""Theoretical occupancy: hand-computed cases, and agreement with CUDA's own occupancy calculator
(``cuda_occupancy.h``, compiled with the host C++ compiler) over a grid of launches."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from htam_core.profile.occupancy import ARCH_LIMITS, arch_limits, theoretical_occupancy


@pytest.mark.parametrize(
    ("regs", "block", "smem", "dyn", "target", "blocks", "occ", "limiter"),
    [
        # 32 regs x 256 threads: 1024 regs/warp, 16 warps/sub-partition -> 64 warps; warp slots 8 blocks
        (32, 256, 0, 0, "sm_90", 8, 1.0, "registers"),
        # 64 regs: 2048 regs/warp -> 8 warps per sub-partition -> 32 warps -> 4 blocks of 8 warps
        (64, 256, 0, 0, "sm_90", 4, 0.5, "registers"),
        # 40 regs (1280/warp) x 128 threads with 48 KiB dynamic smem: (49152+1024) -> 233472 // 50176 = 4
        (40, 128, 0, 48 * 1024, "sm_90", 4, 0.25, "shared"),
        # one-warp blocks on sm_86: 16 resident blocks of 1 warp out of 48 warp slots
        (16, 32, 0, 0, "sm_86", 16, 16 / 48, "blocks"),
        # 64 regs x 1024 threads on sm_80: exactly the 64K register file -> 1 block of 32 warps
        (64, 1024, 0, 0, "sm_80", 1, 0.5, "registers"),
        # 255 regs x 1024 threads cannot launch
        (255, 1024, 0, 0, "sm_90", 0, 0.0, "registers"),
        # static 1024 B smem + reserved 1 KiB = 2048 B: 114 blocks by shared memory, 8 by warps
        (13, 256, 1024, 0, "sm_90", 8, 1.0, "warps"),
        # sm_89: 1536 threads/SM, 24 blocks; 128-thread blocks -> 12 blocks by warps
        (32, 128, 0, 0, "sm_89", 12, 1.0, "warps"),
    ],
)
def test_hand_computed(regs, block, smem, dyn, target, blocks, occ, limiter):
    r = theoretical_occupancy(regs, block, smem, dynamic_shared_bytes=dyn, target=target)
    assert r.active_blocks_per_sm == blocks
    assert r.occupancy == pytest.approx(occ)
    assert r.limiter == limiter


def test_too_many_threads_cannot_launch():
    r = theoretical_occupancy(16, 1025, target="sm_90")
    assert r.occupancy == 0.0 and r.limiter == "warps"


def test_target_spellings_and_errors():
    assert arch_limits("sm_90a").name == "sm_90"
    assert arch_limits("90").name == "sm_90"
    with pytest.raises(ValueError, match="unsupported target"):
        arch_limits("sm_70")
    with pytest.raises(ValueError):
        theoretical_occupancy(32, 0)


_OCC_MAIN = r"""
#include <cstdio>
#include "cuda_occupancy.h"
int main() {
  int majors[] = {MAJORS}; int minors[] = {MINORS};
  int maxthr[] = {MAXTHR}; size_t smem_sm[] = {SMEMSM}; size_t smem_optin[] = {SMEMOPT};
  int regs[] = {16, 32, 40, 64, 72, 96, 128, 168, 255};
  int blocks[] = {32, 64, 96, 128, 192, 256, 384, 512, 640, 1024};
  size_t smems[] = {0, 1024, 4096, 16384, 40000, 98304};
  printf("[");
  bool first = true;
  for (int a = 0; a < NARCH; ++a)
  for (int r : regs) for (int b : blocks) for (size_t s : smems) {
    cudaOccDeviceProp p;
    p.computeMajor = majors[a]; p.computeMinor = minors[a];
    p.maxThreadsPerBlock = 1024; p.maxThreadsPerMultiprocessor = maxthr[a];
    p.regsPerBlock = 65536; p.regsPerMultiprocessor = 65536; p.warpSize = 32;
    p.sharedMemPerBlock = 48 * 1024; p.sharedMemPerMultiprocessor = smem_sm[a];
    p.numSms = 100; p.sharedMemPerBlockOptin = smem_optin[a]; p.reservedSharedMemPerBlock = 1024;
    cudaOccFuncAttributes f;
    f.maxThreadsPerBlock = 1024; f.numRegs = r; f.sharedSizeBytes = s; f.partitionedGCConfig = PARTITIONED_GC_OFF;
    f.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN; f.maxDynamicSharedSizeBytes = smem_optin[a] - s;
    f.numBlockBarriers = 1;
    cudaOccDeviceState st;
    cudaOccResult res;
    cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&res, &p, &f, &st, b, 0);
    printf("%s[%d,%d,%d,%d,%zu,%d]", first ? "" : ",", (int)e, a, r, b, s, res.activeBlocksPerMultiprocessor);
    first = false;
  }
  printf("]\n");
  return 0;
}
"""


def test_matches_cuda_occupancy_header(tmp_path: Path):
    header = Path("/usr/local/cuda/include/cuda_occupancy.h")
    cxx = shutil.which("g++") or shutil.which("c++")
    if not header.exists() or cxx is None:
        pytest.skip("needs the CUDA toolkit's cuda_occupancy.h and a host C++ compiler")
    archs = list(ARCH_LIMITS.values())
    src = (_OCC_MAIN.replace("NARCH", str(len(archs)))
           .replace("{MAJORS}", "{" + ",".join(a.name[3] for a in archs) + "}")
           .replace("{MINORS}", "{" + ",".join(a.name[4] for a in archs) + "}")
           .replace("{MAXTHR}", "{" + ",".join(str(a.max_warps_per_sm * 32) for a in archs) + "}")
           .replace("{SMEMSM}", "{" + ",".join(str(a.smem_per_sm) for a in archs) + "}")
           .replace("{SMEMOPT}", "{" + ",".join(str(a.smem_per_block_optin) for a in archs) + "}"))
    (tmp_path / "occ.cpp").write_text(src)
    exe = tmp_path / "occ"
    build = subprocess.run([cxx, "-std=c++17", "-O1", f"-I{header.parent}", str(tmp_path / "occ.cpp"), "-o", str(exe)],
                           capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr[-2000:]
    rows = json.loads(subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True).stdout)
    assert len(rows) > 1000
    mismatches = []
    for err, a, r, b, s, blocks in rows:
        occ = theoretical_occupancy(r, b, s, target=archs[a].name)
        ours = occ.active_blocks_per_sm
        expected = blocks if err == 0 else 0
        # a block that cannot be resident at all is a launch that cannot run, and says why
        if ours != expected or bool(occ.cannot_launch) != (expected == 0):
            mismatches.append((archs[a].name, r, b, s, expected, ours, occ.cannot_launch))
    assert not mismatches, mismatches[:10]
