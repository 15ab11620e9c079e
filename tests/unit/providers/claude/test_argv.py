from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import InvalidRequestError
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.providers.claude import ClaudeHook, ClaudeProvider, SandboxConfig, scripted_lines
from agentshim.providers.claude.hooks import CONFINE_READS_SCRIPT
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn
from tests.unit.providers.fixtures import argv_builder

BASE = ["/usr/bin/claude", "-p", "--output-format", "stream-json", "--verbose"]
SKIP = "--dangerously-skip-permissions"


argv = argv_builder(ClaudeProvider, "/usr/bin/claude")


class TestFlags:
    def test_default_turn(self) -> None:
        assert argv() == [*BASE, SKIP]

    def test_resume_model_effort_schema_in_order(self) -> None:
        schema = '{"type":"object","properties":{"a":{"type":"string"}}}'
        assert argv(
            resume_session_id="0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966",
            model="claude-sonnet-4-5",
            reasoning_effort="high",
            schema_inline=schema,
        ) == [
            *BASE,
            "--resume",
            "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966",
            "--model",
            "claude-sonnet-4-5",
            "--effort",
            "high",
            "--json-schema",
            schema,
            SKIP,
        ]

    def test_permission_mode_replaces_the_bypass_flag(self) -> None:
        provider = ClaudeProvider(permission_mode="acceptEdits")
        assert argv(provider) == [*BASE, "--permission-mode", "acceptEdits"]

    @pytest.mark.parametrize("mode", ["auto", "manual", "default", "dontAsk", "plan"])
    def test_every_mode_of_either_checked_version_is_passed(self, mode: str) -> None:
        # 2.1.332 adds auto and manual; its help drops default, which it still accepts.
        assert argv(ClaudeProvider(permission_mode=mode)) == [*BASE, "--permission-mode", mode]

    def test_unknown_permission_mode_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="permission mode") as caught:
            ClaudeProvider(permission_mode="yolo")
        assert caught.value.field == "ClaudeProvider.permission_mode"

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"hooks": ["not a hook"]}, "ClaudeProvider.hooks"),
            ({"hooks": ClaudeHook("Stop", ("/bin/true",))}, "ClaudeProvider.hooks"),
            ({"sandbox": {"allow_write": ["/w"]}}, "ClaudeProvider.sandbox"),
        ],
    )
    def test_a_hook_or_sandbox_of_the_wrong_type_is_refused(
        self, kwargs: dict[str, object], field: str
    ) -> None:
        with pytest.raises(InvalidRequestError) as caught:
            ClaudeProvider(**kwargs)  # type: ignore[arg-type]
        assert caught.value.field == field

    def test_mcp_argv_then_extra_args_come_last(self) -> None:
        assert argv(mcp_argv=("--mcp-x",), extra_args=("--foo", "bar"), model="m") == [
            *BASE,
            "--model",
            "m",
            SKIP,
            "--mcp-x",
            "--foo",
            "bar",
        ]

    def test_schema_path_and_env_and_cwd_are_not_rendered(self) -> None:
        assert argv(schema_path="/tmp/s.json", env={"A": "1"}, cwd="/work") == [*BASE, SKIP]


class TestSettings:
    def test_no_settings_flag_without_sandbox_or_hooks(self) -> None:
        assert "--settings" not in argv()
        assert ClaudeProvider().settings_json is None

    def test_sandbox_block(self) -> None:
        provider = ClaudeProvider(
            sandbox=SandboxConfig(
                allow_write=["/work"],
                deny_read=["~/.ssh"],
                allowed_domains=["pypi.org"],
                excluded_commands=["docker"],
            )
        )
        rendered = argv(provider, extra_args=("--x",))
        at = rendered.index("--settings")
        assert rendered[:at] == [*BASE, SKIP]
        assert rendered[at + 2 :] == ["--x"]
        assert json.loads(rendered[at + 1]) == {
            "sandbox": {
                "enabled": True,
                "failIfUnavailable": True,
                "autoAllowBashIfSandboxed": True,
                "allowUnsandboxedCommands": False,
                "excludedCommands": ["docker"],
                "filesystem": {"allowWrite": ["/work"], "denyRead": ["~/.ssh"]},
                "network": {"allowedDomains": ["pypi.org"]},
            }
        }

    def test_own_hook_first_then_callers_in_one_settings_object(self, tmp_path: Path) -> None:
        caller = ClaudeHook("PreToolUse", ("/bin/audit", "--strict"), matcher="Bash", timeout=5)
        stop = ClaudeHook("Stop", ["/bin/notify", "done now"])
        provider = ClaudeProvider(
            sandbox=SandboxConfig(confine_native_reads_to=[str(tmp_path)]), hooks=[caller, stop]
        )
        rendered = argv(provider)
        assert rendered.count("--settings") == 1
        settings = json.loads(rendered[rendered.index("--settings") + 1])
        pre = settings["hooks"]["PreToolUse"]
        assert [entry["matcher"] for entry in pre] == [
            "Read|Glob|Grep|Edit|MultiEdit|Write|NotebookEdit",
            "Bash",
        ]
        ours = shlex.split(pre[0]["hooks"][0]["command"])
        assert ours == [sys.executable, str(CONFINE_READS_SCRIPT), str(tmp_path.resolve())]
        assert pre[1]["hooks"] == [
            {"type": "command", "command": "/bin/audit --strict", "timeout": 5}
        ]
        assert settings["hooks"]["Stop"] == [
            {"hooks": [{"type": "command", "command": "/bin/notify 'done now'"}]}
        ]

    def test_hooks_alone_make_a_settings_object(self) -> None:
        provider = ClaudeProvider(hooks=[ClaudeHook("Stop", ("/bin/true",))])
        rendered = argv(provider)
        assert json.loads(rendered[rendered.index("--settings") + 1]) == {
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/true"}]}]}
        }


class TestThroughTheAgent:
    def test_prompt_goes_on_stdin_never_into_argv(self, tmp_path: Path) -> None:
        prompt = "Refactor module_xyz_unique_prompt_marker please"
        run = scripted_lines(ScriptedTurn(structured_output={"a": "x"}))
        executor = FakeExecutor(FakeRun(run.stdout), binaries={"claude": "/usr/bin/claude"})
        agent = CliAgent(
            "claude", executor=executor, env={"PATH": "/usr/bin"}, model="claude-opus-4-8"
        )
        schema = OutputSchema({"type": "object", "properties": {"a": {"type": "string"}}}, tmp_path)
        request_ = TurnRequest(
            prompt, output_schema=schema, reasoning_effort="low", extra_args=("--z",)
        )
        result = agent.run(request_)
        assert result.structured_output == {"a": "x"}
        (request,) = executor.requests
        assert request.stdin == prompt
        assert not any(prompt in arg or "module_xyz" in arg for arg in request.argv)
        assert list(request.argv) == [
            *BASE,
            "--model",
            "claude-opus-4-8",
            "--effort",
            "low",
            "--json-schema",
            '{"type":"object","properties":{"a":{"type":"string"}}}',
            SKIP,
            "--z",
        ]

    def test_resumed_session_passes_resume(self) -> None:
        run = scripted_lines(
            ScriptedTurn(text="again", session_id="0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966")
        )
        executor = FakeExecutor(FakeRun(run.stdout), binaries={"claude": "/usr/bin/claude"})
        agent = CliAgent("claude", executor=executor, env={"PATH": "/usr/bin"})
        session = agent.start_session(session_id="0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966")
        session.turn("continue")
        assert list(executor.requests[0].argv) == [
            *BASE,
            "--resume",
            "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966",
            SKIP,
        ]
