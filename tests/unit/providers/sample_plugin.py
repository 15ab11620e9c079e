"""A tiny third-party provider plugin, used to test entry-point discovery."""

from __future__ import annotations

from agentshim.core.profile import ProviderProfile
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.static_plugin import StaticProviderPlugin

PROFILE = ProviderProfile(
    name="sample",
    display_name="Sample CLI",
    binary="sample",
    supports_resume=True,
)

PLUGIN = StaticProviderPlugin(
    profile=PROFILE,
    factory=ClaudeProvider,
    resume_template="sample --resume {id}",
)

NOT_A_PLUGIN = object()
