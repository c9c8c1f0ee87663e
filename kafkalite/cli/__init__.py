"""The ``kafkalite`` command."""
