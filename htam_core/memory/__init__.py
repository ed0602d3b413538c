"""htam_core.memory."""
