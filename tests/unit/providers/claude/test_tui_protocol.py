"""The TUI transport's terminal protocol: sanitized pastes, screen words, dialogs, hooks."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.events import ToolKind
from agentshim.providers.claude.tui_protocol import (
    DOWN,
    ENTER,
    EVENTS_FILE,
    auth_marker,
    dialog_answer,
    hook_output,
    munged_cwd,
    parse_hook_line,
    paste,
    sanitize_prompt,
    screen_text,
    send_answer,
    tui_settings,
    weekly_limit_used,
)

CAPTURES = Path(__file__).resolve().parents[3] / "fixtures" / "claude" / "tui"
_C1 = {chr(code) for code in range(0x80, 0xA0)}
_C0_DROPPED = {chr(code) for code in range(0x20)} - {"\n", "\t"}


class TestSanitize:
    @settings(max_examples=300)
    @given(st.text())
    def test_no_control_but_lf_and_tab_survives(self, text: str) -> None:
        out = sanitize_prompt(text)
        assert "\x1b" not in out
        assert not set(out) & _C1
        assert not set(out) & _C0_DROPPED
        assert "\x7f" not in out

    @settings(max_examples=300)
    @given(st.text())
    def test_lf_and_tab_are_kept_and_cr_becomes_lf(self, text: str) -> None:
        out = sanitize_prompt(text)
        normalized = text.replace("\r\n", "\n").replace("\r", "\n")
        assert out.count("\n") == normalized.count("\n")
        assert out.count("\t") == text.count("\t")

    @settings(max_examples=200)
    @given(st.text())
    def test_the_paste_frame_holds_exactly_one_start_and_one_end(self, text: str) -> None:
        framed = paste(text)
        assert framed.startswith(b"\x1b[200~")
        assert framed.endswith(b"\x1b[201~")
        assert framed.count(b"\x1b") == 2

    def test_embedded_paste_end_cannot_close_the_paste(self) -> None:
        assert sanitize_prompt("a\x1b[201~b\r\nc\rd\te\x00\x9b") == "a[201~b\nc\nd\te"

    def test_plain_text_is_unchanged(self) -> None:
        text = "line one\nline two\twith tab, ünïcode ✓"
        assert sanitize_prompt(text) == text


class TestScreen:
    def test_column_moves_read_as_spaces(self) -> None:
        raw = "\x1b[2GYes,\x1b[9GI\x1b[11Gtrust\x1b[17Gthis\x1b[22Gfolder\r\r\n"
        assert screen_text(raw).strip() == "Yes, I trust this folder"

    def test_osc_and_csi_sequences_go(self) -> None:
        raw = "\x1b]0;\u2733 Claude Code\x07\x1b[?2004h\x1b[1mbold\x1b[0m\x1b[>0q\x1b[c"
        assert screen_text(raw) == "bold"

    @given(st.text())
    def test_no_escape_survives(self, text: str) -> None:
        assert "\x1b" not in screen_text(text)


def _captured_boot() -> str:
    screen = CAPTURES / "b1_tui" / "screen_01_boot.txt"
    return screen.read_text(encoding="utf-8")


class TestDialogs:
    def test_the_recorded_trust_dialog_of_2_1_197_is_accepted_with_enter(self) -> None:
        answer = dialog_answer(_captured_boot())
        assert answer is not None
        assert answer.name == "trust"
        assert answer.keys == (ENTER,)

    def test_the_2_1_332_order_needs_one_down_first(self) -> None:
        words = screen_text(
            "\x1b[2GQuick\x1b[8Gsafety\x1b[15Gcheck:\r\n\x1b[2G\u276f\x1b[4GNo,\x1b[8Gexit\r\n"
            "\x1b[4GYes,\x1b[9GI\x1b[11Gtrust\x1b[17Gthis\x1b[22Gfolder\r\n"
        )
        answer = dialog_answer(words)
        assert answer is not None
        assert answer.keys == (DOWN, ENTER)

    def test_the_bypass_warning_is_accepted(self) -> None:
        words = (
            "WARNING: Claude Code running in Bypass Permissions mode \u276f No, exit  Yes, I accept"
        )
        answer = dialog_answer(words)
        assert answer is not None
        assert (answer.name, answer.keys) == ("bypass_permissions", (DOWN, ENTER))

    def test_a_half_drawn_dialog_or_none_is_not_answered(self) -> None:
        assert dialog_answer("Quick safety check: Is this") is None
        assert dialog_answer("\u276f Try edit main.py") is None


class TestMarkers:
    def test_auth_markers(self) -> None:
        assert auth_marker("⎿  Invalid API key · Fix external API key") == "Invalid API key"
        assert auth_marker("Not logged in · Please run /login") == "Please run /login"
        assert auth_marker("● Hello there") is None

    def test_weekly_banner(self) -> None:
        assert weekly_limit_used("You've used 37% of your weekly limit · resets Mon") == 37
        assert weekly_limit_used("Youve used 5% of your weekly limit") == 5
        assert (
            weekly_limit_used(
                "You\u2019ve used 80% of your weekly limit ... 91% of your weekly limit"
            )
            == 80
        )
        assert weekly_limit_used("weekly limit") is None

    def test_munged_cwd_matches_the_recorded_transcript_directory(self) -> None:
        meta = json.loads((CAPTURES / "b1_tui" / "meta.json").read_text())
        expected = Path(meta["session_files"][0]).parent.name
        assert munged_cwd(meta["cwd"]) == expected


class TestHooks:
    def test_every_recorded_hook_payload_parses(self) -> None:
        for path in sorted((CAPTURES / "b1_tui" / "hooks").glob("hook_*.jsonl")):
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                record = parse_hook_line(
                    json.dumps({"agentshim_hook": 7, "payload": json.loads(line)})
                )
                assert record is not None
                assert record.event == path.stem.removeprefix("hook_")
                assert record.hook == 7

    def test_malformed_lines_cost_that_line(self) -> None:
        for line in ("", "not json", "[]", '{"payload": 3}', '{"payload": {"no": "event"}}'):
            assert parse_hook_line(line) is None

    def test_the_generated_hooks_write_one_record_per_event(self, tmp_path: Path) -> None:
        settings_value = tui_settings(tmp_path, None, approval_wait=1.0, bypass=False)
        (tmp_path / EVENTS_FILE).write_text("")
        payload = '{"hook_event_name":"Stop","last_assistant_message":"50% done, \\"quoted\\""}\n'
        for _ in range(2):
            command = settings_value["hooks"]["Stop"][0]["hooks"][0]["command"]
            subprocess.run(["/bin/sh", "-c", command], input=payload.encode(), check=True)
        lines = (tmp_path / EVENTS_FILE).read_text().splitlines()
        records = [parse_hook_line(line) for line in lines]
        assert [r.event if r else None for r in records] == ["Stop", "Stop"]
        assert records[0] is not None
        assert records[0].field("last_assistant_message") == '50% done, "quoted"'

    def test_the_permission_hook_prints_the_answer_written_for_it(self, tmp_path: Path) -> None:
        settings_value = tui_settings(tmp_path, None, approval_wait=5.0, bypass=False)
        (tmp_path / EVENTS_FILE).write_text("")
        command = settings_value["hooks"]["PermissionRequest"][0]["hooks"][0]["command"]
        hook = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert hook.stdin is not None
        hook.stdin.write(b'{"hook_event_name":"PermissionRequest","tool_name":"Bash"}')
        hook.stdin.close()
        for _ in range(100):
            text = (tmp_path / EVENTS_FILE).read_text()
            if text.endswith("\n"):
                break
            subprocess.run(["sleep", "0.02"], check=True)
        record = parse_hook_line(text.splitlines()[0])
        assert record is not None
        assert record.hook == hook.pid
        request = ApprovalRequest("Bash", {"command": "ls"}, ToolKind.COMMAND)
        answer = json.dumps(hook_output(ApprovalDecision.deny("not that"), request))
        send_answer(tmp_path, hook.pid, answer)
        assert hook.stdout is not None
        printed = hook.stdout.read()
        assert hook.wait(5) == 0
        decision = json.loads(printed)["hookSpecificOutput"]["decision"]
        assert decision == {"behavior": "deny", "message": "not that"}

    def test_the_conversations_project_servers_are_approved_and_no_other(
        self, tmp_path: Path
    ) -> None:
        base = json.dumps({"enabledMcpjsonServers": ["mine"]})
        value = tui_settings(
            tmp_path, base, approval_wait=1.0, bypass=False, project_servers=("vault",)
        )
        assert value["enabledMcpjsonServers"] == ["mine", "vault"]
        plain = tui_settings(tmp_path, None, approval_wait=1.0, bypass=False)
        assert "enabledMcpjsonServers" not in plain

    def test_an_answer_for_a_hook_that_is_gone_is_an_os_error(self, tmp_path: Path) -> None:
        with pytest.raises(OSError):
            send_answer(tmp_path, 999999, "{}")  # no FIFO at all
        os.mkfifo(tmp_path / "answer-4242", 0o600)
        with pytest.raises(OSError):
            send_answer(tmp_path, 4242, "{}")  # a FIFO nobody holds open any more

    def test_the_provider_settings_are_kept_and_bypass_skips_its_warning(
        self, tmp_path: Path
    ) -> None:
        base = json.dumps(
            {
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
                "env": {"A": "1"},
            }
        )
        value = tui_settings(tmp_path, base, approval_wait=1.0, bypass=True)
        assert value["env"] == {"A": "1"}
        assert value["hooks"]["Stop"][0]["hooks"][0]["command"] == "true"
        assert len(value["hooks"]["Stop"]) == 2
        assert value["skipDangerousModePermissionPrompt"] is True
        assert "skipDangerousModePermissionPrompt" not in tui_settings(
            tmp_path, None, approval_wait=1.0, bypass=False
        )

    def test_an_allow_carries_the_input_to_run(self) -> None:
        request = ApprovalRequest("Bash", {"command": "ls"}, ToolKind.COMMAND)
        allowed = hook_output(ApprovalDecision.allow({"command": "ls -la"}), request)
        assert allowed["hookSpecificOutput"]["decision"] == {
            "behavior": "allow",
            "updatedInput": {"command": "ls -la"},
        }
