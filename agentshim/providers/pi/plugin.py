"""The built-in catalog's declaration of the Pi provider."""

from __future__ import annotations

from agentshim.providers.static_plugin import StaticProviderPlugin, StaticTestKit

from .model_data import MODEL_TABLE, PRICING_TABLE
from .provider import PROFILE, PiProvider
from .scripted import resume_failure_lines, scripted_lines
from .testing import installed_mcp_servers

__all__ = ["PLUGIN"]

PLUGIN = StaticProviderPlugin(
    profile=PROFILE,
    factory=PiProvider,
    # No aliases: pi knows only `--session <id>`; its `-r` opens a picker.
    resume_template="pi --session {id}",
    models=MODEL_TABLE,
    pricing=PRICING_TABLE,
    test_kit=StaticTestKit(scripted_lines, resume_failure_lines, installed_mcp_servers),
)
"""Pi: profile, provider factory, scripted output, resume line and (empty) tables."""
