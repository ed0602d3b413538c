"""htam_core.optimize."""
