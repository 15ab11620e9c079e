from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer
from agentshim.core.turn import TurnRequest
from agentshim.providers.copilot import CopilotProvider, parse_mcp_servers, scripted_lines
from agentshim.providers.copilot.provider import MCP_FLAG, render_mcp_config
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn
from tests.unit.providers.fixtures import argv_builder, fixture_dir, load_capture

BINARY = "/usr/bin/copilot"
BASE = [
    BINARY,
    "--output-format",
    "json",
    "--allow-all-tools",
    "--allow-all-paths",
    "--allow-all-urls",
    "--no-auto-update",
]
SID = "d8d67461-6201-4285-8233-9e4dda0071e1"


argv = argv_builder(CopilotProvider, BINARY)


class TestArgv:
    def test_fresh_turn(self) -> None:
        assert argv() == BASE

    def test_every_option_in_order(self) -> None:
        assert argv(
            resume_session_id=SID,
            model="gpt-5.4",
            mcp_argv=(MCP_FLAG, '{"mcpServers":{}}'),
            extra_args=("--log-level", "none"),
        ) == [
            *BASE,
            f"--resume={SID}",
            "--model",
            "gpt-5.4",
            MCP_FLAG,
            '{"mcpServers":{}}',
            "--log-level",
            "none",
        ]

    def test_permission_and_update_flags_are_options(self) -> None:
        provider = CopilotProvider(allow_all_paths=False, allow_all_urls=False, auto_update=True)
        assert argv(provider) == [BINARY, "--output-format", "json", "--allow-all-tools"]

    def test_every_flag_exists_in_the_recorded_help_of_1_0_102(self) -> None:
        help_text = (fixture_dir("copilot") / "help.txt").read_text(encoding="utf-8")
        assert "1.0.102" in (fixture_dir("copilot") / "version.txt").read_text(encoding="utf-8")
        built = argv(resume_session_id=SID, model="m", mcp_argv=(MCP_FLAG, "{}"))
        flags = {a.split("=", 1)[0] for a in built if a.startswith("--")}
        for flag in flags:
            assert re.search(rf"(^|[\s,]){re.escape(flag)}\b", help_text, re.MULTILINE), flag


class TestPromptOnStdin:
    def test_prompt_goes_to_stdin_never_argv(self) -> None:
        prompt = "PROMPT-7f3a: refactor the parser --model evil"
        executor = FakeExecutor(FakeRun(*_scripted()), binaries={"copilot": BINARY})
        agent = CliAgent("copilot", executor=executor, env={"PATH": "/usr/bin"})
        agent.run(TurnRequest(prompt, extra_args=("--log-level", "none")))
        (request,) = executor.requests
        assert request.stdin == prompt
        assert not any("PROMPT-7f3a" in arg for arg in request.argv)
        assert "-p" not in request.argv
        assert "--prompt" not in request.argv
        assert list(request.argv) == [*BASE, "--log-level", "none"]

    def test_recorded_cli_reads_the_prompt_from_stdin(self) -> None:
        capture = load_capture("copilot", "stdin_prompt_connection_refused")
        assert "-p" not in capture.argv
        echo = next(
            json.loads(line)
            for line in capture.stdout_lines
            if json.loads(line)["type"] == "user.message"
        )
        assert echo["data"]["content"].strip() == "PROMPT FROM STDIN"


def _scripted() -> tuple[tuple[str, ...], tuple[str, ...], int]:
    run = scripted_lines(ScriptedTurn(text="ok", session_id="s-1"))
    return run.stdout, run.stderr, run.returncode


NAMES = st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True)
TEXT = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=12)
STDIO = st.builds(
    StdioMcpServer,
    name=NAMES,
    command=st.sampled_from(["python3", "/usr/bin/node", "npx"]),
    args=st.lists(TEXT, max_size=3),
    env=st.dictionaries(st.from_regex(r"[A-Z_]{1,8}", fullmatch=True), TEXT, max_size=2),
)
HTTP = st.builds(
    HttpMcpServer,
    name=NAMES,
    url=st.sampled_from(["http://127.0.0.1:8080/mcp", "https://example.com/sse"]),
    transport=st.sampled_from(["http", "sse"]),
    headers=st.dictionaries(
        st.sampled_from(["Authorization", "X-Key"]),
        st.from_regex(r"[a-z0-9 ]{0,8}", fullmatch=True),
        max_size=2,
    ),
)


class TestMcpFlags:
    def test_stdio_and_http_render_as_copilots_config(self) -> None:
        servers: list[McpServer] = [
            StdioMcpServer("s1", "python3", ("-m", "srv")),
            HttpMcpServer("s2", "http://127.0.0.1:5/sse", transport="sse"),
        ]
        installation = CopilotProvider().install_mcp(None, servers)
        flag, value = installation.argv
        assert flag == MCP_FLAG
        assert json.loads(value) == {
            "mcpServers": {
                "s1": {
                    "type": "local",
                    "command": "python3",
                    "args": ["-m", "srv"],
                    "tools": ["*"],
                },
                "s2": {"type": "sse", "url": "http://127.0.0.1:5/sse", "tools": ["*"]},
            }
        }
        assert installation.restore() is None

    def test_servers_with_secrets_go_in_a_private_file_removed_after_the_turn(self) -> None:
        servers: list[McpServer] = [
            StdioMcpServer("s1", "python3", ("-m", "srv"), {"K": "env-secret"}),
            HttpMcpServer("h1", "http://127.0.0.1:5/mcp", headers={"Authorization": "Bearer hx"}),
        ]
        installation = CopilotProvider().install_mcp(None, servers)
        flag, value = installation.argv
        assert flag == MCP_FLAG
        assert value.startswith("@")
        assert "env-secret" not in " ".join(installation.argv)
        assert "Bearer hx" not in " ".join(installation.argv)
        path = Path(value[1:])
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert json.loads(path.read_text())["mcpServers"] == {
            "s1": {
                "type": "local",
                "command": "python3",
                "args": ["-m", "srv"],
                "tools": ["*"],
                "env": {"K": "env-secret"},
            },
            "h1": {
                "type": "http",
                "url": "http://127.0.0.1:5/mcp",
                "tools": ["*"],
                "headers": {"Authorization": "Bearer hx"},
            },
        }
        assert parse_mcp_servers([BINARY, *installation.argv]) == {s.name: s for s in servers}
        assert installation.restore() is None
        assert not path.parent.exists()
        assert installation.restore() is None

    def test_no_servers_adds_nothing(self) -> None:
        assert tuple(CopilotProvider().install_mcp(None, []).argv) == ()

    @pytest.mark.parametrize("timeouts", [{"startup_timeout": 5.0}, {"tool_timeout": 5.0}])
    def test_timeouts_are_refused(self, timeouts: dict[str, float]) -> None:
        with pytest.raises(ProviderCapabilityError, match="timeout"):
            CopilotProvider().install_mcp(None, [StdioMcpServer("s", "python3", **timeouts)])  # type: ignore[arg-type]

    def test_duplicate_names_are_refused(self) -> None:
        servers = [StdioMcpServer("s", "a"), HttpMcpServer("s", "http://h/mcp")]
        with pytest.raises(ProviderCapabilityError, match="named 's'"):
            CopilotProvider().install_mcp(None, servers)

    @settings(max_examples=100)
    @given(st.lists(STDIO | HTTP, max_size=4, unique_by=lambda s: s.name))
    def test_parse_inverts_render(self, servers: list[McpServer]) -> None:
        built = argv(mcp_argv=(MCP_FLAG, render_mcp_config(servers)) if servers else ())
        assert parse_mcp_servers(built) == {s.name: s for s in servers}

    def test_parse_reads_every_flag_form_and_skips_what_it_cannot(self) -> None:
        one = render_mcp_config([StdioMcpServer("a", "x")])
        two = render_mcp_config([HttpMcpServer("b", "http://h/mcp")])
        parsed = parse_mcp_servers(
            [
                BINARY,
                MCP_FLAG,
                one,
                f"{MCP_FLAG}={two}",
                MCP_FLAG,
                "@mcp.json",
                MCP_FLAG,
                "not json",
                MCP_FLAG,
                "[1]",
            ]
        )
        assert parsed == {"a": StdioMcpServer("a", "x"), "b": HttpMcpServer("b", "http://h/mcp")}
