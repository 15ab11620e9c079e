"""What one turn may not change on a long-lived process, whose argv, env and cwd are fixed."""

from __future__ import annotations

from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.turn import TurnRequest

__all__ = ["refuse_fixed_changes"]


def refuse_fixed_changes(
    cli: str,
    request: TurnRequest,
    spec: ConversationSpec,
    *,
    also: tuple[str, ...] = (),
    takes: tuple[str, ...] = (),
    note: str = "",
) -> None:
    """Refuse a turn that asks for what its running process was not started with.

    That is its own output schema, env, extra args, cwd, MCP servers, tools or reasoning effort,
    and prompt attachments unless ``takes`` names them, plus the names in ``also`` (what the
    transport itself cannot switch in band); ``note`` adds why, in the message.

    Raises:
        ProviderCapabilityError: naming every field refused, before anything is written.
    """
    refused: list[str] = []
    if request.output_schema is not None:
        refused.append("output_schema")
    if request.env:
        refused.append("env")
    if request.extra_args:
        refused.append("extra_args")
    if request.cwd is not None and request.cwd != spec.cwd:
        refused.append("cwd")
    if request.mcp_servers and tuple(request.mcp_servers) != tuple(spec.mcp_servers):
        refused.append("mcp_servers")
    if request.tools and tuple(request.tools) != tuple(spec.tools):
        refused.append("tools")
    if request.reasoning_effort is not None and request.reasoning_effort != spec.reasoning_effort:
        refused.append("reasoning_effort")
    if request.attachments and "attachments" not in takes:
        refused.append("attachments")
    refused.extend(name for name in also if name not in refused)
    if refused:
        raise ProviderCapabilityError(
            f"a long-lived {cli} process cannot change {', '.join(refused)} for one turn"
            f"{note}; set them on the session (Agent.start_session) or run this turn on "
            "TransportKind.ONE_SHOT"
        )
