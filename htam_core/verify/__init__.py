"""htam_core.verify."""
