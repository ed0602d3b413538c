"""Which timing method a launcher gets, and why (pure logic, no GPU).

Methods (the name is reported with every timing):

* ``"cuda-graph"``: the launcher is captured once into a CUDA graph (``torch.cuda.CUDAGraph``, its
  allocations from the graph's private memory pool) and each trial replays it. The host's Python launcher is
  then outside the timed region, as in ``triton.testing.do_bench_cudagraph``.
* ``"events-async-flush"``: each trial is ``flush L2; start event; launcher; end event`` with no host
  synchronization inside the loop, as in ``triton.testing.do_bench``: the GPU is still busy with the flush
  while the host runs the launcher, so the events bracket the device work, not the host.
* ``"wall-clock+sync"``: the side-stream guard fired (the host wall clock with a device-wide sync exceeds
  the events by far: work escaped the timed stream), so wall-clock times are reported instead.

A graph is used when the launcher can be captured and the captured graph launches the same kernels as one
eager call (CUPTI counts both); otherwise the events method is used and the reason is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METHOD_GRAPH", "METHOD_EVENTS", "METHOD_WALL", "METHODS", "REQUESTS", "MethodChoice",
           "may_capture", "choose_method"]

METHOD_GRAPH = "cuda-graph"
METHOD_EVENTS = "events-async-flush"
METHOD_WALL = "wall-clock+sync"
#: Every method name a timing can report.
METHODS = (METHOD_GRAPH, METHOD_EVENTS, METHOD_WALL)
#: What a caller may ask for: ``auto`` (a graph when possible), or one method.
REQUESTS = ("auto", METHOD_GRAPH, METHOD_EVENTS)

#: Launcher kinds that launch on the legacy default stream (a ``.cu`` host launcher's ``<<<...>>>``): such
#: work is not captured by a side-stream capture, so a graph would time nothing.
_LEGACY_STREAM_KINDS = frozenset({"cu-host-launcher"})


@dataclass(frozen=True)
class MethodChoice:
    """The method chosen and why.

    Attributes:
        method: one of :data:`METHODS`.
        reason: why this method (empty for a plain graph).
    """

    method: str
    reason: str = ""


def may_capture(requested: str, launcher_kind: str | None) -> MethodChoice | None:
    """Before capture: ``None`` when a capture should be tried, else the events method with the reason.

    Args:
        requested: one of :data:`REQUESTS`.
        launcher_kind: how the launcher launches (``"triton"``, ``"cupy"``, ``"python"``,
            ``"cu-host-launcher"``), or ``None`` when unknown.

    Raises:
        ValueError: ``requested`` is not one of :data:`REQUESTS`.
    """
    if requested not in REQUESTS:
        raise ValueError(f"unknown timing method {requested!r}; expected one of {', '.join(REQUESTS)}")
    if requested == METHOD_EVENTS:
        return MethodChoice(METHOD_EVENTS, "asked for")
    if launcher_kind in _LEGACY_STREAM_KINDS:
        return MethodChoice(METHOD_EVENTS, "a .cu host launcher launches on the legacy default stream, which a "
                                           "graph capture on a side stream does not record")
    return None


def choose_method(requested: str, launcher_kind: str | None, *, capture_error: str | None,
                  eager_kernels: int | None, graph_kernels: int | None) -> MethodChoice:
    """The method after a capture was tried (or skipped).

    Args:
        requested, launcher_kind: as in :func:`may_capture`.
        capture_error: the capture's error message, or ``None`` when it succeeded (or was not tried).
        eager_kernels: device operations (kernels, copies, memsets) CUPTI saw in one eager call, or ``None``
            when CUPTI was not available.
        graph_kernels: the same for one replay of the captured graph, or ``None``.

    Returns:
        ``cuda-graph`` when the capture succeeded and the replay launches as many device operations as an eager
        call (or CUPTI could not count them), else ``events-async-flush`` with the reason.
    """
    pre = may_capture(requested, launcher_kind)
    if pre is not None:
        return pre
    if capture_error is not None:
        return MethodChoice(METHOD_EVENTS, f"the launcher could not be captured into a CUDA graph ({capture_error})")
    if eager_kernels is not None and graph_kernels is not None and graph_kernels != eager_kernels:
        return MethodChoice(METHOD_EVENTS, f"the captured graph launches {graph_kernels} device operation(s) but an "
                                           f"eager call launches {eager_kernels} (work outside the capture stream)")
    if eager_kernels == 0:
        return MethodChoice(METHOD_EVENTS, "CUPTI saw no device work in an eager call")
    return MethodChoice(METHOD_GRAPH)
