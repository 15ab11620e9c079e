from __future__ import annotations

import dataclasses
import io
import typing

import pytest

import agentshim
from agentshim.core import events
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    CallbackEventHandler,
    CompositeEventHandler,
    ConsoleEventHandler,
    NullEventHandler,
    Plan,
    PlanItem,
    ProviderErrorReported,
    Reasoning,
    ToolCall,
    ToolKind,
    ToolResult,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.usage import ProviderUsage, TokenUsage


class TestValues:
    def test_events_are_frozen(self) -> None:
        event = AssistantText("hi")
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.text = "other"  # type: ignore[misc]

    def test_tool_kind_defaults_to_other(self) -> None:
        assert ToolCall("1", "Bash", {"command": "ls"}).kind is ToolKind.OTHER

    def test_failed_tool_result(self) -> None:
        assert ToolResult("1", "Bash", stderr="boom", exit_code=2).failed
        assert not ToolResult("1", "Bash", stdout="ok", exit_code=0).failed


class TestNames:
    def test_only_exceptions_are_named_error(self) -> None:
        for module in (events, agentshim):
            for name in module.__all__:
                value = getattr(module, name)
                if isinstance(value, type) and name.endswith("Error"):
                    assert issubclass(value, Exception), f"{module.__name__}.{name}"

    def test_no_event_is_named_error(self) -> None:
        for event_type in typing.get_args(events.AgentEvent):
            assert not event_type.__name__.endswith(("Error", "Exception")), event_type

    def test_the_reported_error_event_cannot_be_caught_as_an_exception(self) -> None:
        assert not hasattr(agentshim, "ProviderError")
        assert not issubclass(ProviderErrorReported, BaseException)


class TestHandlers:
    def test_composite_fans_out_in_order(self) -> None:
        seen: list[tuple[str, AgentEvent]] = []
        first = CallbackEventHandler(lambda e: seen.append(("first", e)))
        second = CallbackEventHandler(lambda e: seen.append(("second", e)))
        event = AssistantText("x")
        CompositeEventHandler([first, NullEventHandler(), second]).on_event(event)
        assert seen == [("first", event), ("second", event)]


class TestConsole:
    def render(self, *events: AgentEvent, **options: object) -> str:
        stream = io.StringIO()
        handler = ConsoleEventHandler(stream=stream, **options)  # type: ignore[arg-type]
        for event in events:
            handler.on_event(event)
        return stream.getvalue()

    def test_renders_text_tools_and_usage(self) -> None:
        out = self.render(
            AssistantText("Hello"),
            ToolCall("t1", "Bash", {"command": "ls -la"}),
            ToolResult("t1", "Bash", stdout="a\nb\n", exit_code=0),
            UsageReport(ProviderUsage(tokens=TokenUsage(input_tokens=10, output_tokens=3)), 0.5),
        )
        assert "Hello" in out
        assert "Bash ls -la" in out
        assert "| a" in out
        assert "10 in" in out
        assert "$0.5000" in out

    def test_shows_one_usage_line_a_turn_not_one_a_call(self) -> None:
        call = UsageReport(
            ProviderUsage(tokens=TokenUsage(input_tokens=7, output_tokens=1)),
            scope=UsageScope.CALL,
        )
        turn = UsageReport(ProviderUsage(tokens=TokenUsage(input_tokens=20, output_tokens=9)))
        out = self.render(call, turn)
        assert "7 in" not in out
        assert "20 in" in out

    def test_truncates_long_tool_output(self) -> None:
        body = "\n".join(f"line {i}" for i in range(100))
        out = self.render(
            ToolResult("t", "Bash", stdout=body, exit_code=0), max_tool_output_lines=3
        )
        assert "line 2" in out
        assert "line 3" not in out
        assert "97 more lines" in out

    def test_failed_tool_shows_stderr(self) -> None:
        out = self.render(ToolResult("t", "Bash", stderr="denied", exit_code=1))
        assert "exit 1" in out
        assert "denied" in out

    def test_no_colour_on_a_non_tty(self) -> None:
        out = self.render(ProviderErrorReported("bad"), Reasoning("hmm"))
        assert "\033[" not in out

    def test_colour_when_forced(self) -> None:
        assert "\033[" in self.render(ProviderErrorReported("bad"), color=True)

    def test_a_long_line_of_tool_output_is_cut(self) -> None:
        out = self.render(
            ToolResult("t", "Read", stdout="x" * 5000 + "END", exit_code=0), max_line_chars=50
        )
        assert "x" * 50 + "... (4953 more characters)" in out
        assert "END" not in out
        assert len(out) < 200

    def test_control_characters_never_reach_the_terminal(self) -> None:
        hostile = "\033[2J\033]0;owned\007\x9b31m\x7f"
        out = self.render(
            AssistantText(f"text {hostile}", delta=True),
            AssistantText(f"whole {hostile}"),
            Reasoning(hostile),
            ToolCall("t", "Bash", {"command": f"echo {hostile}"}),
            ToolResult("t", "Bash", stdout=f"out {hostile}\n\tindented", exit_code=0),
            ToolResult("t", "Bash", stderr=hostile, exit_code=1),
            ProviderErrorReported(hostile),
            Plan((PlanItem(hostile, "pending"),)),
        )
        for raw in ("\033", "\007", "\x9b", "\x7f"):
            assert raw not in out
        assert "\\x1b[2J" in out
        assert "\tindented" in out

    @pytest.mark.parametrize(
        "code",
        [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)],
        ids=lambda code: f"U+{code:04X}",
    )
    def test_bidi_controls_are_shown_escaped(self, code: int) -> None:
        hostile = f"rm -rf {chr(code)}/ safe"
        out = self.render(
            AssistantText(f"text {hostile}", delta=True),
            AssistantText(f"whole {hostile}"),
            Reasoning(hostile),
            ToolCall("t", "Bash", {"command": hostile}),
            ToolResult("t", "Bash", stdout=hostile, exit_code=0),
            ToolResult("t", "Bash", stderr=hostile, exit_code=1),
            ProviderErrorReported(hostile),
            Plan((PlanItem(hostile, "pending"),)),
        )
        assert chr(code) not in out
        assert out.count(f"rm -rf \\u{code:04x}/ safe") == 8

    def test_other_text_outside_ascii_is_shown_as_is(self) -> None:
        out = self.render(AssistantText("naïve café: שלום, 你好, \u2014 done"))
        assert "naïve café: שלום, 你好, \u2014 done" in out

    def test_plan_items(self) -> None:
        out = self.render(Plan((PlanItem("write tests", "completed"), PlanItem("ship", "pending"))))
        assert "[x] write tests" in out
        assert "[ ] ship" in out


class TestConsoleDeltas:
    def test_streamed_pieces_are_joined_on_one_line(self) -> None:
        stream = io.StringIO()
        handler = ConsoleEventHandler(stream=stream)
        for piece in ("Hel", "lo ", "world"):
            handler.on_event(AssistantText(piece, delta=True))
        handler.on_event(ToolCall("t", "Bash", {"command": "ls"}))
        assert stream.getvalue().splitlines() == ["Hello world", "> Bash ls"]

    def test_end_line_closes_streamed_text_once(self) -> None:
        stream = io.StringIO()
        handler = ConsoleEventHandler(stream=stream)
        handler.on_event(AssistantText("Hello", delta=True))
        handler.end_line()
        handler.end_line()  # nothing open any more: nothing written
        assert stream.getvalue() == "Hello\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestConsoleColourAndWords:
    def test_no_color_turns_colour_off_on_a_terminal(self, monkeypatch: pytest.MonkeyPatch) -> None:
        call = ToolCall("t", "Bash", {"command": "ls"})
        monkeypatch.delenv("NO_COLOR", raising=False)
        coloured = _Terminal()
        ConsoleEventHandler(stream=coloured).on_event(call)
        assert "\x1b[" in coloured.getvalue()
        monkeypatch.setenv("NO_COLOR", "1")
        plain = _Terminal()
        ConsoleEventHandler(stream=plain).on_event(call)
        assert plain.getvalue() == "> Bash ls\n"

    @pytest.mark.parametrize(
        ("reason", "shown"),
        [
            ("interrupted on request", "interrupted on request"),
            ("interrupted", "interrupted"),
            ("the user pressed Esc", "interrupted: the user pressed Esc"),
        ],
    )
    def test_an_interruption_is_said_once(self, reason: str, shown: str) -> None:
        stream = io.StringIO()
        ConsoleEventHandler(stream=stream).on_event(TurnInterrupted(reason))
        assert stream.getvalue() == shown + "\n"
