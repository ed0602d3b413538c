"""htam_core.source."""
