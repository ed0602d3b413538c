"""htam_core.cli."""
