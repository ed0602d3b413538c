"""htam_core.profile."""
