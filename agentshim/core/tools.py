"""Python functions as tools the agent can call: the :class:`Tool` value and :func:`tool`.

A tool is a plain synchronous function with a name, a description and a JSON Schema for its
arguments (derived from the annotations by :mod:`agentshim.core.tool_schema`, or given).
A turn passes tools on ``TurnRequest.tools`` (a conversation on ``ConversationSpec.tools``);
agentshim serves them to the CLI over MCP for as long as the turn or conversation runs, and
each call runs the function on the thread that runs the turn. See ``docs/tools.md``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, overload

from agentshim.core._checks import matching, seconds, sequence
from agentshim.core._error_base import InvalidRequestError

__all__ = ["DEFAULT_TOOL_TIMEOUT", "TOOL_SERVER_NAME", "Tool", "tool", "tool_tuple"]

DEFAULT_TOOL_TIMEOUT = 60.0
"""Seconds a call may take before its result is replaced by a timeout error."""

TOOL_SERVER_NAME = "agentshim"
"""The MCP server name the CLI sees the tools under (``mcp__agentshim__<tool>`` in Claude)."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,47}")


def _frozen(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(schema))


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A Python function the agent may call, with what the agent is told about it.

    ``name`` is 1-48 letters, digits, ``_`` or ``-`` starting with a letter (the CLI puts
    its own prefix in front); ``input_schema`` a JSON Schema object for the arguments;
    ``timeout`` how long a call may take before the agent gets a timeout error instead of
    the result, on time (the function runs on a thread of its own and goes on to its end,
    its result dropped: Python cannot stop it). ``derived`` says the schema came from the annotations, so a
    call's arguments are checked against them and dataclasses and enums are built.
    Build one with :func:`tool`; invalid values raise InvalidRequestError.
    """

    name: str
    description: str
    function: Callable[..., object]
    input_schema: Mapping[str, Any] = field(default_factory=lambda: _frozen({"type": "object"}))
    timeout: float = DEFAULT_TOOL_TIMEOUT
    derived: bool = False

    def __post_init__(self) -> None:
        hint = (
            f"tool name {self.name!r} is invalid; use 1-48 letters, digits, '_' or '-', "
            "starting with a letter"
        )
        matching("Tool", "name", self.name, _NAME, "a valid tool name", hint)
        if not isinstance(self.description, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "Tool.description", "not a str", f"tool {self.name!r} needs a str description"
            )
        if not callable(self.function):
            raise InvalidRequestError(
                "Tool.function",
                f"{self.function!r:.60} is not callable",
                f"tool {self.name!r} needs a function to call",
            )
        if inspect.iscoroutinefunction(self.function) or inspect.isasyncgenfunction(self.function):
            raise InvalidRequestError(
                "Tool.function",
                "is async",
                f"tool {self.name!r} is an async function; tools are synchronous (they run on "
                "the turn's thread): pass a plain function",
            )
        schema = self.input_schema
        if not isinstance(schema, Mapping) or schema.get("type") != "object":  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "Tool.input_schema",
                "not a JSON Schema of an object",
                f"tool {self.name!r} input_schema must be a JSON Schema object with "
                '"type": "object" (the agent passes arguments by name)',
            )
        object.__setattr__(self, "input_schema", _frozen(schema))
        object.__setattr__(self, "timeout", seconds("Tool", "timeout", self.timeout, positive=True))

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        """Call the function directly, as if it were not a tool."""
        return self.function(*args, **kwargs)


@overload
def tool(function: Callable[..., object], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_TOOL_TIMEOUT,
) -> Callable[[Callable[..., object]], Tool]: ...
def tool(
    function: Callable[..., object] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_TOOL_TIMEOUT,
) -> Tool | Callable[[Callable[..., object]], Tool]:
    """Make ``function`` a :class:`Tool`; used bare (``@tool``), with options, or called.

    The name defaults to the function's, the description to its docstring, and the schema
    to one derived from its annotations (see :func:`agentshim.core.tool_schema
    .arguments_schema`); ``input_schema`` replaces the derived one, and the arguments are
    then passed as the agent sent them.

    Raises:
        InvalidRequestError: an async function, a bad name or schema, an annotation with no
            JSON Schema, or a timeout that is not a positive number of seconds.
    """

    def make(fn: Callable[..., object]) -> Tool:
        from agentshim.core.tool_schema import arguments_schema

        derived = input_schema is None
        schema = arguments_schema(fn) if input_schema is None else input_schema
        text = description if description is not None else inspect.getdoc(fn) or ""
        return Tool(
            name=name if name is not None else getattr(fn, "__name__", ""),
            description=text,
            function=fn,
            input_schema=schema,
            timeout=timeout,
            derived=derived,
        )

    return make(function) if function is not None else make


def tool_tuple(owner: str, field_name: str, value: object) -> tuple[Tool, ...]:
    """``value`` (a sequence of Tool values) as a tuple; names must be unique.

    A plain function in the sequence is made a tool with :func:`tool`.

    Raises:
        InvalidRequestError: an item is neither a Tool nor a function, or two share a name.
    """
    items = sequence(owner, field_name, value, "Tool values such as (tool(my_function),)")
    tools: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            tools.append(item)
        elif callable(item) and not isinstance(item, type):
            tools.append(tool(item))
        else:
            raise InvalidRequestError(
                f"{owner}.{field_name}",
                f"{item!r:.80} is not a Tool",
                f"{owner}.{field_name} holds {item!r:.80}, which is neither a Tool nor a "
                "function; wrap it with agentshim.tools.tool",
            )
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidRequestError(
            f"{owner}.{field_name}",
            f"tool name(s) {', '.join(twice)} given twice",
            f"{owner}.{field_name} names {', '.join(twice)} more than once; give every tool "
            "its own name",
        )
    return tuple(tools)
