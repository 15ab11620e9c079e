"""What a provider's CLI can do: its static capability profile and the enums it uses."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from agentshim.core._readonly import empty_mapping
from agentshim.core.errors import InvalidRequestError
from agentshim.core.permissions import NativeMode

__all__ = [
    "McpMechanism",
    "OutputSchemaStyle",
    "ProviderProfile",
    "RenewalBudget",
    "SchemaDialect",
]


class McpMechanism(enum.Enum):
    """How a provider's CLI is told about MCP servers for one turn."""

    NONE = "none"
    CONFIG_FILE = "config_file"
    CLI_FLAGS = "cli_flags"


class OutputSchemaStyle(enum.Enum):
    """How a provider's CLI takes an output schema."""

    NONE = "none"
    INLINE_JSON = "inline_json"
    FILE_PATH = "file_path"


class SchemaDialect(enum.Enum):
    """Which subset of JSON Schema a provider's CLI accepts as an output schema.

    STRICT is OpenAI's strict structured outputs (Codex); OPEN accepts optional properties and
    open ``additionalProperties`` (Claude Code).
    """

    STRICT = "strict"
    OPEN = "open"


@dataclass(frozen=True, slots=True)
class RenewalBudget:
    """When a conversation should be retired and the next turn start cold.

    ``None`` in a field means no limit of that kind.

    Raises:
        InvalidRequestError: a count that is not a positive int, or a duration that is not a
            positive number of seconds.
    """

    max_turns: int | None = None
    max_turn_input_tokens: int | None = None
    max_turn_duration: float | None = None

    def __post_init__(self) -> None:
        for name, kinds, what in (
            ("max_turns", (int,), "a positive int"),
            ("max_turn_input_tokens", (int,), "a positive int"),
            ("max_turn_duration", (int, float), "a positive number of seconds"),
        ):
            value: object = getattr(self, name)
            if value is None:
                continue
            # "not > 0" also refuses NaN, which compares false with everything.
            if isinstance(value, bool) or not isinstance(value, kinds) or not value > 0:
                raise InvalidRequestError(
                    f"RenewalBudget.{name}",
                    f"{value!r} is not {what}",
                    f"RenewalBudget.{name} must be {what} or None for no limit, got {value!r}",
                )


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """Static facts about one provider's CLI: names, capabilities and where it keeps state.

    Every capability defaults to the CLI not having it (no resume, no reasoning effort, no MCP,
    no output schema, only the bypass permission mode), so a profile names what its CLI can do.
    """

    name: str
    display_name: str
    binary: str = ""
    """The executable looked up on PATH; empty means it is ``name``."""
    supports_resume: bool = False
    supports_fork: bool = False
    """Whether a resumed conversation can start a new one from its history instead."""
    supports_reasoning_effort: bool = False
    mcp: McpMechanism = McpMechanism.NONE
    output_schema: OutputSchemaStyle = OutputSchemaStyle.NONE
    schema_dialect: SchemaDialect | None = None
    state_dirs: tuple[str, ...] = ()
    darwin_state_dirs: tuple[str, ...] = ()
    auth_env_vars: tuple[str, ...] = ()
    skill_dirs: tuple[str, ...] = ()
    container_install: tuple[str, ...] = ()
    container_env: Mapping[str, str] = field(default_factory=empty_mapping)
    state_root_env: str | None = None
    auth_files: tuple[str, ...] = ()
    credential_files: tuple[str, ...] = ()
    resume_state_paths: tuple[str, ...] = ()
    mcp_config_file: str | None = None
    native_permission_modes: tuple[NativeMode, ...] = (NativeMode.BYPASS,)

    def __post_init__(self) -> None:
        if not self.binary:
            object.__setattr__(self, "binary", self.name)
        if (self.mcp is McpMechanism.CONFIG_FILE) != (self.mcp_config_file is not None):
            raise InvalidRequestError(
                "ProviderProfile.mcp_config_file",
                "does not match mcp",
                f"profile {self.name!r}: mcp_config_file must be set exactly when mcp is "
                "CONFIG_FILE; set both or neither",
            )
        if (self.output_schema is OutputSchemaStyle.NONE) != (self.schema_dialect is None):
            raise InvalidRequestError(
                "ProviderProfile.schema_dialect",
                "does not match output_schema",
                f"profile {self.name!r}: schema_dialect must be set exactly when an output "
                "schema style is; set both or neither",
            )
        object.__setattr__(self, "container_env", MappingProxyType(dict(self.container_env)))

    @property
    def install_command(self) -> str | None:
        """The shell command that installs the CLI (the last of ``container_install``), if any."""
        return self.container_install[-1] if self.container_install else None
