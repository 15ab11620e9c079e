"""opencode's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import StaticProviderPlugin, StaticTestKit

from .model_data import MODEL_TABLE, PRICING_TABLE
from .provider import PROFILE, OpencodeProvider
from .scripted import resume_failure_lines, scripted_lines
from .testing import installed_mcp_servers

__all__ = ["PLUGIN"]

PLUGIN = StaticProviderPlugin(
    profile=PROFILE,
    factory=OpencodeProvider,
    resume_template="opencode --session {id}",
    resume_aliases=(
        "opencode -s {id}",
        "opencode --session={id}",
        "opencode run --session {id}",
        "opencode run --session={id}",
        "opencode run -s {id}",
    ),
    models=MODEL_TABLE,
    pricing=PRICING_TABLE,
    test_kit=StaticTestKit(scripted_lines, resume_failure_lines, installed_mcp_servers),
)
"""Everything the catalog knows about opencode."""
