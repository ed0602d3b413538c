"""Errors of the command line."""


class UsageError(Exception):
    """Bad input from the user; printed as ``htam: error: ...`` with exit code 2."""
