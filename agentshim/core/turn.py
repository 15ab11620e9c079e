"""What a caller asks of one turn, and what it gets back."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from agentshim.core._checks import is_positive_seconds
from agentshim.core._error_base import InvalidRequestError
from agentshim.core.attachments import Attachment, PromptImage, PromptLink, PromptResource
from agentshim.core.events import BackgroundTask
from agentshim.core.failures import FailureKind
from agentshim.core.usage import ProviderUsage

if TYPE_CHECKING:
    from agentshim.core.mcp import McpServer
    from agentshim.core.tools import Tool

__all__ = ["OutputSchema", "ParsedTurn", "StopReason", "TurnRequest", "TurnResult"]


@dataclass(frozen=True)
class OutputSchema:
    """A JSON Schema the final answer must follow.

    ``host_dir`` is an absolute host directory where a schema file may be written; ``cli_dir``
    is that directory as the CLI process sees it (inside a container, say) and defaults to
    ``str(host_dir)``. Only a CLI that reads its schema from a file (one-shot Codex) needs
    them: ``OutputSchema(schema)`` alone serves the CLIs that take the schema inline, and a
    turn that would need the file refuses it with InvalidRequestError before anything runs.
    """

    schema: Mapping[str, Any]
    host_dir: Path | None = None
    cli_dir: str | None = None

    def __post_init__(self) -> None:
        if self.host_dir is not None and not Path(self.host_dir).is_absolute():
            raise InvalidRequestError(
                "output_schema.host_dir",
                f"must be an absolute directory, got {str(self.host_dir)!r}; a relative one "
                "would be resolved against whatever directory the process happens to be in",
            )

    @property
    def cli_dir_or_host(self) -> str:
        """The directory the CLI should read the schema file from."""
        if self.cli_dir is not None:
            return self.cli_dir
        return str(self.host_dir) if self.host_dir is not None else ""


@dataclass(frozen=True)
class TurnRequest:
    """One prompt and its per-turn options; ``None`` fields fall back to session defaults.

    The prompt must hold something other than whitespace: an empty one is refused with
    InvalidRequestError before anything runs. ``model`` runs this turn on another model than
    the agent's: a one-shot turn passes it to the CLI, a long-lived conversation switches in
    band before the turn (and stays on it until a turn names another). ``tools`` are Python
    functions the agent may call during the turn (see :mod:`agentshim.tools`); a plain
    function in it is made a tool with ``agentshim.tools.tool``. ``attachments`` go with the
    prompt (images, resource links, resources' text) where the transport's agent takes them
    (ACP agents); any other transport refuses them.
    """

    prompt: str
    cwd: str | None = None
    timeout: float | None = None
    output_schema: OutputSchema | None = None
    reasoning_effort: str | None = None
    extra_args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    mcp_servers: Sequence[McpServer] = ()
    mcp_workspace: Path | None = None
    model: str | None = None
    tools: Sequence[Tool] = ()
    attachments: Sequence[Attachment] = ()

    def __post_init__(self) -> None:
        # Checked here, so a wrong type fails where it was written and not deep in a turn.
        given: dict[str, object] = dict(vars(self))
        if not isinstance(given["prompt"], str):
            _refuse("prompt", "a str", given["prompt"])
        if not given["prompt"].strip():
            # Every CLI fails on an empty prompt, each its own way and only after starting.
            raise InvalidRequestError(
                "TurnRequest.prompt",
                f"is empty or only whitespace ({given['prompt']!r:.40})",
                "TurnRequest.prompt is empty or only whitespace; give the agent something to do",
            )
        cwd = given["cwd"]
        if cwd is not None:
            if not isinstance(cwd, (str, os.PathLike)):
                _refuse("cwd", "a str path or None", cwd)
            object.__setattr__(self, "cwd", os.fspath(cwd))  # pyright: ignore[reportUnknownArgumentType]
        timeout = given["timeout"]
        if timeout is not None and not is_positive_seconds(timeout):
            _refuse("timeout", "a positive, finite number of seconds or None", timeout)
        if given["output_schema"] is not None and not isinstance(
            given["output_schema"], OutputSchema
        ):
            _refuse("output_schema", "an OutputSchema or None", given["output_schema"])
        effort = given["reasoning_effort"]
        if effort is not None and not isinstance(effort, str):
            _refuse("reasoning_effort", "a str or None", effort)
        model = given["model"]
        if model is not None and (not isinstance(model, str) or not model.strip()):
            _refuse("model", "a model name or None", model)
        object.__setattr__(self, "extra_args", _strings("extra_args", given["extra_args"]))
        env = given["env"]
        if env is not None and not _is_str_mapping(env):
            _refuse("env", "a mapping of str to str or None", env)
        object.__setattr__(self, "mcp_servers", _servers(given["mcp_servers"]))
        if given["tools"] != ():
            from agentshim.core.tools import tool_tuple

            object.__setattr__(self, "tools", tool_tuple("TurnRequest", "tools", given["tools"]))
        workspace = given["mcp_workspace"]
        if workspace is not None:
            if not isinstance(workspace, (str, os.PathLike)):
                _refuse("mcp_workspace", "a path or None", workspace)
            object.__setattr__(self, "mcp_workspace", Path(workspace))  # pyright: ignore[reportUnknownArgumentType]
        attachments = given["attachments"]
        if isinstance(attachments, (str, bytes)) or not isinstance(attachments, Sequence):
            _refuse(
                "attachments",
                "a sequence of PromptImage, PromptLink or PromptResource",
                attachments,
            )
        attached: tuple[object, ...] = tuple(cast("Sequence[object]", attachments))
        for item in attached:
            if not isinstance(item, (PromptImage, PromptLink, PromptResource)):
                _refuse(
                    "attachments", "a sequence of PromptImage, PromptLink or PromptResource", item
                )
        object.__setattr__(self, "attachments", attached)


def _is_str_mapping(value: object) -> bool:
    if not isinstance(value, Mapping):
        return False
    pairs: list[tuple[object, object]] = list(value.items())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    return all(isinstance(k, str) and isinstance(v, str) for k, v in pairs)


def _servers(value: object) -> tuple[McpServer, ...]:
    expected = "a sequence of StdioMcpServer or HttpMcpServer"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        _refuse("mcp_servers", expected, value)
    items: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    if not items:
        return ()
    # Imported only when servers are given: most turns need no MCP support loaded.
    from agentshim.core.mcp import HttpMcpServer, StdioMcpServer

    servers: list[McpServer] = []
    for item in items:
        if not isinstance(item, (StdioMcpServer, HttpMcpServer)):
            _refuse("mcp_servers", expected, item)
        servers.append(item)
    return tuple(servers)


def _refuse(field: str, expected: str, value: object) -> NoReturn:
    raise InvalidRequestError(
        f"TurnRequest.{field}",
        f"must be {expected}, not {value!r:.200}",
    )


def _strings(field: str, value: object) -> tuple[str, ...]:
    expected = "a sequence of str (one item per argument)"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        _refuse(field, expected, value)
    items: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    strings: list[str] = []
    for item in items:
        if not isinstance(item, str):
            _refuse(field, expected, item)
        strings.append(item)
    return tuple(strings)


class StopReason(enum.Enum):
    """Why the agent ended a turn, where its protocol says (ACP's ``stopReason``)."""

    END_TURN = "end_turn"
    """It finished its answer."""
    MAX_TOKENS = "max_tokens"
    """It reached its token limit: the answer may be cut short."""
    MAX_TURN_REQUESTS = "max_turn_requests"
    """It reached its limit of model requests within one turn: the work may be unfinished."""
    REFUSAL = "refusal"
    """It refused to go on; the agent drops the prompt and what followed from its history."""
    CANCELLED = "cancelled"
    """The turn was cancelled (by the caller's interrupt, or by the agent itself)."""


@dataclass(frozen=True)
class TurnResult:
    """The outcome of a successful (or interrupted) turn.

    ``usage`` is this turn's share. ``context_tokens`` is the prompt size (input including cache
    reads and writes) of the turn's last main-conversation model call: how full the context
    window was, as Claude Code's own meter counts it; None where the CLI does not tell.
    ``context_window`` is the window those tokens fill: what the CLI itself reported for the
    turn's model first (Claude Code's ``modelUsage``), then the catalogue's figure
    (:func:`agentshim.models.context_window_of`); None when neither knows, never a guess.
    ``background_tasks`` are the tasks the turn left running (Claude Code's background
    shells and subagents): while there are any, the agent may start a turn of its own.
    ``stop_reason`` is why the agent ended the turn, where its protocol says (ACP agents);
    None elsewhere. ``notices`` are things the library could not do exactly and the caller should know, such
    as an MCP config file whose original had to be kept next to it because the agent put
    something of its own in its place. ``respawned`` says the conversation's long-lived
    process had ended since its last turn (killed while idle, or dead in that turn): this
    turn started a new one and resumed the conversation in it by id.
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
    notices: tuple[str, ...] = ()
    context_window: int | None = None
    background_tasks: tuple[BackgroundTask, ...] = ()
    stop_reason: StopReason | None = None
    respawned: bool = False


@dataclass(frozen=True, slots=True)
class ParsedTurn:
    """What a parser understood from one turn's output.

    ``error`` is set when the stream itself said the turn failed (or ended before its terminal
    frame); ``error_kind`` classifies it. ``context_window`` is the window the CLI itself
    reported for the turn's model, and ``background_tasks`` what it last said was still
    running in the background. ``notes`` become the turn's ``TurnResult.notices``: what the
    caller should know about a turn that did not fail (an answer cut off at the output-token
    limit, say). A parser never raises for bad input.
    """

    text: str = ""
    structured_output: Any | None = None
    session_id: str | None = None
    usage: ProviderUsage | None = None
    cost_usd: float | None = None
    error: str | None = None
    error_kind: FailureKind | None = None
    context_tokens: int | None = None
    notes: tuple[str, ...] = ()
    context_window: int | None = None
    background_tasks: tuple[BackgroundTask, ...] = ()
