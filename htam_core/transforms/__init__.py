"""htam_core.transforms."""
