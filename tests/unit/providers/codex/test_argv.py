from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer
from agentshim.core.provider import ArgvContext
from agentshim.core.turn import TurnRequest
from agentshim.providers.codex import CodexProvider, parse_mcp_servers
from agentshim.providers.codex.provider import forwarded_env, header_variable, render_mcp_servers
from agentshim.testing import FakeExecutor, scripted_turn
from agentshim.tools import LocalToolServer
from agentshim.tools.host import ToolHost

BYPASS = "--dangerously-bypass-approvals-and-sandbox"


def ctx(**overrides: object) -> ArgvContext:
    fields: dict[str, object] = {"binary_path": "/usr/bin/codex", "env": {}}
    fields.update(overrides)
    return ArgvContext(**fields)  # type: ignore[arg-type]


class TestFlags:
    def test_a_bare_fresh_turn(self) -> None:
        assert CodexProvider().build_argv(ctx()) == [
            "/usr/bin/codex",
            "exec",
            BYPASS,
            "--skip-git-repo-check",
            "--json",
            "-",
        ]

    def test_every_flag_in_order(self) -> None:
        argv = CodexProvider().build_argv(
            ctx(
                model="gpt-5.1-codex",
                env={"PATH": "/opt/bin:/usr/bin", "HOME": "/home/u"},
                reasoning_effort="high",
                schema_path="/schemas/abc.json",
                mcp_argv=("--config", 'mcp_servers.docs.url="http://127.0.0.1:9/mcp"'),
                extra_args=("--profile", "ci"),
                cwd="/work",
            )
        )
        assert argv == [
            "/usr/bin/codex",
            "exec",
            BYPASS,
            "--skip-git-repo-check",
            "--json",
            "--model",
            "gpt-5.1-codex",
            "--config",
            'shell_environment_policy.set.PATH="/opt/bin:/usr/bin"',
            "--config",
            'model_reasoning_effort="high"',
            "--config",
            'mcp_servers.docs.url="http://127.0.0.1:9/mcp"',
            "--output-schema",
            "/schemas/abc.json",
            "--profile",
            "ci",
            "-",
        ]

    def test_resume_puts_the_stdin_marker_right_after_the_thread_id(self) -> None:
        argv = CodexProvider().build_argv(
            ctx(resume_session_id="01a22758-303e-7462-9a22-376e1126431f", model="m")
        )
        assert argv == [
            "/usr/bin/codex",
            "exec",
            "resume",
            "01a22758-303e-7462-9a22-376e1126431f",
            "-",
            BYPASS,
            "--skip-git-repo-check",
            "--json",
            "--model",
            "m",
        ]

    def test_a_path_with_quotes_and_control_characters_stays_one_toml_string(self) -> None:
        argv = CodexProvider().build_argv(ctx(env={"PATH": '/a"b:/c\\d\x01'}))
        assert 'shell_environment_policy.set.PATH="/a\\"b:/c\\\\d\\u0001"' in argv

    def test_a_value_toml_cannot_hold_is_a_capability_error(self) -> None:
        with pytest.raises(ProviderCapabilityError):
            CodexProvider().build_argv(ctx(reasoning_effort="\ud800"))


class TestPromptOnStdin:
    def test_the_prompt_is_on_stdin_and_nowhere_in_argv(self) -> None:
        prompt = "delete everything named PROMPT-MARKER-123"
        executor = FakeExecutor(scripted_turn("codex", text="ok"), binaries={"codex": "/bin/codex"})
        agent = CliAgent("codex", executor=executor, env={"PATH": "/usr/bin"})
        agent.run(TurnRequest(prompt=prompt, extra_args=("--ephemeral",)))
        request = executor.requests[0]
        assert request.stdin == prompt
        assert not any("PROMPT-MARKER-123" in arg for arg in request.argv)
        assert request.argv[-2:] == ("--ephemeral", "-")


class TestMcpFlags:
    def test_a_stdio_server_with_timeouts(self) -> None:
        server = StdioMcpServer(
            "files",
            "/usr/bin/mcp-files",
            args=("--root", "/srv"),
            env={"TOKEN": "t", "LEVEL": "2"},
            startup_timeout=20,
            tool_timeout=90.5,
        )
        assert render_mcp_servers([server]) == [
            "--config",
            'mcp_servers.files.command="/usr/bin/mcp-files"',
            "--config",
            'mcp_servers.files.args=["--root", "/srv"]',
            "--config",
            'mcp_servers.files.env_vars=["LEVEL", "TOKEN"]',
            "--config",
            "mcp_servers.files.required=true",
            "--config",
            "mcp_servers.files.startup_timeout_sec=20.0",
            "--config",
            "mcp_servers.files.tool_timeout_sec=90.5",
        ]
        assert forwarded_env([server]) == {"TOKEN": "t", "LEVEL": "2"}

    def test_env_values_and_headers_reach_the_cli_env_by_name_never_argv(self) -> None:
        servers: list[McpServer] = [
            StdioMcpServer("gh", "/usr/bin/gh-mcp", env={"GITHUB_TOKEN": "ghp-secret-1"}),
            HttpMcpServer("web", "https://h/mcp", headers={"Authorization": "Bearer tok-2"}),
        ]
        installation = CodexProvider().install_mcp(None, servers)
        variable = header_variable("web", "Authorization")
        assert dict(installation.env) == {"GITHUB_TOKEN": "ghp-secret-1", variable: "Bearer tok-2"}
        argv = " ".join(installation.argv)
        assert "ghp-secret-1" not in argv
        assert "tok-2" not in argv
        assert 'mcp_servers.gh.env_vars=["GITHUB_TOKEN"]' in installation.argv
        assert f'mcp_servers.web.env_http_headers={{Authorization = "{variable}"}}' in (
            installation.argv
        )
        assert parse_mcp_servers(installation.argv, installation.env) == {
            s.name: s for s in servers
        }

    def test_two_servers_wanting_one_variable_with_different_values_are_refused(self) -> None:
        servers = [
            StdioMcpServer("a", "/bin/a", env={"TOKEN": "one"}),
            StdioMcpServer("b", "/bin/b", env={"TOKEN": "two"}),
        ]
        with pytest.raises(ProviderCapabilityError, match="TOKEN"):
            CodexProvider().install_mcp(None, servers)

    def test_an_http_server(self) -> None:
        server = HttpMcpServer("docs", "https://mcp.example/x")
        assert render_mcp_servers([server]) == [
            "--config",
            'mcp_servers.docs.url="https://mcp.example/x"',
            "--config",
            "mcp_servers.docs.required=true",
        ]

    def test_codex_lets_the_tools_bridge_through_and_asks_for_other_servers(self) -> None:
        # The bridge asks the caller's approvals itself; Codex's own ask (an MCP elicitation)
        # would reject every call under a sandbox.
        with LocalToolServer(ToolHost(())) as serving:
            other = StdioMcpServer("files", "/usr/bin/mcp-files")
            argv = render_mcp_servers([serving.server, other])
        assert 'mcp_servers.agentshim.default_tools_approval_mode="approve"' in argv
        assert not any(a.startswith("mcp_servers.files.default_tools") for a in argv)

    def test_similar_names_are_distinct_servers(self) -> None:
        servers = [
            StdioMcpServer(name, f"/bin/{i}") for i, name in enumerate(["my.srv", "a-b", "a_b"])
        ]
        argv = render_mcp_servers(servers)
        assert "--config" in argv
        assert 'mcp_servers."my.srv".command="/bin/0"' in argv
        assert 'mcp_servers.a-b.command="/bin/1"' in argv
        assert 'mcp_servers.a_b.command="/bin/2"' in argv
        assert {name: s.command for name, s in parse_mcp_servers(argv).items()} == {
            "my.srv": "/bin/0",
            "a-b": "/bin/1",
            "a_b": "/bin/2",
        }

    @pytest.mark.parametrize(
        ("servers", "match"),
        [
            ([HttpMcpServer("s", "http://h/", transport="sse")], "streamable HTTP"),
            ([StdioMcpServer("s", "a"), StdioMcpServer("s", "b")], "both named"),
        ],
    )
    def test_what_codex_cannot_take_as_flags_is_refused(
        self, servers: list[McpServer], match: str
    ) -> None:
        with pytest.raises(ProviderCapabilityError, match=match):
            CodexProvider().install_mcp(None, servers)

    def test_no_servers_install_nothing(self) -> None:
        installation = CodexProvider().install_mcp(None, [])
        assert tuple(installation.argv) == ()
        assert installation.restore() is None

    def test_install_mcp_hands_the_flags_to_argv(self) -> None:
        server = StdioMcpServer("files", "mcp-files")
        installation = CodexProvider().install_mcp(None, [server])
        argv = CodexProvider().build_argv(ctx(mcp_argv=tuple(installation.argv)))
        assert parse_mcp_servers(argv) == {"files": server}

    def test_parse_ignores_other_overrides_and_incomplete_entries(self) -> None:
        argv = [
            "-c",
            "model=o3",
            "--config",
            "mcp_servers.off.enabled=false",
            "--config=mcp_servers.s.command=plain-word",
            "--config",
            "mcp_servers.s.env.KEY='v'",
        ]
        assert parse_mcp_servers(argv) == {
            "s": StdioMcpServer("s", "plain-word", env={"KEY": "v"}),
        }


names = st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True)
texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
)
timeouts = st.none() | st.floats(min_value=0.001, max_value=1e6, allow_nan=False)


@st.composite
def servers(draw: st.DrawFn) -> list[McpServer]:
    result: list[McpServer] = []
    for name in draw(st.lists(names, unique=True, max_size=4)):
        startup, tool = draw(timeouts), draw(timeouts)
        if draw(st.booleans()):
            result.append(
                StdioMcpServer(
                    name,
                    draw(st.from_regex(r"/[a-z]{1,8}", fullmatch=True)),
                    args=tuple(draw(st.lists(texts, max_size=3))),
                    env=draw(
                        st.dictionaries(
                            st.from_regex(r"[A-Z_]{1,6}", fullmatch=True), texts, max_size=3
                        )
                    ),
                    startup_timeout=startup,
                    tool_timeout=tool,
                )
            )
        else:
            result.append(
                HttpMcpServer(
                    name,
                    draw(
                        st.from_regex(
                            r"https?://[a-z]{1,8}(:[0-9]{2,4})?/[a-z]{0,6}", fullmatch=True
                        )
                    ),
                    headers=draw(
                        st.dictionaries(
                            st.sampled_from(["Authorization", "X-Api-Key"]),
                            st.from_regex(r"[A-Za-z0-9 ]{1,10}", fullmatch=True),
                            max_size=2,
                        )
                    ),
                    startup_timeout=startup,
                    tool_timeout=tool,
                )
            )
    return result


class TestMcpRoundTrip:
    @given(servers())
    def test_parse_inverts_render(self, specs: list[McpServer]) -> None:
        try:
            installation = CodexProvider().install_mcp(None, specs)
        except ProviderCapabilityError:
            assume(False)
            return
        parsed = parse_mcp_servers(installation.argv, installation.env)
        assert parsed == {s.name: s for s in specs}
