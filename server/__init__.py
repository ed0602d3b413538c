"""HTAM language server (pygls 2.x): thin LSP handlers over htam_core."""
