"""htam_core.bench."""
