"""Scripted turns in each provider's real output format, for consumers' own tests.

A provider prints them through its plugin's optional ``test_kit``, a :class:`ProviderTestKit`.
Every built-in provider has one; a third-party plugin that wants its turns scripted adds one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.scripting import ScriptedRun, ScriptedToolCall, ScriptedTurn, ToolFailure
from agentshim.core.usage import TokenUsage
from agentshim.execution.executor import CommandRequest
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog, get_plugin
from agentshim.testing.executor import FakeRun

__all__ = [
    "ProviderTestKit",
    "ScriptedRun",
    "ScriptedTurn",
    "ToolFailure",
    "installed_mcp_servers",
    "scripted_resume_failure",
    "scripted_turn",
]


@runtime_checkable
class ProviderTestKit(Protocol):
    """What a provider offers tests: its CLI's real output for made-up turns.

    Optional: a plugin offers one as its ``test_kit`` attribute, and needs none to register
    or to run real turns.
    """

    def scripted_lines(self, turn: ScriptedTurn, /) -> ScriptedRun:
        """Return what the CLI prints, and how it exits, for ``turn``."""
        ...

    def resume_failure_lines(self, *, session_id: str | None = None) -> ScriptedRun:
        """Return what the CLI prints when asked to resume a conversation that is gone."""
        ...

    def installed_mcp_servers(
        self, request: CommandRequest, workspace: Path, /
    ) -> dict[str, dict[str, Any]]:
        """Return the MCP servers one in-flight turn installed, keyed by name, canonical shape.

        A stdio server is ``{"command", "args", "env"}``, an HTTP one ``{"url", "transport"}``;
        a provider with no MCP support returns ``{}``.
        """
        ...


def _test_kit(provider: str, catalog: ProviderCatalog) -> ProviderTestKit:
    kit = getattr(get_plugin(provider, catalog), "test_kit", None)
    if not isinstance(kit, ProviderTestKit):
        raise ProviderCapabilityError(
            f"provider {provider!r} has no test kit, so its output cannot be scripted; give its "
            "plugin a test_kit attribute implementing agentshim.testing.ProviderTestKit "
            "(scripted_lines, resume_failure_lines, installed_mcp_servers)"
        )
    return kit


def _fake_run(run: ScriptedRun) -> FakeRun:
    return FakeRun(stdout=run.stdout, stderr=run.stderr, returncode=run.returncode)


def scripted_turn(
    provider: str,
    *,
    text: str = "",
    session_id: str | None = None,
    usage: TokenUsage | None = None,
    tool_calls: Sequence[ScriptedToolCall] = (),
    structured_output: object | None = None,
    returncode: int = 0,
    catalog: ProviderCatalog = DEFAULT_CATALOG,
) -> FakeRun:
    """Return a FakeRun printing what ``provider``'s CLI prints for such a turn.

    The keywords are the fields of :class:`ScriptedTurn`: ``tool_calls`` are ``(tool name,
    arguments, output)``, and an output that is a ToolFailure makes that call fail. A provider
    with no native output schema raises InvalidRequestError when ``structured_output`` is
    given; a provider whose plugin has no test kit raises ProviderCapabilityError.

    Raises:
        UnknownProviderError: No provider of that name is in ``catalog``.
        ProviderCapabilityError: The provider's plugin has no test kit.
        InvalidRequestError: A keyword has the wrong type, or the provider cannot print such
            a turn.
    """
    # The keywords are ScriptedTurn's fields, in its order.
    turn = ScriptedTurn(text, session_id, usage, tool_calls, structured_output, returncode)
    return _fake_run(_test_kit(provider, catalog).scripted_lines(turn))


def scripted_resume_failure(
    provider: str, *, session_id: str | None = None, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> FakeRun:
    """Return a FakeRun failing the way ``provider``'s CLI fails to resume a lost conversation.

    Serve it to a session that has adopted a session id to exercise SessionResumeError. A
    provider whose plugin has no test kit raises ProviderCapabilityError.
    """
    return _fake_run(_test_kit(provider, catalog).resume_failure_lines(session_id=session_id))


def installed_mcp_servers(
    provider: str,
    request: CommandRequest,
    workspace: Path,
    *,
    catalog: ProviderCatalog = DEFAULT_CATALOG,
) -> dict[str, dict[str, Any]]:
    """Return the MCP servers one in-flight turn installed, keyed by name, in canonical shape.

    Call it from inside a FakeExecutor run callback: config files are restored when the turn
    ends. A provider whose plugin has no test kit raises ProviderCapabilityError.
    """
    return _test_kit(provider, catalog).installed_mcp_servers(request, workspace)
