"""HTAM engine: kernel source model, profiler, HTAM memory, transforms, generators, verify, optimize.

This package never imports pygls or lsprotocol; the LSP lives in ``htam_server``.
"""

__version__ = "0.1.0"
