"""agentshim: run coding-agent CLIs as subprocesses, get typed events and typed turn results."""

from __future__ import annotations

from agentshim._version import __version__

__all__ = ["__version__"]
