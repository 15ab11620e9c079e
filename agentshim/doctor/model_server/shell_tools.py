"""Find the shell tool a request offers and build its arguments for one command.

Each CLI names its shell tool differently and wants a different argument shape; a script says
``ToolCall(command="echo hi")`` and this module turns it into what that CLI expects.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._json import JsonValue, as_list, as_object, as_str
from .facts import OfferedTool, RequestFacts
from .kinds import Api

__all__ = ["shell_call"]

#: Known shell tools, most specific first: (tool name, command field, command is argv).
_KNOWN: tuple[tuple[str, str, bool], ...] = (
    ("Bash", "command", False),  # Claude Code
    ("exec_command", "cmd", False),  # Codex unified exec
    ("shell_command", "command", False),  # Codex
    ("shell", "command", True),  # Codex classic: argv list
    ("run_shell_command", "command", False),  # Gemini CLI
    ("bash", "command", False),  # opencode, Pi, Copilot CLI
)

#: What a model of each API would call when the request offers no shell tool at all.
_FALLBACK: Mapping[Api | None, str] = {
    Api.ANTHROPIC_MESSAGES: "Bash",
    Api.OPENAI_RESPONSES: "exec_command",
    Api.OPENAI_CHAT: "bash",
    Api.GEMINI: "run_shell_command",
    None: "bash",
}


def _command_value(command: str, as_argv: bool) -> JsonValue:
    return ["bash", "-lc", command] if as_argv else command


def _required_extras(tool: OfferedTool, command_field: str, command: str) -> dict[str, JsonValue]:
    """Fill the string fields the tool's schema requires besides the command."""
    properties = as_object(tool.schema.get("properties"))
    extras: dict[str, JsonValue] = {}
    for raw_name in as_list(tool.schema.get("required")):
        name = as_str(raw_name)
        if not name or name == command_field:
            continue
        spec = as_object(properties.get(name))
        choices = as_list(spec.get("enum"))
        if choices and isinstance(choices[0], str):
            extras[name] = choices[0]
        elif spec.get("type") == "string":
            extras[name] = f"Run {command}" if name == "description" else ""
    return extras


def _is_argv(tool: OfferedTool, command_field: str, default: bool) -> bool:
    spec = as_object(as_object(tool.schema.get("properties")).get(command_field))
    kind = spec.get("type")
    if kind == "array":
        return True
    if kind == "string":
        return False
    return default


def shell_call(
    facts: RequestFacts, command: str, extra: Mapping[str, JsonValue] | None = None
) -> tuple[str, dict[str, JsonValue]]:
    """Return ``(tool name, arguments)`` that run ``command`` with the offered shell tool.

    ``extra`` arguments are merged over the built ones. When no known shell tool is offered,
    the name a model of that API would call is used with a ``command`` string.
    """
    offered = {tool.name: tool for tool in facts.tools}
    for name, command_field, argv_default in _KNOWN:
        tool = offered.get(name)
        if tool is None:
            continue
        as_argv = _is_argv(tool, command_field, argv_default)
        arguments: dict[str, JsonValue] = {command_field: _command_value(command, as_argv)}
        arguments.update(_required_extras(tool, command_field, command))
        arguments.update(extra or {})
        return name, arguments
    name = _FALLBACK.get(facts.api, "bash")
    field_name = "cmd" if name == "exec_command" else "command"
    fallback: dict[str, JsonValue] = {field_name: command}
    fallback.update(extra or {})
    return name, fallback
