"""htam_core.harness."""
