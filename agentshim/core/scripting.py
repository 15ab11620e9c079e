"""Made-up turns for tests: what a provider's CLI would print, and a tool call that failed."""

from __future__ import annotations

from dataclasses import dataclass

from agentshim.core.errors import InvalidRequestError

__all__ = ["ScriptedRun", "ToolFailure"]


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

    It is a ``str`` (the message) so it fits the ``(name, arguments, output)`` tuple every
    provider's ``scripted_lines`` takes; a provider that does not know it prints a success.
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
