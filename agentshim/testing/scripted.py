"""Scripted turns in each provider's real output format, for consumers' own tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentshim.core.scripting import ToolFailure
from agentshim.core.usage import TokenUsage
from agentshim.execution.executor import CommandRequest
from agentshim.providers import (
    DEFAULT_CATALOG,
    ProviderCatalog,
    get_plugin,
    get_resume_failure_lines,
    get_scripted_lines,
)
from agentshim.testing.executor import FakeRun

__all__ = ["ToolFailure", "installed_mcp_servers", "scripted_resume_failure", "scripted_turn"]


def scripted_turn(
    provider: str,
    *,
    text: str = "",
    session_id: str | None = None,
    usage: TokenUsage | None = None,
    tool_calls: Sequence[tuple[str, Mapping[str, Any], str]] = (),
    structured_output: object | None = None,
    returncode: int = 0,
    catalog: ProviderCatalog = DEFAULT_CATALOG,
) -> FakeRun:
    """Return a FakeRun printing what ``provider``'s CLI prints for such a turn.

    ``tool_calls`` are ``(tool name, arguments, output)``; an output that is a ToolFailure
    makes that call fail. A provider with no native output schema raises ValueError when
    ``structured_output`` is given.
    """
    run = get_scripted_lines(
        provider,
        text=text,
        session_id=session_id,
        usage=usage,
        tool_calls=tool_calls,
        structured_output=structured_output,
        returncode=returncode,
        catalog=catalog,
    )
    return FakeRun(stdout=run.stdout, stderr=run.stderr, returncode=run.returncode)


def scripted_resume_failure(
    provider: str, *, session_id: str | None = None, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> FakeRun:
    """Return a FakeRun failing the way ``provider``'s CLI fails to resume a lost conversation.

    Serve it to a session that has adopted a session id to exercise SessionResumeError.
    """
    run = get_resume_failure_lines(provider, session_id=session_id, catalog=catalog)
    return FakeRun(stdout=run.stdout, stderr=run.stderr, returncode=run.returncode)


def installed_mcp_servers(
    provider: str,
    request: CommandRequest,
    workspace: Path,
    *,
    catalog: ProviderCatalog = DEFAULT_CATALOG,
) -> dict[str, dict[str, Any]]:
    """Return the MCP servers one in-flight turn installed, keyed by name, in canonical shape.

    Call it from inside a FakeExecutor run callback: config files are restored when the turn
    ends.
    """
    plugin = get_plugin(provider, catalog)
    reader = getattr(plugin, "installed_mcp", None)
    if reader is None:
        raise ValueError(f"provider {provider!r} declares no way to read back its MCP servers")
    return reader(request, workspace)
