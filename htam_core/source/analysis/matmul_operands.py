"""The layout in which a matmul operand is read, from its affine index (:class:`~htam_core.source.analysis.facts.Access`).

In ``C[row][col] = sum_k A(row, k) * B(k, col)`` each operand may be stored either way round: A row-major ``M x K``
(``A[row * K + k]``, layout ``"A"``) or ``K x M`` (``A[k * M + row]``, ``"AT"``: ``C = A^T B``, the usual backward
pass ``dW = X^T dY``); B row-major ``K x N`` (``B[k * N + col]``, ``"NN"``) or ``N x K`` (``B[col * K + k]``,
``"NT"``: ``A B^T``). The layout is read off the index's strides alone: the contiguous axis is the one of stride 1,
the other one's stride is neither 0 nor 1, and the operand does not move with the other output coordinate (a batch
offset free of the threads and of k is allowed). A tiling step loads each operand's tile with ``threadIdx.x`` along
its contiguous axis. Idea source: BLAS ``gemm``'s ``transa``/``transb`` arguments (the same product, each operand in
either storage order).
"""

from __future__ import annotations

from typing import Literal

from htam_core.source.analysis.facts import Access

__all__ = ["OperandLayout", "operand_layout"]

#: ``"A"``: ``A[row * K + k]``; ``"AT"``: ``A[k * M + row]``; ``"NN"``: ``B[k * N + col]``; ``"NT"``: ``B[col * K + k]``.
OperandLayout = Literal["A", "AT", "NN", "NT"]


def operand_layout(acc: Access, k: str, row_dim: str, col_dim: str) -> OperandLayout | None:
    """The :data:`OperandLayout` of the load ``acc`` in a matmul whose k loop variable is ``k`` and whose output
    row and column move with ``threadIdx.<row_dim>`` and ``threadIdx.<col_dim>`` (``"x"``, ``"y"`` or ``"z"``);
    ``None`` when a stride is unknown, the load moves with the third thread dimension, or the strides fit no
    layout (both output coordinates, or k of stride 0 or 1 on the non-contiguous axis)."""
    sk, sr, sc = acc.stride(k), acc.stride(f"threadIdx.{row_dim}"), acc.stride(f"threadIdx.{col_dim}")
    others = [acc.stride(f"threadIdx.{d}") for d in "xyz" if d not in (row_dim, col_dim)]
    if sk is None or sr is None or sc is None or any(o != 0 for o in others):
        return None
    if sc == 0 and sr != 0:
        if sk == 1:
            return "A"
        if sr == 1 and sk != 0:
            return "AT"
    if sr == 0:
        if sc == 1 and sk not in (0, 1):
            return "NN"
        if sk == 1 and sc not in (0, 1):
            return "NT"
    return None
