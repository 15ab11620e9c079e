"""Gemini CLI's ACP dialect, and the ACP transport replaying recorded ``gemini --acp`` sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.acp.dialect import AcpArgv
from agentshim.acp.jsonrpc import Notification, Response, RpcError, read_message
from agentshim.acp.updates import UpdateReader
from agentshim.core import events as ev
from agentshim.core.errors import CliExitError, FailureKind, InvalidRequestError, SessionResumeError
from agentshim.core.permissions import NativePermissions
from agentshim.providers.gemini.acp import (
    GEMINI_ACP,
    acp_argv,
    classify_rpc_error,
    is_notice,
    usage,
)
from agentshim.testing.recording import RecordingEventHandler
from tests.unit.acp.rigs import (
    RecordedMainSession,
    turn_after_load,
)

FIXTURES = Path(__file__).parents[3] / "fixtures" / "gemini" / "acp"
MAIN_SESSION = "52ef14f3-7988-4f13-a645-cb8c3d81aef9"
HELLO = "Hello from the scripted model."
P = "gemini"
WRITE = NativePermissions.workspace_write()


def recorded_lines(case: str, direction: str) -> Iterator[str]:
    for raw in (FIXTURES / case / "transcript.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        if record["dir"] == direction and isinstance(record["data"], str):
            yield from (line for line in record["data"].splitlines() if line.startswith("{"))


class TestArgv:
    @pytest.mark.parametrize(
        ("permissions", "tail"),
        [
            (NativePermissions.bypass(), ["--approval-mode", "yolo"]),
            (NativePermissions.read_only(), ["--approval-mode", "plan"]),
            (
                NativePermissions.workspace_write(["/data"]),
                ["--approval-mode", "auto_edit", "--include-directories", "/data"],
            ),
        ],
    )
    def test_permissions_map_to_approval_modes(
        self, permissions: NativePermissions, tail: list[str]
    ) -> None:
        argv = acp_argv(AcpArgv(binary_path="gemini", model=None, permissions=permissions))
        assert argv == ["gemini", "--acp", *tail]

    def test_a_model_that_reads_as_a_flag_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError):
            acp_argv(
                AcpArgv(
                    binary_path="gemini", model="--yolo", permissions=NativePermissions.bypass()
                )
            )


class TestFailureClassification:
    @pytest.mark.parametrize(
        ("case", "kind"),
        [("ERR500", FailureKind.TRANSIENT), ("ERRCTX", FailureKind.CONTEXT_OVERFLOW)],
    )
    def test_recorded_prompt_errors_are_classified(self, case: str, kind: FailureKind) -> None:
        errors = [
            message.error
            for line in recorded_lines("session_main", "out")
            if isinstance(message := read_message(json.loads(line)), Response)
            and message.error is not None
        ]
        by_case = {"ERR500": errors[0], "ERRCTX": errors[1]}
        assert classify_rpc_error(by_case[case]) is kind

    @pytest.mark.parametrize(
        ("code", "kind"),
        [
            (401, FailureKind.AUTH),
            (403, FailureKind.AUTH),
            (429, FailureKind.TRANSIENT),
            (503, FailureKind.TRANSIENT),
            (-32603, FailureKind.OTHER),
        ],
    )
    def test_the_code_is_the_http_status(self, code: int, kind: FailureKind) -> None:
        assert classify_rpc_error(RpcError(code, "{}", {})) is kind

    @given(st.integers(), st.text(max_size=200))
    def test_any_error_classifies_to_a_kind(self, code: int, message: str) -> None:
        assert isinstance(classify_rpc_error(RpcError(code, message, {})), FailureKind)


class TestUsageAndText:
    def test_usage_is_the_turns_quota_with_the_named_model(self) -> None:
        results = [
            message.result
            for line in recorded_lines("session_main", "out")
            if isinstance(message := read_message(json.loads(line)), Response)
            and message.result is not None
            and "stopReason" in message.result
        ]
        tool_turn = usage(results[1])
        assert tool_turn is not None
        assert (tool_turn.tokens.input_tokens, tool_turn.tokens.output_tokens) == (2400, 35)
        assert tool_turn.model == "gemini-3.8-flash"
        cancelled = [r for r in results if r["stopReason"] == "cancelled"]
        assert cancelled
        assert all(usage(r) is None for r in cancelled)

    def test_mode_updates_are_notices(self) -> None:
        assert is_notice("[MODE_UPDATE] yolo")
        assert not is_notice("The mode is [MODE_UPDATE]")


class TestTheModeUpdate:
    def test_the_mode_update_text_is_kept_out_of_the_answer(self) -> None:
        events = RecordingEventHandler()
        reader = UpdateReader(events, is_notice)
        for line in recorded_lines("session_fs_plan_mode", "out"):
            message = read_message(json.loads(line))
            if isinstance(message, Notification):
                reader.read(message.params["update"])
        assert "[MODE_UPDATE]" not in reader.text
        assert reader.notices == ["[MODE_UPDATE] yolo"]


class TestRecordedSession:
    def test_the_main_session_replays_turn_by_turn(self) -> None:
        main = RecordedMainSession(P, GEMINI_ACP)
        plain, _ = main.turn("Say hello.")
        assert (plain.text, plain.session_id) == (HELLO, MAIN_SESSION)
        assert (plain.usage.tokens.input_tokens, plain.usage.tokens.output_tokens) == (1200, 32)

        echo, events = main.turn("TOOLECHO run echo hello")
        assert echo.text == "Running echo.Done."
        (call,) = events.of_type(ev.ToolCall)
        assert (call.tool, call.kind.value) == ("echo hello", "command")
        assert events.of_type(ev.ToolResult)[0].exit_code == 0

        rejected, events = main.turn("TOOLREJ touch a file")
        assert rejected.text == "Done."
        assert [a.allowed for a in events.of_type(ev.ApprovalAnswered)] == [False]
        assert events.of_type(ev.ToolCall)[0].tool == "touch rejected.txt"

        mcp, events = main.turn("MCPCALL call the ping tool")
        assert [a.allowed for a in events.of_type(ev.ApprovalAnswered)] == [True]
        assert "pong from fakemcp" in events.of_type(ev.ToolResult)[0].stdout
        assert mcp.text == "Done."

        slow_a, _, drip = main.interrupted_turns()
        assert slow_a.of_type(ev.ToolResult)[0].stdout == "Command cancelled by user."
        assert drip.startswith("yyyyyyyy")

        with pytest.raises(CliExitError) as failed:
            main.turn("ERR500 now")
        assert failed.value.kind is FailureKind.TRANSIENT
        assert "scripted 500 boom" in str(failed.value)
        with pytest.raises(CliExitError) as overflow:
            main.turn("ERRCTX now")
        assert overflow.value.kind is FailureKind.CONTEXT_OVERFLOW

        last, _ = main.turn("Say hello after errors.")
        assert last.text == HELLO
        assert main.chosen() == ["cancel", "proceed_once", "proceed_once", "cancelled"]

    def test_a_loaded_session_replays_no_history_into_the_turn(self) -> None:
        result, events = turn_after_load(P, GEMINI_ACP, "session_load", MAIN_SESSION)
        assert result.text == HELLO
        assert result.resumed
        assert [e.text for e in events.of_type(ev.AssistantText)] == [
            "Hello from the s",
            "cripted model.",
        ]
        (suppressed,) = [
            e.detail for e in events.of_type(ev.Lifecycle) if e.kind == "replay_suppressed"
        ]
        # Every update before the first prompt: the history, and its commands list.
        assert suppressed.startswith("24 ")

    def test_a_load_in_the_minute_of_creation_is_a_lost_session(self) -> None:
        gone = "bb3563b9-82bf-45db-94ca-5171c94e3fe2"
        with pytest.raises(SessionResumeError) as caught:
            turn_after_load(P, GEMINI_ACP, "session_load_run1_clobbered", gone)
        assert caught.value.session_id == gone
        assert "No previous sessions found" in str(caught.value)
