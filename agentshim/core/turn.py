"""What a caller asks of one turn, and what it gets back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentshim.core.errors import InvalidRequestError
from agentshim.core.usage import ProviderUsage

if TYPE_CHECKING:
    from agentshim.core.mcp import McpServer

__all__ = ["OutputSchema", "TurnRequest", "TurnResult"]


@dataclass(frozen=True)
class OutputSchema:
    """A JSON Schema the final answer must follow.

    ``host_dir`` is an absolute host directory where a schema file may be written; ``cli_dir``
    is that directory as the CLI process sees it (inside a container, say) and defaults to
    ``str(host_dir)``.
    """

    schema: Mapping[str, Any]
    host_dir: Path
    cli_dir: str | None = None

    def __post_init__(self) -> None:
        if not Path(self.host_dir).is_absolute():
            raise InvalidRequestError(
                "output_schema.host_dir",
                f"must be an absolute directory, got {str(self.host_dir)!r}; a relative one "
                "would be resolved against whatever directory the process happens to be in",
            )

    @property
    def cli_dir_or_host(self) -> str:
        """The directory the CLI should read the schema file from."""
        return self.cli_dir if self.cli_dir is not None else str(self.host_dir)


@dataclass(frozen=True)
class TurnRequest:
    """One prompt and its per-turn options; ``None`` fields fall back to session defaults."""

    prompt: str
    cwd: str | None = None
    timeout: float | None = None
    output_schema: OutputSchema | None = None
    reasoning_effort: str | None = None
    extra_args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    mcp_servers: Sequence[McpServer] = ()
    mcp_workspace: Path | None = None


@dataclass(frozen=True)
class TurnResult:
    """The outcome of a successful (or interrupted) turn.

    ``usage`` is this turn's share. ``context_tokens`` is the prompt size (input including cache
    reads and writes) of the turn's last main-conversation model call: how full the context
    window was, as Claude Code's own meter counts it; None where the CLI does not tell.
    """

    text: str
    structured_output: Any | None
    session_id: str | None
    resumed: bool
    usage: ProviderUsage = field(default_factory=ProviderUsage)
    cost_usd: float | None = None
    duration_ms: int = 0
    exit_code: int = 0
    interrupted: bool = False
    context_tokens: int | None = None
