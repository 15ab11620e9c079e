"""``python -m agentshim``: the command-line entry point."""

from __future__ import annotations

from agentshim.command import main

raise SystemExit(main())
