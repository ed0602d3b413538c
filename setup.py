"""Package mapping that pyproject.toml cannot express on its own.

The LSP package is imported as ``htam_server`` but lives in the directory ``server/``;
mapping it here means no top-level module named ``server`` is ever installed.
"""

from setuptools import find_namespace_packages, find_packages, setup

# namespace discovery also lists data folders (prompt templates), so their files ship as package data
core = [p for p in find_namespace_packages(include=["htam_core", "htam_core.*"]) if "__pycache__" not in p]
lsp = ["htam_server"] + ["htam_server." + p for p in find_packages(where="server")]

setup(packages=core + lsp, package_dir={"htam_server": "server"})
