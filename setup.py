"""Package mapping that pyproject.toml cannot express on its own.

The LSP package is imported as ``htam_server`` but lives in the directory ``server/``;
mapping it here means no top-level module named ``server`` is ever installed.
"""

from setuptools import find_packages, setup

core = find_packages(include=["htam_core", "htam_core.*"])
lsp = ["htam_server"] + ["htam_server." + p for p in find_packages(where="server")]

setup(packages=core + lsp, package_dir={"htam_server": "server"})
