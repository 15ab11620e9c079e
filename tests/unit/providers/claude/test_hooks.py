from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentshim.core.errors import InvalidRequestError
from agentshim.providers.claude import ClaudeHook, SandboxConfig, build_settings
from agentshim.providers.claude.hooks import CONFINE_READS_SCRIPT, confine_reads
from agentshim.providers.claude.sandbox import confine_reads_hook


def run_hook(
    roots: list[str], payload: Any, *, raw: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the hook as Claude Code would: the rendered command line, the event on stdin."""
    if roots:
        argv = shlex.split(confine_reads_hook(roots)["hooks"][0]["command"])
    else:
        argv = [sys.executable, str(CONFINE_READS_SCRIPT)]
    stdin = raw if raw is not None else json.dumps(payload)
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=30, check=False
    )


def tool(name: str, cwd: Path, **tool_input: Any) -> dict[str, Any]:
    return {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "cwd": str(cwd),
        "tool_name": name,
        "tool_input": tool_input,
    }


def assert_denied(done: subprocess.CompletedProcess[str], reason: str = "") -> None:
    assert done.returncode == 2
    decision = json.loads(done.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert decision["hookEventName"] == "PreToolUse"
    assert reason in decision["permissionDecisionReason"]
    assert reason in done.stderr


def assert_allowed(done: subprocess.CompletedProcess[str]) -> None:
    assert (done.returncode, done.stdout) == (0, "")


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    inside = tmp_path / "work"
    outside = tmp_path / "secret"
    inside.mkdir()
    outside.mkdir()
    (inside / "a.txt").write_text("a")
    (outside / "key").write_text("k")
    os.symlink(outside / "key", inside / "link")
    return {"inside": inside, "outside": outside}


class TestConfineReads:
    def test_paths_inside_a_root_are_let_through(self, tree: dict[str, Path]) -> None:
        inside = tree["inside"]
        for payload in (
            tool("Read", inside, file_path=str(inside / "a.txt")),
            tool("Write", inside, file_path=str(inside / "new" / "b.txt"), content="x"),
            tool("Read", inside, file_path="a.txt"),
            tool("Glob", inside, pattern="**/*.py"),
            tool("Grep", inside, pattern="x", path=str(inside)),
            tool("NotebookEdit", inside, notebook_path=str(inside / "n.ipynb")),
        ):
            assert_allowed(run_hook([str(inside)], payload))

    def test_paths_outside_are_denied(self, tree: dict[str, Path]) -> None:
        inside, outside = tree["inside"], tree["outside"]
        for payload in (
            tool("Read", inside, file_path=str(outside / "key")),
            tool("Edit", inside, file_path="../secret/key", old_string="a", new_string="b"),
            tool("Grep", inside, pattern="k", path=str(outside)),
            tool("Glob", inside, pattern="../secret/*"),
            tool("Glob", inside, pattern=str(outside) + "/**"),
        ):
            assert_denied(run_hook([str(inside)], payload), "may not access")

    def test_a_symlink_out_of_the_root_is_denied(self, tree: dict[str, Path]) -> None:
        inside = tree["inside"]
        payload = tool("Read", inside, file_path=str(inside / "link"))
        assert_denied(run_hook([str(inside)], payload), "may not access")

    def test_a_sibling_with_the_root_as_prefix_is_denied(self, tmp_path: Path) -> None:
        root = tmp_path / "work"
        root.mkdir()
        payload = tool("Read", root, file_path=str(tmp_path / "workshop" / "x"))
        assert_denied(run_hook([str(root)], payload), "may not access")

    @pytest.mark.parametrize(
        ("raw", "reason"),
        [
            ("not json", "not JSON"),
            ("[1, 2]", "not an object"),
            ("", "not JSON"),
        ],
    )
    def test_unparseable_input_fails_closed(
        self, tree: dict[str, Path], raw: str, reason: str
    ) -> None:
        assert_denied(run_hook([str(tree["inside"])], None, raw=raw), reason)

    @pytest.mark.parametrize(
        "payload",
        [
            {"tool_name": "Read", "tool_input": {}},
            {"tool_name": "Read", "tool_input": "x"},
            {"tool_name": "Glob", "tool_input": {"pattern": "*"}},
            {"tool_name": "Read", "tool_input": {"file_path": "relative.txt"}},
            {"tool_name": "Mystery", "tool_input": {"anything": 1}},
        ],
    )
    def test_input_without_a_usable_path_fails_closed(
        self, tree: dict[str, Path], payload: Any
    ) -> None:
        assert_denied(run_hook([str(tree["inside"])], payload), "agentshim read confinement")

    def test_no_roots_fails_closed(self, tree: dict[str, Path]) -> None:
        inside = tree["inside"]
        assert_denied(
            run_hook([], tool("Read", inside, file_path=str(inside / "a.txt"))), "no allowed"
        )

    def test_an_error_inside_the_hook_fails_closed(self, tree: dict[str, Path]) -> None:
        class BrokenStdin(io.StringIO):
            def read(self, size: int | None = -1) -> str:
                raise OSError("stdin went away")

        out, err = io.StringIO(), io.StringIO()
        code = confine_reads.main([str(tree["inside"])], BrokenStdin(), out, err)
        assert code == confine_reads.DENY_EXIT_CODE == 2
        assert json.loads(out.getvalue())["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "stdin went away" in err.getvalue()

    def test_hook_needs_a_root(self) -> None:
        with pytest.raises(InvalidRequestError, match="at least one"):
            confine_reads_hook([])


class TestClaudeHook:
    @pytest.mark.parametrize("event", ["preToolUse", "Pre Tool", "", "PreToolUse!"])
    def test_event_must_be_pascal_case(self, event: str) -> None:
        with pytest.raises(ValueError, match="PascalCase"):
            ClaudeHook(event, ("/bin/true",))

    @pytest.mark.parametrize(
        "command", ["/bin/echo hi", (), ("/bin/echo", "a\0b"), ("/bin/echo", "\udc80")]
    )
    def test_command_must_be_a_clean_argv(self, command: Any) -> None:
        with pytest.raises(InvalidRequestError, match="ClaudeHook command") as caught:
            ClaudeHook("Stop", command)
        assert caught.value.field == "ClaudeHook.command"

    @pytest.mark.parametrize("timeout", [0, -1, float("nan"), True])
    def test_timeout_must_be_positive(self, timeout: Any) -> None:
        with pytest.raises(InvalidRequestError, match="timeout") as caught:
            ClaudeHook("Stop", ("/bin/true",), timeout=timeout)
        assert caught.value.field == "ClaudeHook.timeout"

    def test_entry_quotes_the_command(self) -> None:
        hook = ClaudeHook(
            "PostToolUse", ["/opt/my tools/log", "$HOME"], matcher="Edit|Write", timeout=2.5
        )
        assert hook.entry() == {
            "matcher": "Edit|Write",
            "hooks": [
                {"type": "command", "command": "'/opt/my tools/log' '$HOME'", "timeout": 2.5}
            ],
        }


class TestBuildSettings:
    def test_nothing_to_configure_is_empty(self) -> None:
        assert build_settings() == {}

    def test_sandbox_without_confinement_has_no_hooks(self) -> None:
        assert set(build_settings(SandboxConfig())) == {"sandbox"}

    def test_callers_hooks_follow_ours_on_the_same_event(self, tmp_path: Path) -> None:
        caller = ClaudeHook("PreToolUse", ("/bin/check",))
        settings = build_settings(
            SandboxConfig(confine_native_reads_to=[str(tmp_path)]), [caller], python="/py"
        )
        first, second = settings["hooks"]["PreToolUse"]
        assert shlex.split(first["hooks"][0]["command"])[0] == "/py"
        assert second == caller.entry()
