"""htam_core.generate."""
