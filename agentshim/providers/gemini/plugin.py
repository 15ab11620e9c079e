"""The Gemini CLI's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import StaticProviderPlugin, StaticTestKit

from .model_data import MODEL_TABLE, PRICING_TABLE
from .provider import PROFILE, GeminiProvider
from .scripted import resume_failure_lines, scripted_lines
from .testing import installed_mcp_servers

__all__ = ["PLUGIN"]

PLUGIN = StaticProviderPlugin(
    profile=PROFILE,
    factory=GeminiProvider,
    resume_template="gemini --resume {id}",
    resume_aliases=("gemini -r {id}", "gemini --resume={id}"),
    models=MODEL_TABLE,
    pricing=PRICING_TABLE,
    test_kit=StaticTestKit(scripted_lines, resume_failure_lines, installed_mcp_servers),
)
"""Everything the catalog knows about the Gemini CLI."""
