"""The built-in catalog's declaration of the GitHub Copilot CLI provider."""

from __future__ import annotations

from agentshim.providers.static_plugin import StaticProviderPlugin

from .model_data import MODEL_TABLE, PRICING_TABLE
from .provider import PROFILE, CopilotProvider
from .scripted import resume_failure_lines, scripted_lines
from .testing import installed_mcp_servers

__all__ = ["PLUGIN"]

PLUGIN = StaticProviderPlugin(
    profile=PROFILE,
    factory=CopilotProvider,
    scripted=scripted_lines,
    resume_failure=resume_failure_lines,
    resume_template="copilot --resume={id}",
    resume_aliases=("copilot --resume {id}", "copilot -r {id}"),
    installed_mcp=installed_mcp_servers,
    models=MODEL_TABLE,
    pricing=PRICING_TABLE,
)
"""Copilot CLI: profile, provider factory, scripted output, resume line and (empty) tables."""
