"""Ending every process that carries a marker in its environment, wherever it went.

The public face of the host executor's run marker (``_reap``), for a transport that marks the
commands a long-lived CLI runs for it (through the CLI's own setting for its tools'
environment) and must end them when a turn is interrupted, without ending the CLI itself.
"""

from __future__ import annotations

from ._reap import boot_ticks, can_scan, command_line, new_run_id, parent_and_start, reap_marked

__all__ = [
    "boot_ticks",
    "can_scan",
    "command_line",
    "new_run_id",
    "parent_and_start",
    "reap_marked",
]
