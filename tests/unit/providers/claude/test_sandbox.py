from __future__ import annotations

from typing import Any

import pytest

from agentshim.core.errors import InvalidRequestError
from agentshim.providers.claude import SANDBOX_ENV, SandboxConfig


class TestSandboxConfig:
    def test_defaults_are_the_safe_ones(self) -> None:
        assert SandboxConfig().settings() == {
            "sandbox": {
                "enabled": True,
                "failIfUnavailable": True,
                "autoAllowBashIfSandboxed": True,
                "allowUnsandboxedCommands": False,
                "network": {"allowedDomains": []},
            }
        }

    def test_every_option_is_rendered_with_claude_codes_spelling(self) -> None:
        config = SandboxConfig(
            fail_if_unavailable=False,
            auto_allow_bash_if_sandboxed=False,
            allow_unsandboxed_commands=True,
            excluded_commands=["docker", "git push"],
            allow_write=["/w"],
            deny_write=["/w/.git"],
            allow_read=["/r"],
            deny_read=["~/.aws"],
            allowed_domains=["example.com"],
            extra={"allowLocalBinding": True, "network": {"allowedDomains": ["x.org"]}},
        )
        assert config.settings() == {
            "sandbox": {
                "enabled": True,
                "failIfUnavailable": False,
                "autoAllowBashIfSandboxed": False,
                "allowUnsandboxedCommands": True,
                "excludedCommands": ["docker", "git push"],
                "filesystem": {
                    "allowWrite": ["/w"],
                    "denyWrite": ["/w/.git"],
                    "allowRead": ["/r"],
                    "denyRead": ["~/.aws"],
                },
                "network": {"allowedDomains": ["x.org"]},
                "allowLocalBinding": True,
            }
        }

    def test_values_are_frozen_copies(self) -> None:
        roots = ["/w"]
        config = SandboxConfig(allow_write=roots)
        roots.append("/other")
        assert config.allow_write == ("/w",)
        with pytest.raises(AttributeError):
            config.allow_write = ()  # type: ignore[misc]

    @pytest.mark.parametrize(
        "fields",
        [
            {"allow_write": "/w"},
            {"deny_read": [""]},
            {"excluded_commands": ["a\0b"]},
            {"confine_native_reads_to": ["relative/dir"]},
            {"allowed_domains": None},
            {"extra": {"x": object()}},
            {"extra": {"x": float("nan")}},
            {"extra": {1: "x"}},
        ],
    )
    def test_invalid_values_are_refused(self, fields: dict[str, Any]) -> None:
        with pytest.raises(InvalidRequestError, match="SandboxConfig") as caught:
            SandboxConfig(**fields)
        assert caught.value.field == f"SandboxConfig.{next(iter(fields))}"

    def test_sandbox_env(self) -> None:
        assert dict(SANDBOX_ENV) == {"CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR": "1"}
