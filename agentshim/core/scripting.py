"""Made-up turns for tests: what one holds, what its CLI would print, a tool call that failed.

A provider's test kit turns a :class:`ScriptedTurn` into a :class:`ScriptedRun` in its CLI's
real output format; ``agentshim.testing.scripted_turn`` builds the turn from keywords.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from agentshim.core.errors import InvalidRequestError
from agentshim.core.usage import TokenUsage

__all__ = [
    "ScriptedRun",
    "ScriptedToolCall",
    "ScriptedTurn",
    "ToolFailure",
    "refuse_structured_output",
]

ScriptedToolCall = tuple[str, Mapping[str, Any], str]
"""One tool call of a scripted turn: the tool's name, its arguments and its output."""


class ToolFailure(str):
    """The output of a scripted tool call that failed: the failure message, and an exit code.

    Give it as a ``tool_calls`` entry's output, ``("Bash", {"command": "ls /x"},
    ToolFailure("ls: cannot access '/x'", exit_code=2))``, and the provider prints the call
    failing the way its CLI does: Claude a ``tool_result`` with ``is_error``, Codex a
    ``command_execution`` with ``status: "failed"`` and the exit code, Gemini a ``tool_result``
    with ``status: "error"``, opencode a shell ``tool_use`` with its exit code (other tools
    ``status: "error"``), Copilot a shell ``exitCode`` (other tools ``success: false``) and Pi
    a ``tool_execution_end`` with ``isError``. The parsed ToolResult has an empty stdout, the
    message on stderr and a nonzero exit code. ``exit_code`` is printed where the CLI prints
    one; Gemini, and Claude and Pi for tools other than their shell, print none.

    It is a ``str`` (the message) so it fits the ``(name, arguments, output)`` triple of
    :attr:`ScriptedTurn.tool_calls`; a provider that does not know it prints a success.
    """

    exit_code: int

    def __new__(cls, message: str, exit_code: int = 1) -> ToolFailure:
        """Make the failure; ``exit_code`` must be nonzero (InvalidRequestError otherwise)."""
        if isinstance(exit_code, bool) or exit_code == 0:
            raise InvalidRequestError(
                "exit_code",
                f"a failed tool call needs a nonzero exit code, not {exit_code!r}",
            )
        failure = super().__new__(cls, message)
        failure.exit_code = exit_code
        return failure

    def __repr__(self) -> str:
        return f"ToolFailure({str.__repr__(self)}, exit_code={self.exit_code})"


@dataclass(frozen=True, slots=True)
class ScriptedRun:
    """A provider's real output format for a made-up turn: what the CLI would print and exit."""

    stdout: tuple[str, ...] = ()
    stderr: tuple[str, ...] = ()
    returncode: int = 0


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    """A made-up turn, as a provider's test kit prints it in its CLI's real output format.

    ``text`` is the answer. ``tool_calls`` are ``(tool name, arguments, output)``, run before
    the answer; an output that is a :class:`ToolFailure` makes that call fail. ``usage`` is
    the turn's normalized usage (None: the provider's made-up default). ``session_id`` is the
    conversation id the CLI reports (None: one the provider makes up). ``structured_output``
    is the payload of a turn with an output schema; a provider whose CLI has none refuses it
    with InvalidRequestError. A nonzero ``returncode`` makes the CLI report the turn failed
    and exit with that code.

    Raises:
        InvalidRequestError: a field has the wrong type, or a tool call is not a
            ``(str, mapping, str)`` triple.
    """

    text: str = ""
    session_id: str | None = None
    usage: TokenUsage | None = None
    tool_calls: Sequence[ScriptedToolCall] = ()
    structured_output: object | None = None
    returncode: int = 0

    def __post_init__(self) -> None:
        given: dict[str, object] = {name: getattr(self, name) for name in self.__slots__}
        if not isinstance(given["text"], str):
            _refuse("text", "a str", given["text"])
        if given["session_id"] is not None and not isinstance(given["session_id"], str):
            _refuse("session_id", "a str or None", given["session_id"])
        if given["usage"] is not None and not isinstance(given["usage"], TokenUsage):
            _refuse("usage", "a TokenUsage or None", given["usage"])
        returncode = given["returncode"]
        if isinstance(returncode, bool) or not isinstance(returncode, int):
            _refuse("returncode", "an int", returncode)
        object.__setattr__(self, "tool_calls", _tool_calls(given["tool_calls"]))


def _tool_calls(value: object) -> tuple[ScriptedToolCall, ...]:
    expected = "a sequence of (tool name, arguments mapping, output str) triples"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        _refuse("tool_calls", expected, value)
    items: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    calls: list[ScriptedToolCall] = []
    for index, item in enumerate(items):
        parts = tuple(cast("Sequence[object]", item)) if isinstance(item, (tuple, list)) else ()
        if len(parts) != 3:
            _refuse("tool_calls", expected, items[index])
        name, arguments, output = parts
        if not (
            isinstance(name, str) and isinstance(arguments, Mapping) and isinstance(output, str)
        ):
            _refuse("tool_calls", expected, items[index])
        calls.append((name, cast("Mapping[str, Any]", arguments), output))
    return tuple(calls)


def _refuse(field: str, expected: str, value: object) -> NoReturn:
    raise InvalidRequestError(f"ScriptedTurn.{field}", f"must be {expected}, not {value!r:.200}")


def refuse_structured_output(script: ScriptedTurn, cli: str, provider: str) -> None:
    """Refuse ``script`` when it carries structured output that ``cli`` cannot print.

    For the test kit of a provider whose CLI has no native output schema: its real output has
    no place for a structured answer, so a made-up one would be a turn the CLI never prints.
    ``cli`` is the CLI's display name, ``provider`` the provider's name.

    Raises:
        InvalidRequestError: ``script.structured_output`` is set; the message says to put the
            JSON in ``text`` instead.
    """
    if script.structured_output is not None:
        raise InvalidRequestError(
            "structured_output",
            "the provider has no native output schema",
            f"{cli} has no native output schema, so a scripted {provider} turn cannot carry "
            "structured_output; put the JSON in text instead",
        )
