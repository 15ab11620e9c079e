"""The exit statuses of the ``agentshim`` command, one place for every subcommand."""

from __future__ import annotations

__all__ = ["EXIT_INTERRUPTED", "EXIT_NOT_INSTALLED", "EXIT_OK", "EXIT_TURN_FAILED", "EXIT_USAGE"]

EXIT_OK = 0
"""The command did what it was asked."""
EXIT_TURN_FAILED = 1
"""The turn failed (the CLI or the model reported an error), or doctor found a provider not ready."""
EXIT_USAGE = 2
"""The command line was wrong (argparse's own status)."""
EXIT_NOT_INSTALLED = 3
"""The provider's CLI is not installed (not on PATH)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C stopped the turn (128 + SIGINT, as a shell reports it)."""
