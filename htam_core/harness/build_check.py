"""Compile-only check of a CUDA harness: build what running it would build, with nvcc and no GPU.

Running a ``.cu`` harness compiles two things before the first launch: the candidate's launch (a host
launcher's shared library through its ``extern "C"`` shim, :func:`~htam_core.harness.cu_launcher.launcher_library`,
or a direct launch's cubin, :func:`~htam_core.harness.runner.cubin_for`, or, for a kernel taking a struct by value,
the shim that builds it, :func:`~htam_core.harness.cu_struct_launch.struct_library`) and, under the oracle rule, the
oracle's (the starting kernel's file through :attr:`Harness.oracle_launcher` when there is one). Both are
built here, with the same functions and the same on-disk caches, so a machine with nvcc and no GPU can
tell whether a harness will build on the GPU machine (where the build is then a cache hit when the nvcc,
arch and sources are the same). Nothing is loaded or run.

Idea source: a CI "build" stage that compiles each target before a test stage runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.cu_launcher import launcher_library, launcher_types
from htam_core.harness.cu_struct_launch import struct_args, struct_library
from htam_core.harness.runner import cubin_for, mangled_entry
from htam_core.types.language import traits

#: The architecture compiled for when none is given: the lent GPUs' (H200, compute capability 9.0).
DEFAULT_ARCH = "sm_90"


@dataclass
class BuildCheck:
    """What :func:`check_build` built: one line per artifact (``"shim of gelu_forward1: gelu.cu"``)."""

    built: list[str]
    oracle_checked: bool


def _one(path: str, launcher: str | None, kernel: str, h: Harness, arch: str) -> str:
    if launcher:
        lib, symbol = launcher_library(path, launcher, arch, *launcher_types(h.inputs), load=False)
        return f"{launcher} of {Path(path).name}: {lib.name} ({symbol})"
    if struct_args(h):  # a struct passed by value: the shim that builds it and launches
        lib, _order = struct_library(path, h, arch)
        return f"{kernel} of {Path(path).name}: struct shim {lib.name}"
    data = cubin_for(path, arch)
    return f"{kernel} of {Path(path).name}: cubin entry {mangled_entry(data, kernel)}"


def check_build(h: Harness, arch: str = DEFAULT_ARCH) -> BuildCheck:
    """Build the launch of ``h`` (and its oracle's, when it is another file or launcher) for ``arch``.

    Args:
        h: a CUDA harness (of a ``.cu`` file) with a host launcher or a direct launch.
        arch: the ``-arch`` of the build (``"sm_90"``).

    Returns:
        The artifacts built; ``oracle_checked`` is True when the oracle is a separate build (another
        file or another launcher), i.e. the check of this kernel against the starting one can run.

    Raises:
        HarnessError: not a CUDA harness, nvcc is missing, or a build fails (nvcc's errors in the message,
            prefixed with which build it was).
    """
    if not traits(h.language).nvcc_build:
        raise HarnessError(f"{h.kernel}: a {h.language} harness has no nvcc build to check")
    built = []
    try:
        built.append(_one(h.path, h.launcher, h.kernel, h, arch))
    except HarnessError as e:
        raise HarnessError(f"the build of {h.launcher or h.kernel} failed: {e.message}") from None
    oracle = h.uses_oracle and h.oracle_path and (Path(h.oracle_path).resolve() != Path(h.path).resolve() or
                                                  (h.oracle_launcher and h.oracle_launcher != h.launcher))
    if oracle:
        launcher = h.oracle_launcher or h.launcher
        try:
            built.append(_one(str(h.oracle_path), launcher, h.kernel, h, arch))
        except HarnessError as e:
            raise HarnessError(f"the oracle's build ({launcher or h.kernel} of {Path(str(h.oracle_path)).name}) "
                               f"failed: {e.message}") from None
    return BuildCheck(built, bool(oracle))
