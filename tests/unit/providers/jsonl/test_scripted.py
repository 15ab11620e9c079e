from __future__ import annotations

from agentshim.core.events import AgentEvent, ToolResult
from agentshim.core.scripting import ToolFailure
from agentshim.core.usage import TokenUsage
from agentshim.providers.jsonl import JsonlStreamParser, scripted_lines
from agentshim.testing import ScriptedTurn


def test_a_scripted_turn_parses_back() -> None:
    run = scripted_lines(
        ScriptedTurn(
            text="done",
            session_id="h-2",
            usage=TokenUsage(input_tokens=7, output_tokens=3),
            tool_calls=[("shell", {"command": "ls /x"}, ToolFailure("no /x", exit_code=2))],
        )
    )
    events: list[AgentEvent] = []
    parser = JsonlStreamParser(events.append)
    for line in run.stdout:
        parser.feed_stdout(line)
    turn = parser.finish()
    assert (turn.text, turn.session_id) == ("done", "h-2")
    assert turn.usage is not None
    assert turn.usage.tokens.input_tokens == 7
    (failed,) = [e for e in events if isinstance(e, ToolResult)]
    assert (failed.stderr, failed.exit_code, failed.failed) == ("no /x", 2, True)


def test_a_failed_scripted_turn_exits_with_its_code() -> None:
    run = scripted_lines(ScriptedTurn(text="x", returncode=4))
    assert run.returncode == 4
