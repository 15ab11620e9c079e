"""Hook scripts agentshim registers with Claude Code; each runs as ``sys.executable <script>``.

The scripts are stdlib-only and import nothing from agentshim, so they work under whatever
interpreter runs agentshim without importing the library a second time.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CONFINED_TOOLS_MATCHER", "CONFINE_READS_SCRIPT"]

CONFINE_READS_SCRIPT = Path(__file__).resolve().with_name("confine_reads.py")
"""The read-confinement PreToolUse hook: denies file tools outside its argv roots."""

CONFINED_TOOLS_MATCHER = "Read|Glob|Grep|Edit|MultiEdit|Write|NotebookEdit"
"""The Claude Code tools whose paths the read-confinement hook checks."""
